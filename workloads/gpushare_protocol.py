"""gpushare's workload helper: your model as a gpushare workload, speaking protocol 3.

    from gpushare_protocol import serve

    def setup():                      # or setup(args), to read your own arguments (see serve)
        import torch
        model = torch.nn.Linear(1024, 1024).cuda().half().eval()
        x = torch.randn(8, 1024, device="cuda", dtype=torch.float16)

        def step(i, lane, variant):   # enqueue one iteration (one request); do not synchronize
            model(x)

        return step

    if __name__ == "__main__":
        raise SystemExit(serve("my-model", setup))

Then `gpushare check -- python3 my_model.py` says in one line whether it works, and
`gpushare bench --modes timeslice,mps -- python3 my_model.py` measures it. gpushare puts the
directory of this file on the workload's PYTHONPATH, so the import works without touching sys.path
(`gpushare check --print-helper-path` prints the directory, for running the script yourself).

In-process tenancy comes for free: when gpushare asks for N tenants (GPUSHARE_TENANTS=N, in the
streams and green modes), serve() calls setup N times, one model instance per tenant, each on a CUDA
stream and a host thread of its own (with GPUSHARE_GREEN_SM_PCT, each in a green context of its own
SMs), and serves every tenant's requests as the harness asks.

Needs PyTorch built for CUDA (imported when serve runs, never at import). Importing this module has
no side effect: serve() takes stdout for the protocol when it starts, and from then on anything else
printed (by your code, a library, C code) goes to stderr, which gpushare keeps in the run directory.

The protocol itself (JSON lines on stdout, commands on stdin) is in protocol.schema.json beside this
file; any language can speak it. Times are CLOCK_MONOTONIC microseconds (time.monotonic_ns() / 1000),
comparable across processes.
"""
import argparse
import contextlib
import gc
import inspect
import json
import math
import os
import queue
import runpy
import sys
import threading
import time

PROTOCOL = 3  # 3 adds tenants (GPUSHARE_TENANTS) and green contexts; 2 added open-loop load; the harness still accepts 1 and 2
LATENCY_CAP = 20000  # latencies kept per trial, all tenants together: a result line stays well under the harness's 1 MiB limit
FIXED_WORK_REPEATS = 3  # a fixed-work trial runs its work this many times and reports the median
TENANTS_ENV = "GPUSHARE_TENANTS"  # how many tenants (model instances) this process serves; 1 unless gpushare asks
GREEN_ENV = "GPUSHARE_GREEN_SM_PCT"  # set: each tenant in a green context of this share of the SMs, %, or "even"
SMID_SPIN_NS = 20_000  # how long each block of the SM-id kernel spins, so that its blocks spread over every SM it may use

_out = None  # the private handle on the real stdout, once serve() (or the first emit) has taken it
_switch = {"started": False, "released": None}  # a process that switched workloads: started once; what the last one left


def claim_stdout():
    """Keeps a private handle on stdout for protocol lines and sends fd 1 (library prints, C-level
    output) to stderr, which the harness keeps. serve() does this; idempotent."""
    global _out
    if _out is None:
        sys.stdout.flush()
        _out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _out


def now_us():
    return time.monotonic_ns() / 1000.0


def line(message):
    """One protocol line: compact JSON, no NaN or infinity (the harness refuses them)."""
    return json.dumps(message, allow_nan=False, separators=(",", ":"))


def ready_message(name, pid, device, params, tenants=1, memory_reserved_mib=None, graph_pool_mib=None,
                  tenant_sms=None, released=None):
    """The line a workload prints once built and warmed up: its name, pid, device and parameters; the
    tenants it built; what its allocator holds (MiB, graph pools too); the SMs each green tenant ran on;
    after a switch, what the previous workload held and what was left once it was released (MiB)."""
    message = {"event": "ready", "protocol": PROTOCOL, "workload": name, "pid": pid, "device": device,
               "params": {k: _json_value(v) for k, v in params.items()}, "tenants": tenants,
               "memoryReservedMiB": memory_reserved_mib, "graphPoolMiB": graph_pool_mib,
               "holds": True,  # serve() waits for start when started with GPUSHARE_HOLD=1 (see _await_start)
               "switches": True}  # serve() takes {"cmd":"switch","argv":[...]} (see _switch_to)
    if tenant_sms is not None:
        message["tenantSms"] = tenant_sms
    if released is not None:
        message["released"] = released
    return message


def result_fields(window_start_us, window_end_us, iterations, gpu_ms, latencies_ms, chunk_iterations,
                  schedule_lag_ms=None, schedule_lag_max_ms=None, dropped_requests=None, step_host_us=None):
    """What one window measured (of the process, or of one tenant). The open-loop fields (schedule
    lag, dropped requests) only with a load; step_host_us: host time of one step() call, mean, µs."""
    fields = {"windowStartUs": window_start_us, "windowEndUs": window_end_us, "iterations": iterations,
              "gpuMs": gpu_ms, "latenciesMs": latencies_ms, "chunkIterations": chunk_iterations}
    for key, value in (("scheduleLagMs", schedule_lag_ms), ("scheduleLagMaxMs", schedule_lag_max_ms),
                       ("droppedRequests", dropped_requests), ("stepHostUs", step_host_us)):
        if value is not None:
            fields[key] = value
    return fields


def result_message(trial, window_start_us, window_end_us, iterations, gpu_ms, latencies_ms, chunk_iterations,
                   schedule_lag_ms=None, schedule_lag_max_ms=None, dropped_requests=None, step_host_us=None):
    """The answer to one run command that names no tenants."""
    return {"event": "result", "trial": trial,
            **result_fields(window_start_us, window_end_us, iterations, gpu_ms, latencies_ms, chunk_iterations,
                            schedule_lag_ms, schedule_lag_max_ms, dropped_requests, step_host_us)}


def tenants_result_message(trial, tenants):
    """The answer to a run command that names tenants: one entry per tenant ({"tenant": k, **its
    result_fields}) and, at the top, the process as a whole (its span, iterations and GPU time)."""
    return {"event": "result", "trial": trial,
            **result_fields(min(t["windowStartUs"] for t in tenants), max(t["windowEndUs"] for t in tenants),
                            sum(t["iterations"] for t in tenants), sum(t["gpuMs"] for t in tenants), [], 1),
            "tenants": tenants}


def holding_message(pid):
    """What a held process (GPUSHARE_HOLD=1) prints once it has imported (and run prepare), as it
    waits for start: the harness may then prestart another process on the core it imported on."""
    return {"event": "holding", "pid": pid}


def error_message(text, unsupported=False):
    """What a workload says before it exits non-zero: one line the harness shows as the reason.
    unsupported: this machine cannot run what was asked (the harness then skips, not fails)."""
    return {"event": "error", "message": text, **({"unsupported": True} if unsupported else {})}


def send(message):
    """Prints one protocol message on the real stdout (taking it first if serve() has not)."""
    out = claim_stdout()
    out.write(line(message) + "\n")
    out.flush()


def emit(event, **fields):
    """send({"event": event, **fields}): for roles that print their own events (workloads/isolation.py)."""
    send({"event": event, **fields})


def _json_value(value):
    """A parameter as JSON can carry it: numbers, text, booleans and null as they are, anything else as text."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return str(value)


def flag(text):
    """An argparse type for true/false flags: --graph true, --graph false."""
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parser(description=None):
    """The arguments the harness may pass every workload: --iterations, --sync-every, --warmup-ms."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=100, help="iterations of a fixed-work trial")
    p.add_argument("--sync-every", type=int, default=1, help="iterations between synchronizations in a window")
    p.add_argument("--warmup-ms", type=float, default=500, help="warm-up before ready")
    return p


def graph_replay(torch, fn, warmups=3):
    """Captures fn() in a CUDA graph and returns its replay. The warm-up runs (cuBLAS handles,
    allocator pools) happen off the default stream, outside the capture, as PyTorch requires: on a
    side stream when the default stream is current, else on the current stream, which the capture
    uses too (a tenant's stream, which in the green mode belongs to its green context: a graph
    captured on PyTorch's own side stream would run on every SM)."""
    current = torch.cuda.current_stream()
    own = current != torch.cuda.default_stream()
    side = current if own else torch.cuda.Stream()
    if not own:
        side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    if not own:
        current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side if own else None):
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


class _HostTime:
    """Host time spent inside step() calls: with tenants on threads of one process, it grows with
    the wait for Python's GIL, which is part of what in-process tenancy costs."""

    def __init__(self):
        self.ns, self.calls = 0, 0

    def step_us(self):
        return self.ns / self.calls / 1000 if self.calls else None


def _enqueue(torch, step, lanes, variant, first, n, host):
    """Enqueues iterations first..first+n-1, round-robin over the lanes (streams)."""
    for i in range(first, first + n):
        lane = i % len(lanes)
        with torch.cuda.stream(lanes[lane]):
            t0 = time.perf_counter_ns()
            step(i, lane, variant)
            host.ns += time.perf_counter_ns() - t0
        host.calls += 1


def _fixed_work(torch, step, lanes, variant, target, host):
    """GPU time of the fixed work, ms: the median of FIXED_WORK_REPEATS back-to-back runs, so one
    run slowed by something outside the workload (seen on H100: +20-50 ms in 1 of 5) does not count."""
    cur = torch.cuda.current_stream()
    times = []
    for _ in range(FIXED_WORK_REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(cur)
        for s in lanes:
            s.wait_stream(cur)
        _enqueue(torch, step, lanes, variant, 0, target, host)
        for s in lanes:
            cur.wait_stream(s)
        end.record(cur)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _window(torch, step, lanes, variant, deadline_us, sync_every, cap, host):
    """Runs until the deadline, synchronizing every sync_every iterations: (iterations, GPU ms, latencies).

    On one lane (every closed-loop trial of a contention mode) nothing runs per request that a user's
    own loop around step() would not, beyond one clock read per synchronized chunk (its end, which is
    the next chunk's start): the lane's stream is entered once for the window, and the host time of the
    steps is read on every HOST_TIME_STRIDE-th chunk only. Entering torch.cuda.stream() per request cost
    5-8% of a 0.3 ms request on an H200, and each clock read about 1 µs on an H100's host (issue #36)."""
    cur = torch.cuda.current_stream()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(cur)
    for s in lanes:
        if s != cur:  # a lane that is the current stream already follows it (each wait costs ~7 µs)
            s.wait_stream(cur)
    done, latencies = 0, []
    if len(lanes) == 1:
        lane = lanes[0]
        # Locals and integer nanoseconds: each attribute lookup and float division is paid per request.
        clock, sync, keep, room = time.monotonic_ns, lane.synchronize, latencies.append, cap
        deadline_ns, chunk = deadline_us * 1000.0, 0
        with torch.cuda.stream(lane):
            ts = clock()
            while True:
                if sync_every == 1:
                    step(done, 0, variant)
                else:
                    for i in range(done, done + sync_every):
                        step(i, 0, variant)
                if chunk % HOST_TIME_STRIDE == 0:
                    host.ns += clock() - ts
                    host.calls += sync_every
                sync()
                te = clock()
                done += sync_every
                chunk += 1
                if room:
                    keep((te - ts) / 1e6)
                    room -= 1
                if te >= deadline_ns:
                    break
                ts = te
    else:
        while True:
            ts = now_us()
            _enqueue(torch, step, lanes, variant, done, sync_every, host)
            done += sync_every
            for s in lanes:
                s.synchronize()
            te = now_us()
            if len(latencies) < cap:
                latencies.append((te - ts) / 1000.0)
            if te >= deadline_us:
                break
    for s in lanes:
        if s != cur:
            cur.wait_stream(s)
    end.record(cur)
    end.synchronize()
    return done, start.elapsed_time(end), latencies


LOOP_CHECK_PAIRS = 8  # the overhead check alternates a bare loop and the protocol's loop (ABBA) this many pairs
LOOP_CHECK_WINDOW_MS = 250  # the window a fixed-work trial's check spreads a window's once-only cost over (bench's default)
HOST_TIME_STRIDE = 16  # a one-lane window reads the host time of its steps on every 16th chunk (a clock read costs ~1 µs)


def _bare_loop(step, stream, variant, requests, sync_every):
    """The loop a user would write around step(): `requests` requests on `stream` (current), synchronizing
    every sync_every, nothing else; its wall time, µs."""
    t0 = time.perf_counter_ns()
    for first in range(0, requests, sync_every):
        for i in range(first, first + sync_every):
            step(i, 0, variant)
        stream.synchronize()
    return (time.perf_counter_ns() - t0) / 1000.0


def _median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _loop_overhead(torch, step, variant, sync_every, check_ms, window_ms):
    """What the protocol's window loop costs a request beyond a bare loop of the same step, measured
    back to back in this process on its current stream (the harness asks for it in a trial where the
    process runs alone, after its window): LOOP_CHECK_PAIRS pairs of blocks in ABBA order, each block
    check_ms / (2 * pairs) long.

    A window costs something once (its CUDA events, entering its stream: ~0.1-0.4 ms on an H100) and
    something per request. A check's blocks are shorter than a trial's window, so each loop block is
    split into the two (its requests' span, from its latencies, and the rest), and its cost per request
    is taken as a trial's window of window_ms would pay it: the per-request part plus the once-per-window
    part spread over that window's requests. Per request, µs: the bare loop's median, the protocol
    loop's median, and the median of the pairs' differences as % of the bare request, with their
    smallest and largest; and the once-per-window cost, µs (median)."""
    stream = torch.cuda.current_stream()
    block_us = check_ms * 1000.0 / (2 * LOOP_CHECK_PAIRS)
    probe = sync_every * max(1, 8 // sync_every)
    per_request = max(_bare_loop(step, stream, variant, probe, sync_every) / probe, 1.0)
    requests = max(sync_every, int(block_us / per_request) // sync_every * sync_every)
    bare, loop, diffs, once = [], [], [], []
    for pair in range(LOOP_CHECK_PAIRS):
        got = {}
        for kind in ("loop", "bare") if pair % 2 else ("bare", "loop"):
            if kind == "bare":
                got[kind] = _bare_loop(step, stream, variant, requests, sync_every) / requests
            else:
                t0 = now_us()
                done, _, latencies = _window(torch, step, [stream], variant, t0 + block_us, sync_every, LATENCY_CAP,
                                             _HostTime())
                total = now_us() - t0
                span = sum(latencies) * 1000.0 if len(latencies) * sync_every == done else total
                each = span / done
                once.append(total - span)
                got[kind] = each + (total - span) * each / (window_ms * 1000.0)
        bare.append(got["bare"])
        loop.append(got["loop"])
        diffs.append(100.0 * (got["loop"] - got["bare"]) / got["bare"])
    # The pairs' smallest and largest difference: with 8 pairs, the interval [min, max] holds their median
    # at 99.2%, so the harness decides "over the limit" only where every pair says so.
    return {"bareUsPerRequest": _median(bare), "loopUsPerRequest": _median(loop), "overheadPct": _median(diffs),
            "overheadPctLow": min(diffs), "overheadPctHigh": max(diffs), "pairs": LOOP_CHECK_PAIRS,
            "requestsPerBlock": requests, "windowMs": window_ms, "windowOnceUs": _median(once)}


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


def _open_loop(torch, step, lanes, variant, t0_us, end_us, load, seed, phase, cap, host):
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
        _enqueue(torch, step, lanes, variant, done, 1, host)
        for s in lanes:
            s.synchronize()
        free_at = now_us()
        done += 1
        if len(latencies) < cap:
            latencies.append((free_at - due) / 1000.0)
    lags.sort()
    return done, len(arrivals) - done, latencies, (lags[int(0.99 * (len(lags) - 1))] if lags else 0.0), (lags[-1] if lags else 0.0)


def _run(torch, tenant, cmd, args, seed, phase, cap):
    """One run command for one tenant, on its thread with its stream current: a timed window, fixed
    work, or an open-loop window; the fields of its result."""
    variant = cmd.get("variant") or {}
    k = int(variant.get("streams", 1))
    lanes = tenant.lanes_by_k.setdefault(k, [torch.cuda.Stream() for _ in range(k)])
    duration_ms, host = cmd.get("durationMs"), _HostTime()
    _wait_until(cmd["startAtUs"])
    t0 = now_us()
    if cmd.get("load"):
        end = t0 + duration_ms * 1000
        done, dropped, latencies, lag_p99, lag_max = _open_loop(torch, tenant.step, lanes, variant, t0, end, cmd["load"],
                                                                seed, phase, cap, host)
        # The window lasts until its end even when the last request was served before it: a result
        # sent earlier would claim a window that had not ended yet.
        _wait_until(end)
        return result_fields(t0, now_us(), done, 0.0, latencies, 1, schedule_lag_ms=lag_p99,
                             schedule_lag_max_ms=lag_max, dropped_requests=dropped, step_host_us=host.step_us())
    if duration_ms:
        done, gpu_ms, latencies = _window(torch, tenant.step, lanes, variant, t0 + duration_ms * 1000,
                                          args.sync_every, cap, host)
        fields = result_fields(t0, now_us(), done, gpu_ms, latencies, args.sync_every, step_host_us=host.step_us())
    else:
        done = cmd.get("iterations") or args.iterations
        gpu_ms = _fixed_work(torch, tenant.step, lanes, variant, done, host)
        fields = result_fields(t0, now_us(), done, gpu_ms, [], done, step_host_us=host.step_us())
    if cmd.get("loopCheckMs"):
        # After the window, so it measures nothing of it: the harness asks where this process runs alone.
        with torch.cuda.stream(lanes[0]):
            fields["loopOverhead"] = _loop_overhead(torch, tenant.step, {**variant, "streams": 1}, args.sync_every,
                                                    float(cmd["loopCheckMs"]), float(duration_ms or LOOP_CHECK_WINDOW_MS))
    return fields


class Unsupported(Exception):
    """This machine cannot run the workload as asked (green contexts where the driver has none, SMs
    that cannot be split into that many groups): serve() says so with "unsupported", and gpushare
    records the comparison as skipped, with this reason, not as failed."""


class _Tenant:
    """One model instance of the process: its step, its CUDA stream (lane 0) and, in the green mode,
    the green context it runs in. Its requests run on a host thread of its own."""

    def __init__(self, index, stream, green=None):
        self.index, self.stream, self.green = index, stream, green
        self.step = None
        # Its grad mode, as its own code left it (infer's setup turns it off): PyTorch keeps it per
        # thread, so each tenant's is applied wherever it runs, and one tenant's setup sets no other's.
        self.grad = True
        self.lanes_by_k = {1: [stream]}
        self.jobs, self.done = queue.Queue(), queue.Queue()
        # In the green mode, tenant 0's twin on the whole GPU: its own model and stream in the primary
        # context, on a thread of its own, for the arm every mode shares: one tenant alone on the whole GPU.
        self.whole = None

    @contextlib.contextmanager
    def entered(self, torch):
        """Its green context (if any), its stream and its grad mode current on this thread while inside;
        the grad mode its code leaves is kept as its own."""
        if self.green is not None:
            self.green.push()
        before = torch.is_grad_enabled()
        torch.set_grad_enabled(self.grad)
        try:
            with torch.cuda.stream(self.stream):
                yield
        finally:
            self.grad = torch.is_grad_enabled()
            torch.set_grad_enabled(before)
            if self.green is not None:
                self.green.pop()

    def start_thread(self, torch):
        """Its host thread: runs each job put on `jobs` with its context and stream current, answers on `done`."""

        def work():
            if self.green is not None:
                self.green.push()
            torch.cuda.set_stream(self.stream)
            torch.set_grad_enabled(self.grad)
            while True:
                job = self.jobs.get()
                try:
                    self.done.put((True, job()))
                except Exception as exc:  # sent on: the main thread reports it as the workload's error
                    self.done.put((False, exc))

        threading.Thread(target=work, name=f"tenant-{self.index}", daemon=True).start()


def _twin(torch, index, build):
    """A green tenant's twin outside any green context: its own model (build(), as its setup) and stream in
    the primary context, current where this is called: every SM. It serves a run command whose variant says
    whole, the arm every mode shares (one tenant alone on the whole GPU). Not warmed up."""
    twin = _Tenant(index, torch.cuda.Stream())
    with twin.entered(torch):
        twin.step = build()
    return twin


def _serving(tenants, active, cmd):
    """The tenants a run command's `active` ones run as: their twins where its variant says whole."""
    if not (cmd.get("variant") or {}).get("whole"):
        return {k: tenants[k] for k in active}
    if any(tenants[k].whole is None for k in active):
        raise ValueError(f"the run command asks for tenants {active!r} alone on the whole GPU, but only green "
                         f"tenants have twins there")
    return {k: tenants[k].whole for k in active}


def _start_threads(torch, tenants):
    """Each tenant's host thread, and its twin's where it has one."""
    for t in tenants + [t.whole for t in tenants if t.whole is not None]:
        t.start_thread(torch)


def _driver(result, what, cu):
    """The value(s) of a cuda-python driver call, which returns (CUresult, *values); a RuntimeError
    naming the call and the driver's error otherwise."""
    err, *values = result
    if int(err) != 0:
        name = cu.cuGetErrorName(err)[1]
        raise RuntimeError(f"{what}: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else tuple(values)


class _GreenContext:
    """A green context of some SMs, made through the CUDA driver API, and a stream of it for PyTorch."""

    def __init__(self, cu, green, context, stream, handles, sms):
        self.cu, self.green, self.context, self.stream, self.sms = cu, green, context, stream, sms
        self._handles = handles  # the descriptor and stream handle, kept alive as long as the context

    def push(self):
        _driver(self.cu.cuCtxPushCurrent(self.context), "cuCtxPushCurrent", self.cu)

    def pop(self):
        _driver(self.cu.cuCtxPopCurrent(), "cuCtxPopCurrent", self.cu)


def _green_contexts(torch, count, pct):
    """`count` green contexts of disjoint SMs: `pct`% of the SMs each, or an even split (pct None).

    Through the driver API (cuda-python), not torch.cuda.green_contexts: PyTorch 2.11's
    GreenContext.create(n) takes the first n SMs every time, so its contexts overlap. The driver
    rounds each group up to its minimum size (8 SMs on Hopper); where the SMs cannot make `count`
    groups, or a call is missing, this is Unsupported with the driver's own words."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # cuda-python before 12.6 named the module so
        except ImportError as exc:
            raise Unsupported(f"green contexts need NVIDIA's Python bindings of the CUDA driver "
                              f"(pip install cuda-python): {exc}") from exc
    calls = ("cuDeviceGetDevResource", "cuDevSmResourceSplitByCount", "cuDevResourceGenerateDesc",
             "cuGreenCtxCreate", "cuCtxFromGreenCtx", "cuGreenCtxStreamCreate")
    missing = [c for c in calls if not hasattr(cu, c)]
    if missing:
        raise Unsupported(f"the CUDA driver bindings here have no {', '.join(missing)}: green contexts need CUDA 12.4 or later")
    torch.zeros(1, device="cuda")  # the primary context, current on this thread
    torch.cuda.Stream()  # PyTorch's stream pool made in the primary context, before any green context is current
    try:
        device = _driver(cu.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet", cu)
        whole = _driver(cu.cuDeviceGetDevResource(device, cu.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM),
                        "cuDeviceGetDevResource", cu)
        total = whole.sm.smCount
        asked = int(total * pct / 100) if pct is not None else total // count
        groups = _split(cu, whole, count, asked, total, even=pct is None)
        made = []
        for group in groups:
            desc = _driver(cu.cuDevResourceGenerateDesc([group], 1), "cuDevResourceGenerateDesc", cu)
            green = _driver(cu.cuGreenCtxCreate(desc, device, cu.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM),
                            "cuGreenCtxCreate", cu)
            context = _driver(cu.cuCtxFromGreenCtx(green), "cuCtxFromGreenCtx", cu)
            handle = _driver(cu.cuGreenCtxStreamCreate(green, cu.CUstream_flags.CU_STREAM_NON_BLOCKING, 0),
                             "cuGreenCtxStreamCreate", cu)
            stream = torch.cuda.ExternalStream(int(handle), device=torch.cuda.current_device())
            made.append(_GreenContext(cu, green, context, stream, (desc, handle), group.sm.smCount))
        return made, total
    except RuntimeError as exc:  # a driver call refused: this GPU or driver cannot make these contexts
        raise Unsupported(f"green contexts could not be made for {count} tenants: {exc}") from exc


def _split(cu, whole, count, asked, total, even):
    """`count` disjoint SM groups of at least `asked` SMs each. An even split tries smaller groups
    until the driver makes `count` of them (it rounds a group up to its granularity, so 33 SMs asked
    can mean 40 given); a share asked for (--sm-pct) is tried as it is."""
    best, refused = (0, 0), None
    for least in (range(max(asked, 1), 0, -1) if even else [max(asked, 1)]):
        try:
            groups, made, _rest = _driver(cu.cuDevSmResourceSplitByCount(count, whole, 0, least),
                                          "cuDevSmResourceSplitByCount", cu)
        except RuntimeError as exc:
            refused = f"{exc} (at {least} SMs a group)"
            continue
        groups = list(groups)[:made]
        if made >= count:
            return groups[:count]
        if made > best[0]:
            best = (made, groups[0].sm.smCount if groups else 0)
    share = f"{asked} SMs each ({100 * asked / total:.1f}%)" if not even else "an even split"
    if best[0] == 0:
        raise Unsupported(f"the driver made no group of {total} SMs for {count} tenants ({share}): {refused}")
    raise Unsupported(f"the driver splits {total} SMs into at most {best[0]} groups of {best[1]} SMs "
                      f"(its smallest group here), not the {count} asked for {share}: at most {best[0]} tenants "
                      f"get green contexts of their own on this GPU")


_SMID_KERNEL = None


def _smid_kernel():
    """A Triton kernel smid[(blocks,)](out, ns): each block spins ns on %globaltimer, then writes the
    id of the SM it ran on."""
    global _SMID_KERNEL
    if _SMID_KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def smid(out_ptr, ns):
            start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
            now = start
            while now - start < ns:
                now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
            sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
            tl.store(out_ptr + tl.program_id(0), sm)

        _SMID_KERNEL = smid
    return _SMID_KERNEL


def _sms_used(torch, tenant, total):
    """The SMs a tenant's work runs on: a kernel of 4 spinning blocks per SM of the GPU, launched on
    its stream in its context, eagerly and replayed from a CUDA graph (as graph workloads run)."""
    try:
        kernel = _smid_kernel()
    except ImportError as exc:
        raise Unsupported(f"checking which SMs each green context runs on needs Triton: {exc}") from exc
    blocks, seen = 4 * total, set()
    try:
        with tenant.entered(torch):
            out = torch.full((blocks,), -1, dtype=torch.int32, device="cuda")
            launch = lambda: kernel[(blocks,)](out, SMID_SPIN_NS, num_warps=1)  # noqa: E731
            launch()
            tenant.stream.synchronize()
            seen |= set(out.tolist())
            replay = graph_replay(torch, launch, warmups=1)
            out.fill_(-1)
            replay()
            tenant.stream.synchronize()
            seen |= set(out.tolist())
    except Exception as exc:  # e.g. a kernel loaded in one context launched from another: say so, do not guess
        raise Unsupported(f"the %smid check could not run in tenant {tenant.index}'s green context: "
                          f"{type(exc).__name__}: {exc}") from exc
    return sorted(seen - {-1})


def _check_disjoint(tenants, used):
    """Unsupported unless each tenant ran only on as many SMs as its group has, none shared."""
    for t, sms in zip(tenants, used):
        if len(sms) > t.green.sms:
            raise Unsupported(f"tenant {t.index}'s kernels ran on {len(sms)} SMs, but its green context has "
                              f"{t.green.sms}: the green context did not confine its work")
    owner = {}
    for t, sms in zip(tenants, used):
        for sm in sms:
            if sm in owner:
                shared = sorted(set(used[owner[sm]]) & set(sms))
                raise Unsupported(f"green contexts overlap: tenants {owner[sm]} and {t.index} both ran on "
                                  f"SMs {_ranges(shared)}: the split did not give them SMs of their own")
            owner[sm] = t.index


def _ranges(ids):
    """SM ids as text, runs collapsed: 0-15,32."""
    parts, start = [], None
    for i, sm in enumerate(ids):
        if start is None:
            start = sm
        if i + 1 == len(ids) or ids[i + 1] != sm + 1:
            parts.append(str(start) if start == sm else f"{start}-{sm}")
            start = None
    return ",".join(parts)


def _tenants(torch, count, green_pct):
    """The process's tenants, each with a stream of its own; in the green mode (green_pct not None:
    "even" or a share in %) in green contexts of their own SMs, checked disjoint on the GPU itself.
    Returns (tenants, the SM ids each ran on or None)."""
    if green_pct is None:
        return [_Tenant(i, torch.cuda.Stream()) for i in range(count)], None
    contexts, total = _green_contexts(torch, count, None if green_pct == "even" else green_pct)
    tenants = [_Tenant(i, g.stream, g) for i, g in enumerate(contexts)]
    used = [_sms_used(torch, t, total) for t in tenants]
    _check_disjoint(tenants, used)
    return tenants, used


def _env_tenants():
    """GPUSHARE_TENANTS (1 when unset) and GPUSHARE_GREEN_SM_PCT (None when unset), checked."""
    text = os.environ.get(TENANTS_ENV, "1")
    if not text.isdigit() or int(text) < 1:
        raise _Refused(f"{TENANTS_ENV}={text!r}: expected a whole number of tenants, 1 or more")
    green = os.environ.get(GREEN_ENV)
    if green is not None and green != "even":
        try:
            green = float(green)
        except ValueError:
            green = -1.0
        if not 0 < green <= 100:
            raise _Refused(f"{GREEN_ENV}={os.environ.get(GREEN_ENV)!r}: expected a share of the SMs in % (0-100] or even")
    return int(text), green


def _memory(torch):
    """What the process's caching allocator holds (torch.cuda.memory_reserved), MiB, and the part in
    CUDA-graph pools (segments of a private pool), MiB; None where this PyTorch cannot say."""
    reserved = torch.cuda.memory_reserved() / 2**20
    try:
        segments = torch.cuda.memory_snapshot()
        if not all("segment_pool_id" in s for s in segments):
            return reserved, None
        return reserved, sum(s["total_size"] for s in segments if tuple(s["segment_pool_id"]) != (0, 0)) / 2**20
    except Exception:  # an allocator without snapshots: the reservation alone
        return reserved, None


def _warm_up(torch, tenants, warmup_ms):
    """Each tenant in turn (CUDA-graph captures must not overlap), in its context and on its stream,
    at least 2 steps and its share of the warm-up time."""
    share_us = warmup_ms * 1000 / len(tenants)
    for t in tenants:
        with t.entered(torch):
            t_end, i = now_us() + share_us, 0
            while i < 2 or now_us() < t_end:
                t.step(i, 0, {"streams": 1, "pinned": True})
                t.stream.synchronize()
                i += 1
    torch.cuda.synchronize()


def _serve_tenants(torch, tenants, cmd, args):
    """A run command that names tenants: each runs it on its own thread, started together; one result."""
    active = cmd["tenants"]
    if (not isinstance(active, list) or not active or len(set(active)) != len(active)
            or not all(isinstance(k, int) and 0 <= k < len(tenants) for k in active)):
        raise ValueError(f"the run command names tenants {active!r}, but this process has {len(tenants)} (0-{len(tenants) - 1})")
    serving = _serving(tenants, active, cmd)
    torch.cuda.synchronize()  # every tenant idle: no device-wide synchronization inside the window
    cap = max(100, LATENCY_CAP // len(active))
    for t in serving.values():
        t.jobs.put(lambda t=t: _run(torch, t, cmd, args, f'{cmd["trial"]}/{t.index}', t.index / len(tenants), cap))
    results = []
    for k in active:
        ok, value = serving[k].done.get()
        if not ok:
            raise value
        results.append({"tenant": k, **value})
    return tenants_result_message(cmd["trial"], results)


def _pin():
    """Pins this process to GPUSHARE_CPUS (set by gpushare --cpu-pin auto), so clients never share a core."""
    cpus = os.environ.get("GPUSHARE_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


HOLD_ENV = "GPUSHARE_HOLD"
HOLD_IDLE_ENV = "GPUSHARE_HOLD_IDLE"
CAP_SYS_NICE = 23


def _hold_begin():
    """A prestarted process (GPUSHARE_HOLD=1) imports while another comparison measures: on the cores
    GPUSHARE_HOLD_CPUS names (those the measuring clients do not use); else, asked for it
    (GPUSHARE_HOLD_IDLE=1, bench prestarting ahead), at SCHED_IDLE, where it runs only on a core
    nothing else wants, if it may leave that policy again; else at a lower priority where that can be
    undone (root). Returns how to undo it, on every thread the process has by then."""
    undo = []
    cpus = os.environ.get("GPUSHARE_HOLD_CPUS")
    if cpus and hasattr(os, "sched_getaffinity"):
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
        undo.append(lambda: os.sched_setaffinity(0, before))
    elif os.environ.get(HOLD_IDLE_ENV) == "1" and _may_leave_idle():
        _die_with_parent()
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        undo.append(lambda: _every_thread(lambda tid: os.sched_setscheduler(tid, policy, param)))
    elif hasattr(os, "geteuid") and os.geteuid() == 0:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, min(19, before + 10))
        undo.append(lambda: _every_thread(lambda tid: os.setpriority(os.PRIO_PROCESS, tid, before)))
    return undo


_PARENT = os.getppid()  # as this module is imported: the harness that started the process


def _die_with_parent():
    """Prestarting ahead, bench may stop (SIGSTOP) a process still importing for the length of a trial: a
    stopped process never reads the end of its stdin, so were the harness killed meanwhile (kill -9), it
    would be left stopped. Linux then kills it instead (PR_SET_PDEATHSIG), and one whose harness is
    already gone exits now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return  # not Linux: nothing stops it there
    if os.getppid() != _PARENT:
        os._exit(0)


def _may_leave_idle():
    """Whether this process could leave SCHED_IDLE again: CAP_SYS_NICE in effect (root is not enough in a
    container without it). Never tried by entering it: a process stuck there would measure at idle priority."""
    if not hasattr(os, "SCHED_IDLE"):
        return False
    try:
        with open("/proc/self/status") as status:
            caps = next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        return False
    return bool(caps >> CAP_SYS_NICE & 1)


def _every_thread(apply):
    """apply(tid) on each thread of this process (a policy or priority is per thread in Linux: threads
    started during the imports or prepare inherited the hold's)."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            apply(tid)
        except ProcessLookupError:
            pass  # a thread that ended meanwhile


def _leave(at_once):
    """serve's end on the exit command: 0 to return, or, at once, the process's end with status 0."""
    if at_once:
        for stream in (_out, sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        os._exit(0)
    return 0


def _await_start():
    """Blocks a held process until the harness says start (True) or exit, or closes stdin (False).
    Nothing before this touches the GPU: CUDA starts (and an MPS client connects) only after it."""
    for text in iter(sys.stdin.readline, ""):
        if not text.strip():
            continue
        cmd = json.loads(text).get("cmd")
        if cmd == "start":
            return True
        if cmd == "exit":
            return False
        raise _Refused(f"a held process (GPUSHARE_HOLD=1) takes start or exit first, got {cmd!r}")
    return False


def _switch_to(torch, name, tenants, threads, argv):
    """Releases this workload (its steps, and with them its models, buffers and CUDA graphs; then the
    allocator's cache) and serves the one `argv` names ([script, args...]) in this process, whose
    imports and CUDA context carry over. Returns that workload's exit status. Its ready line says what
    this one held and what was left after the release (released)."""
    if threads:
        raise _Refused("a process whose tenants run on threads does not switch workloads")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise _Refused(f"switch takes argv, a list of strings [script, args...], got {argv!r}")
    held, _ = _memory(torch)
    for t in tenants:
        t.step = None
    tenants.clear()
    gc.collect()
    torch.cuda.synchronize()
    # cuBLAS keeps a workspace per handle and stream in the allocator, which empty_cache cannot free.
    clear_cublas = getattr(getattr(torch, "_C", None), "_cuda_clearCublasWorkspaces", None)
    if clear_cublas is not None:
        clear_cublas()
    torch.cuda.empty_cache()
    left, _ = _memory(torch)
    _switch["released"] = {"workload": name, "memoryReservedMiB": held, "leftMiB": left}
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))  # as `python3 script.py` would have it
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


class _Refused(Exception):
    """A call of serve() that cannot work, said before anything is built."""


def _setup_takes_args(setup, role="setup"):
    """Whether setup (or prepare) wants the parsed arguments: setup() or setup(args), nothing else."""
    if not callable(setup):
        what = "a function that returns step" if role == "setup" else "a function"
        raise _Refused(f"serve(name, setup): {role} must be {what}, got {type(setup).__name__}")
    try:
        params = inspect.signature(setup).parameters.values()
    except (TypeError, ValueError):
        return False  # a builtin or C callable: called without arguments
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) > 1:
        raise _Refused(f"serve(name, setup): {role} must take no argument or one (the parsed arguments), "
                       f"but {getattr(setup, '__name__', 'it')} takes {len(required)}")
    return len(required) == 1


def _arguments(argv, add_arguments, description):
    """The parsed arguments: the harness's (parser()) and the workload's own (add_arguments)."""
    if isinstance(argv, argparse.Namespace):
        return argv  # the old call form, serve(name, build, parser(...).parse_args())
    if argv is not None and (isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple))
                             or not all(isinstance(a, str) for a in argv)):
        raise _Refused(f"serve(name, setup, argv): argv must be a list of command-line strings "
                       f"(default sys.argv[1:]), not {type(argv).__name__}; declare your workload's own arguments "
                       f"with serve(..., add_arguments=fn), where fn(parser) calls parser.add_argument")
    given = sys.argv[1:] if argv is None else list(argv)
    p = parser(description)
    if add_arguments is not None:
        add_arguments(p)

    def refuse(message):
        raise _Refused(f"bad arguments {' '.join(given)!r}: {message}")

    p.error = refuse  # one error line for the harness instead of argparse's exit
    return p.parse_args(given)


def serve(name, setup, argv=None, *, add_arguments=None, description=None, exit_at_once=False, prepare=None):
    """Runs a workload until the harness is done with it; returns the exit status for sys.exit.

    name: the workload's name, as the ready line and reports show it.
    setup: builds the workload on the GPU and returns step. It is called once, after the arguments
        are parsed and before warm-up, as setup() or, if it takes a parameter, as setup(args): args
        is the argparse namespace of your own arguments (add_arguments) and the harness's
        (args.iterations, args.sync_every, args.warmup_ms). Import torch and load the model inside it.
        With N tenants (GPUSHARE_TENANTS=N, set by gpushare's streams and green modes) it is called
        N times, once per tenant, each call's model and step that tenant's own; in the green mode once
        more, for tenant 0's twin on the whole GPU (the arm that measures one tenant alone on the whole
        GPU, the baseline every mode shares).
    argv: the command-line arguments, a list of strings; default sys.argv[1:].
    add_arguments: a function fn(parser) that declares the workload's own arguments on the argparse
        parser, e.g. parser.add_argument("--batch", type=int, default=8).
    description: the --help text (e.g. your module's __doc__).
    prepare: what setup needs that touches no GPU (e.g. import torchvision), as prepare() or
        prepare(args). It runs once, after torch is imported and before CUDA starts: in a process
        gpushare prestarts (GPUSHARE_HOLD=1), while another comparison measures, so that setup finds
        it done. Importing torchvision took 6 s on an H100's host, longer than torch itself. Its
        return value is ignored; keep what it loads in a global for setup.
    exit_at_once: on the harness's exit command, end the process at once (os._exit, after flushing)
        instead of returning: Python's teardown of a process that loaded PyTorch took 0.6-1 s on an
        H100 (0.1 s this way), and the harness waits for it between comparisons. Code after serve()
        does not run then; the driver frees the GPU as the process ends either way.

    step(i, lane, variant) enqueues one iteration (one request) of the workload on the GPU. It must
    not synchronize: serve times the work and synchronizes as each trial needs. Its return value is
    ignored.
        i: the iteration's number within the trial (0, 1, 2, ...).
        lane: which CUDA stream the iteration runs on, 0 to streams-1. serve has already made that
            stream current (torch.cuda.stream), so plain PyTorch calls go to it; keep anything that
            must not be shared between streams (output buffers, captured CUDA graphs) per lane. With
            one stream, lane is always 0.
        variant: the trial's settings from the harness, a dict: "streams" (how many streams this
            trial runs on) and "pinned" (page-locked host memory; False only in the pageable arms
            of workloads that copy from the host), "whole" (True in a green process's whole-GPU arm).

    Tenants: each has its own CUDA stream (its lane 0), its own host thread and, in the green mode,
    its own green context; a run command naming tenants runs each on its thread, started together.
    Where this machine cannot make green contexts as asked, serve says so as "unsupported" and
    gpushare records the comparison as skipped.

    Switch: between comparisons of one mode and one set of processes, gpushare may send
    {"cmd":"switch","argv":[script, args...]}: serve drops this workload's steps (and with them what
    setup built), empties PyTorch's allocator cache and runs that script in this process, whose
    imports and CUDA context carry over; its ready line says what was released.

    The old form serve(name, build, args), with args from parser().parse_args() and build() taking
    no argument, still works. Anything else that cannot work (argv that is not a list of strings, a
    setup taking two arguments, no PyTorch) is refused with an error line before anything is built.
    """
    try:
        args = _arguments(argv, add_arguments, description)  # before stdout is taken: --help prints there
        claim_stdout()
        takes_args = _setup_takes_args(setup) and not isinstance(argv, argparse.Namespace)
        prepare_takes_args = prepare is not None and _setup_takes_args(prepare, "prepare") \
            and not isinstance(argv, argparse.Namespace)
        count, green_pct = _env_tenants()
        held = os.environ.get(HOLD_ENV) == "1" and not _switch["started"]  # a switched-to workload starts at once
        undo = _hold_begin() if held else []
        try:
            import torch
        except ImportError as exc:
            raise _Refused(f"gpushare_protocol needs PyTorch built for CUDA (pip install torch): {exc}") from exc
        if prepare is not None:
            prepare(args) if prepare_takes_args else prepare()
        if held:
            send(holding_message(os.getpid()))
            if not _await_start():
                return _leave(exit_at_once)
        for restore in undo:
            restore()
        _switch["started"] = True
        _pin()
        if not torch.cuda.is_available():
            raise _Refused("PyTorch sees no CUDA GPU (torch.cuda.is_available() is False): "
                           f"check CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} and the driver")

        tenants, sms = _tenants(torch, count, green_pct)
        for t in tenants:
            with t.entered(torch):
                t.step = setup(args) if takes_args else setup()
            if not callable(t.step):
                raise _Refused(f"setup must return step(i, lane, variant), but returned {type(t.step).__name__}")
        torch.cuda.synchronize()
        _warm_up(torch, tenants, args.warmup_ms)
        reserved, graphs = _memory(torch)  # the tenants' own, before a green process's twin is built
        if green_pct is not None:
            tenants[0].whole = _twin(torch, 0, lambda: setup(args) if takes_args else setup())
            _warm_up(torch, [tenants[0].whole], args.warmup_ms / count)
        released, _switch["released"] = _switch["released"], None
        send(ready_message(name, os.getpid(), torch.cuda.get_device_name(), vars(args), tenants=count,
                           memory_reserved_mib=reserved, graph_pool_mib=graphs, tenant_sms=sms, released=released))
        threads = False
        client = int(os.environ.get("GPUSHARE_CLIENT_INDEX", "0"))
        for text in iter(sys.stdin.readline, ""):
            if not text.strip():
                continue
            cmd = json.loads(text)
            if cmd.get("cmd") == "exit":
                return _leave(exit_at_once)
            if cmd.get("cmd") == "switch":
                return _switch_to(torch, name, tenants, threads, cmd.get("argv"))
            if cmd.get("cmd") != "run":
                send(error_message(f"unknown command {cmd.get('cmd')!r}"))
                return 2
            if "tenants" in cmd:
                if not threads:
                    _start_threads(torch, tenants)
                    threads = True
                send(_serve_tenants(torch, tenants, cmd, args))
                continue
            # A command naming no tenants (protocol 1 and 2): tenant 0, on this thread.
            torch.cuda.synchronize()
            with tenants[0].entered(torch):
                fields = _run(torch, tenants[0], cmd, args, f'{cmd["trial"]}/{client}',
                              client / max(1, int(cmd.get("clients") or 1)), LATENCY_CAP)
            send({"event": "result", "trial": cmd["trial"], **fields})
        return 0  # stdin closed: the harness is gone, so stop
    except _Refused as exc:
        print(f"gpushare_protocol: {exc}", file=sys.stderr)
        send(error_message(str(exc)))
        return 2
    except Unsupported as exc:
        print(f"gpushare_protocol: unsupported here: {exc}", file=sys.stderr)
        send(error_message(str(exc), unsupported=True))
        return 2
    except Exception as exc:  # reported as a protocol error, with the traceback on stderr
        import traceback

        traceback.print_exc()
        send(error_message(f"{type(exc).__name__}: {exc}"))
        return 1
