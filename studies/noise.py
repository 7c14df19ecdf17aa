"""Noise study: where does the solo arm's window-to-window variance come from?

Runs one launch-bound inference loop (the built-in `infer` MLP) in timed windows under several
settings and prints one JSON line per window: throughput, GPU-busy fraction (CUDA-event GPU time ÷
window), CPU steal and the core's frequency over the window, involuntary context switches. Then a
summary line per setting (CV of throughput). Usage: python3 studies/noise.py [--windows 30] [--window-ms 250]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def proc_stat_cpu():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    vals = list(map(int, parts))
    return sum(vals), (vals[7] if len(vals) > 7 else 0)  # total jiffies, steal


def core_mhz(core):
    try:
        with open(f"/sys/devices/system/cpu/cpu{core}/cpufreq/scaling_cur_freq") as f:
            return int(f.read()) / 1000
    except OSError:
        try:
            with open("/proc/cpuinfo") as f:
                mhz = [float(l.split(":")[1]) for l in f if l.startswith("cpu MHz")]
            return mhz[core] if core < len(mhz) else None
        except OSError:
            return None


def ctx_switches():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("nonvoluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def make_infer(graph, batch=8, hidden=1024):
    torch.set_grad_enabled(False)
    h = hidden
    model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(), torch.nn.Linear(4 * h, h)).cuda().half().eval()
    x = torch.randn(batch, h, device="cuda").half()
    if not graph:
        return lambda: model(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)
    return g.replay


def window(step, ms, sync_every):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    tot0, steal0 = proc_stat_cpu()
    cs0 = ctx_switches()
    core = os.sched_getaffinity(0)
    t0 = time.monotonic_ns()
    deadline = t0 + ms * 1e6
    start.record()
    n = 0
    while True:
        for _ in range(sync_every):
            step()
        n += sync_every
        torch.cuda.current_stream().synchronize()
        if time.monotonic_ns() >= deadline:
            break
    end.record()
    end.synchronize()
    t1 = time.monotonic_ns()
    tot1, steal1 = proc_stat_cpu()
    wall_ms = (t1 - t0) / 1e6
    cpu = os.sched_getaffinity(0)
    return {
        "itPerS": n / (wall_ms / 1000),
        "stealPct": 100 * (steal1 - steal0) / max(1, tot1 - tot0),
        "mhz": core_mhz(min(cpu)) if len(cpu) == 1 else None,
        "ctxSwitches": ctx_switches() - cs0,
        "wallMs": wall_ms,
    }


def run_setting(name, graph, pin, windows, ms, sync_every):
    if pin is not None:
        os.sched_setaffinity(0, {pin})
    else:
        os.sched_setaffinity(0, set(range(os.cpu_count())))
    step = make_infer(graph)
    for _ in range(200):
        step()
    torch.cuda.synchronize()
    series = []
    for i in range(windows):
        w = window(step, ms, sync_every)
        w.update(setting=name, window=i)
        print(json.dumps(w), flush=True)
        series.append(w["itPerS"])
    # GPU-busy fraction: time a burst of N iterations with no host sync between them.
    n = 2000
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.monotonic_ns()
    s.record()
    for _ in range(n):
        step()
    e.record()
    e.synchronize()
    wall = (time.monotonic_ns() - t0) / 1e6
    summary = {
        "summary": name,
        "meanItPerS": statistics.mean(series),
        "cv": statistics.stdev(series) / statistics.mean(series),
        "min": min(series),
        "max": max(series),
        "lag1": statistics.correlation(series[:-1], series[1:]) if len(series) > 3 else None,
        "burstGpuBusy": s.elapsed_time(e) / wall,
    }
    print(json.dumps(summary), flush=True)
    return summary


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--window-ms", type=float, default=250)
    p.add_argument("--graph-cores", default="", help="comma-separated cores: also run the graph loop pinned to each")
    a = p.parse_args()
    print(json.dumps({"host": {"cpus": os.cpu_count(), "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}}), flush=True)
    settings = [
        ("eager", False, None, 1),
        ("eager-pinned", False, 3, 1),
        ("eager-pinned-sync8", False, 3, 8),
        ("graph", True, None, 1),
        ("graph-pinned", True, 3, 1),
    ]
    if a.graph_cores:
        settings = [("graph", True, None, 1)] + [(f"graph-core{c}", True, int(c), 1) for c in a.graph_cores.split(",")]
    for name, graph, pin, sync_every in settings:
        run_setting(name, graph, pin, a.windows, a.window_ms, sync_every)


if __name__ == "__main__":
    sys.exit(main())
