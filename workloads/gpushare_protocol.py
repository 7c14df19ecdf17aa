"""gpushare workload protocol, version 2 (see the README's "Workload protocol").

A workload prints JSON lines on stdout and nothing else; it reads JSON commands on stdin.
Times are CLOCK_MONOTONIC microseconds (time.monotonic_ns), comparable across processes.
Use it as:  serve("name", build, args)  where build() -> step(i, lane, variant) enqueues iteration i.
"""
import argparse
import json
import os
import sys
import time

PROTOCOL = 2  # 2 adds open-loop load ("load" in a run command); the harness still accepts 1
LATENCY_CAP = 20000  # latencies kept per trial; a result line stays well under the harness's 1 MiB limit
FIXED_WORK_REPEATS = 3  # a fixed-work trial runs its work this many times and reports the median

# Only protocol lines may reach stdout: keep a private handle on it and send fd 1 (library prints,
# C-level output) to stderr, which the harness keeps.
_out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def now_us():
    return time.monotonic_ns() / 1000.0


def emit(event, **fields):
    _out.write(json.dumps({"event": event, **fields}, allow_nan=False) + "\n")
    _out.flush()


def flag(text):
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--iterations", type=int, default=100, help="iterations of a fixed-work trial")
    p.add_argument("--sync-every", type=int, default=1, help="iterations between synchronizations in a window")
    p.add_argument("--warmup-ms", type=float, default=500, help="warm-up before ready")
    return p


def graph_replay(torch, fn, warmups=3):
    """Captures fn() in a CUDA graph and returns its replay. The warm-up runs (cuBLAS handles,
    allocator pools) happen on a side stream first, outside the capture, as PyTorch requires."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def forward_step(torch, forward, graph):
    """A step(i, lane, variant) that runs forward() eagerly, or replays one captured CUDA graph of
    it per stream lane (captured on first use)."""
    replays = {}

    def step(i, lane, variant):
        if not graph:
            forward()
            return
        if lane not in replays:
            replays[lane] = graph_replay(torch, forward)
        replays[lane]()

    return step


def _wait_until(t_us):
    while True:
        left = t_us - now_us()
        if left <= 0:
            return
        if left > 2000:
            time.sleep((left - 1000) / 1e6)  # sleep most of it, spin the last millisecond


def _enqueue(torch, step, lanes, variant, first, n):
    """Enqueues iterations first..first+n-1, round-robin over the lanes (streams)."""
    for i in range(first, first + n):
        lane = i % len(lanes)
        with torch.cuda.stream(lanes[lane]):
            step(i, lane, variant)


def _fixed_work(torch, step, lanes, variant, target):
    """GPU time of the fixed work, ms: the median of FIXED_WORK_REPEATS back-to-back runs, so one
    run slowed by something outside the workload (seen on H100: +20-50 ms in 1 of 5) does not count."""
    cur = torch.cuda.current_stream()
    times = []
    for _ in range(FIXED_WORK_REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(cur)
        for s in lanes:
            s.wait_stream(cur)
        _enqueue(torch, step, lanes, variant, 0, target)
        for s in lanes:
            cur.wait_stream(s)
        end.record(cur)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _window(torch, step, lanes, variant, deadline_us, sync_every):
    """Runs until the deadline, synchronizing every sync_every iterations: (iterations, GPU ms, latencies)."""
    cur = torch.cuda.current_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(cur)
    for s in lanes:
        s.wait_stream(cur)
    done, latencies = 0, []
    while True:
        ts = now_us()
        _enqueue(torch, step, lanes, variant, done, sync_every)
        done += sync_every
        for s in lanes:
            s.synchronize()
        te = now_us()
        if len(latencies) < LATENCY_CAP:
            latencies.append((te - ts) / 1000.0)
        if te >= deadline_us:
            break
    for s in lanes:
        cur.wait_stream(s)
    end.record(cur)
    end.synchronize()
    return done, start.elapsed_time(end), latencies


def _arrivals(load, t0_us, end_us, seed, phase):
    """The scheduled times of a window's requests, made here and not by the harness: constant spacing
    (shifted by `phase` of a gap, so clients do not fire together), or Poisson arrivals (exponential
    gaps) from a generator seeded by the trial and client, so a rerun repeats them and clients differ."""
    import random

    rng, gap_us = random.Random(seed), 1e6 / load["qps"]
    t, times = t0_us - (1 - phase) * gap_us if load["kind"] != "poisson" else t0_us, []
    while True:
        t += rng.expovariate(1.0 / gap_us) if load["kind"] == "poisson" else gap_us
        if t >= end_us:
            return times
        times.append(t)


def _open_loop(torch, step, lanes, variant, t0_us, end_us, load, seed, phase):
    """One worker serving requests at their scheduled times: a request due while the one before is
    still running waits (a queue), and its latency counts from its scheduled time, so that wait counts
    too (no coordinated omission). The lags returned are the generator's own: how late requests started
    although the worker was idle when they were due (host wake-up, not queueing), as p99 and max."""
    latencies, lags, done, free_at = [], [], 0, t0_us
    arrivals = _arrivals(load, t0_us, end_us, seed, phase)
    give_up = end_us + (end_us - t0_us)  # a backlog longer than the window again is not served
    for due in arrivals:
        if now_us() > give_up:
            break
        _wait_until(due)
        start = now_us()
        if free_at <= due:
            lags.append((start - due) / 1000.0)
        _enqueue(torch, step, lanes, variant, done, 1)
        for s in lanes:
            s.synchronize()
        free_at = now_us()
        done += 1
        if len(latencies) < LATENCY_CAP:
            latencies.append((free_at - due) / 1000.0)
    lags.sort()
    return done, len(arrivals) - done, latencies, (lags[int(0.99 * (len(lags) - 1))] if lags else 0.0), (lags[-1] if lags else 0.0)


def _run(torch, step, cmd, args, lanes_by_k):
    variant = cmd.get("variant") or {}
    k = int(variant.get("streams", 1))
    lanes = lanes_by_k.setdefault(k, [torch.cuda.Stream() for _ in range(k)])
    duration_ms = cmd.get("durationMs")
    torch.cuda.synchronize()
    _wait_until(cmd["startAtUs"])
    t0 = now_us()
    if cmd.get("load"):
        end = t0 + duration_ms * 1000
        client = int(os.environ.get("GPUSHARE_CLIENT_INDEX", "0"))
        phase = client / max(1, int(cmd.get("clients") or 1))
        done, dropped, latencies, lag_p99, lag_max = _open_loop(torch, step, lanes, variant, t0, end, cmd["load"], f'{cmd["trial"]}/{client}', phase)
        return {"windowStartUs": t0, "windowEndUs": max(end, now_us()), "iterations": done, "gpuMs": 0.0,
                "latenciesMs": latencies, "chunkIterations": 1, "scheduleLagMs": lag_p99, "scheduleLagMaxMs": lag_max,
                "droppedRequests": dropped}
    if duration_ms:
        done, gpu_ms, latencies = _window(torch, step, lanes, variant, t0 + duration_ms * 1000, args.sync_every)
        chunk = args.sync_every
    else:
        done = cmd.get("iterations") or args.iterations
        gpu_ms, latencies, chunk = _fixed_work(torch, step, lanes, variant, done), [], done
    return {
        "windowStartUs": t0,
        "windowEndUs": now_us(),
        "iterations": done,
        "gpuMs": gpu_ms,
        "latenciesMs": latencies,
        "chunkIterations": chunk,
    }


def _pin():
    """Pins this process to GPUSHARE_CPUS (set by gpushare --cpu-pin auto), so clients never share a core."""
    cpus = os.environ.get("GPUSHARE_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def serve(name, build, args):
    """Builds the workload, warms it up, says ready, then answers run commands until exit or EOF."""
    try:
        _pin()
        import torch

        step = build()
        torch.cuda.synchronize()
        t_end, i = now_us() + args.warmup_ms * 1000, 0
        while i < 2 or now_us() < t_end:
            step(i, 0, {"streams": 1, "pinned": True})
            torch.cuda.synchronize()
            i += 1
        emit("ready", protocol=PROTOCOL, workload=name, pid=os.getpid(),
             device=torch.cuda.get_device_name(), params=vars(args))
        lanes_by_k = {}
        for line in iter(sys.stdin.readline, ""):
            if not line.strip():
                continue
            cmd = json.loads(line)
            if cmd.get("cmd") == "exit":
                return 0
            if cmd.get("cmd") != "run":
                emit("error", message=f"unknown command {cmd.get('cmd')!r}")
                return 2
            emit("result", trial=cmd["trial"], **_run(torch, step, cmd, args, lanes_by_k))
        return 0  # stdin closed: the harness is gone, so stop
    except Exception as exc:  # reported as a protocol error, with the traceback on stderr
        import traceback

        traceback.print_exc()
        emit("error", message=f"{type(exc).__name__}: {exc}")
        return 1
