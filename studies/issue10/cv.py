"""Round-to-round CVs of the runs behind issue 10's noise table (trials.csv files in this folder).

For each contention comparison: CV of the per-round slowdown and of the solo throughput; for the
streams pipeline: CV of the per-round pinned 2-stream speedup and of each arm's GPU time.
Usage: python3 studies/issue10/cv.py [trials.csv …]
"""
import csv
import glob
import os
import statistics
import sys


def cv(xs):
    return statistics.pstdev(xs) / statistics.mean(xs) * 100


def summary(path):
    trials = [t for t in csv.DictReader(open(path)) if t["status"] == "ok"]
    out = []
    for mode, workload in sorted({(t["mode"], t["workload"]) for t in trials if t["mode"] != "streams"}):
        rounds = {}
        for t in trials:
            if (t["mode"], t["workload"]) == (mode, workload):
                rounds.setdefault(int(t["round"]), {}).setdefault(t["arm"], []).append(float(t["throughputPerS"]))
        full = [a for a in rounds.values() if {"solo-c0", "solo-c1", "contended"} <= a.keys()]
        ratios = [(a["solo-c0"][0] / a["contended"][0] + a["solo-c1"][0] / a["contended"][1]) / 2 for a in full]
        solo = [x for a in full for x in a["solo-c0"] + a["solo-c1"]]
        out.append(f"{mode}/{workload}: {len(full)} rounds, slowdown CV {cv(ratios):.2f}%, solo CV {cv(solo):.2f}%")
    arms = {}
    for t in trials:
        if t["workload"] == "pipeline" and t["arm"].startswith("pinned"):
            arms.setdefault(t["arm"], {})[int(t["round"])] = float(t["gpuMs"])
    if arms:
        s1, s2 = arms["pinned-s1"], arms["pinned-s2"]
        speedup = [s1[r] / s2[r] for r in s1 if r in s2]
        out.append(f"streams/pipeline: {len(speedup)} rounds, pinned speedup CV {cv(speedup):.2f}%, GPU time CV s1 {cv(list(s1.values())):.2f}% s2 {cv(list(s2.values())):.2f}%")
    return out


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sys.argv[1:] or sorted(glob.glob(os.path.join(here, "*.trials.csv"))):
        name = os.path.basename(path)
        print(os.path.basename(os.path.dirname(os.path.abspath(path))) if name == "trials.csv" else name.replace(".trials.csv", ""))
        for line in summary(path):
            print("  " + line)
