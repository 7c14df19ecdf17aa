"""gpushare's workload helper: your model as a gpushare workload, speaking protocol 2.

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

Needs PyTorch built for CUDA (imported when serve runs, never at import). Importing this module has
no side effect: serve() takes stdout for the protocol when it starts, and from then on anything else
printed (by your code, a library, C code) goes to stderr, which gpushare keeps in the run directory.

The protocol itself (JSON lines on stdout, commands on stdin) is in protocol.schema.json beside this
file; any language can speak it. Times are CLOCK_MONOTONIC microseconds (time.monotonic_ns() / 1000),
comparable across processes.
"""
import argparse
import inspect
import json
import math
import os
import sys
import time

PROTOCOL = 2  # 2 adds open-loop load ("load" in a run command); the harness still accepts 1
LATENCY_CAP = 20000  # latencies kept per trial; a result line stays well under the harness's 1 MiB limit
FIXED_WORK_REPEATS = 3  # a fixed-work trial runs its work this many times and reports the median

_out = None  # the private handle on the real stdout, once serve() (or the first emit) has taken it


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


def ready_message(name, pid, device, params):
    """The line a workload prints once built and warmed up: its name, pid, device and parameters."""
    return {"event": "ready", "protocol": PROTOCOL, "workload": name, "pid": pid, "device": device,
            "params": {k: _json_value(v) for k, v in params.items()}}


def result_message(trial, window_start_us, window_end_us, iterations, gpu_ms, latencies_ms, chunk_iterations,
                   schedule_lag_ms=None, schedule_lag_max_ms=None, dropped_requests=None):
    """The answer to one run command. The open-loop fields (schedule lag, dropped requests) only with a load."""
    message = {"event": "result", "trial": trial, "windowStartUs": window_start_us, "windowEndUs": window_end_us,
               "iterations": iterations, "gpuMs": gpu_ms, "latenciesMs": latencies_ms,
               "chunkIterations": chunk_iterations}
    for key, value in (("scheduleLagMs", schedule_lag_ms), ("scheduleLagMaxMs", schedule_lag_max_ms),
                       ("droppedRequests", dropped_requests)):
        if value is not None:
            message[key] = value
    return message


def error_message(text):
    """What a workload says before it exits non-zero: one line the harness shows as the reason."""
    return {"event": "error", "message": text}


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
    """One run command: a timed window, fixed work, or an open-loop window; its result message."""
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
        # The window lasts until its end even when the last request was served before it: a result
        # sent earlier would claim a window that had not ended yet.
        _wait_until(end)
        return result_message(cmd["trial"], t0, now_us(), done, 0.0, latencies, 1,
                              schedule_lag_ms=lag_p99, schedule_lag_max_ms=lag_max, dropped_requests=dropped)
    if duration_ms:
        done, gpu_ms, latencies = _window(torch, step, lanes, variant, t0 + duration_ms * 1000, args.sync_every)
        return result_message(cmd["trial"], t0, now_us(), done, gpu_ms, latencies, args.sync_every)
    done = cmd.get("iterations") or args.iterations
    gpu_ms = _fixed_work(torch, step, lanes, variant, done)
    return result_message(cmd["trial"], t0, now_us(), done, gpu_ms, [], done)


def _pin():
    """Pins this process to GPUSHARE_CPUS (set by gpushare --cpu-pin auto), so clients never share a core."""
    cpus = os.environ.get("GPUSHARE_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


class _Refused(Exception):
    """A call of serve() that cannot work, said before anything is built."""


def _setup_takes_args(setup):
    """Whether setup wants the parsed arguments: setup() or setup(args), nothing else."""
    if not callable(setup):
        raise _Refused(f"serve(name, setup): setup must be a function that returns step, got {type(setup).__name__}")
    try:
        params = inspect.signature(setup).parameters.values()
    except (TypeError, ValueError):
        return False  # a builtin or C callable: called without arguments
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) > 1:
        raise _Refused(f"serve(name, setup): setup must take no argument or one (the parsed arguments), "
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


def serve(name, setup, argv=None, *, add_arguments=None, description=None):
    """Runs a workload until the harness is done with it; returns the exit status for sys.exit.

    name: the workload's name, as the ready line and reports show it.
    setup: builds the workload on the GPU and returns step. It is called once, after the arguments
        are parsed and before warm-up, as setup() or, if it takes a parameter, as setup(args): args
        is the argparse namespace of your own arguments (add_arguments) and the harness's
        (args.iterations, args.sync_every, args.warmup_ms). Import torch and load the model inside it.
    argv: the command-line arguments, a list of strings; default sys.argv[1:].
    add_arguments: a function fn(parser) that declares the workload's own arguments on the argparse
        parser, e.g. parser.add_argument("--batch", type=int, default=8).
    description: the --help text (e.g. your module's __doc__).

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
            of workloads that copy from the host). Most workloads ignore it.

    The old form serve(name, build, args), with args from parser().parse_args() and build() taking
    no argument, still works. Anything else that cannot work (argv that is not a list of strings, a
    setup taking two arguments, no PyTorch) is refused with an error line before anything is built.
    """
    try:
        args = _arguments(argv, add_arguments, description)  # before stdout is taken: --help prints there
        claim_stdout()
        takes_args = _setup_takes_args(setup) and not isinstance(argv, argparse.Namespace)
        _pin()
        try:
            import torch
        except ImportError as exc:
            raise _Refused(f"gpushare_protocol needs PyTorch built for CUDA (pip install torch): {exc}") from exc
        if not torch.cuda.is_available():
            raise _Refused("PyTorch sees no CUDA GPU (torch.cuda.is_available() is False): "
                           f"check CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} and the driver")

        step = setup(args) if takes_args else setup()
        if not callable(step):
            raise _Refused(f"setup must return step(i, lane, variant), but returned {type(step).__name__}")
        torch.cuda.synchronize()
        t_end, i = now_us() + args.warmup_ms * 1000, 0
        while i < 2 or now_us() < t_end:
            step(i, 0, {"streams": 1, "pinned": True})
            torch.cuda.synchronize()
            i += 1
        send(ready_message(name, os.getpid(), torch.cuda.get_device_name(), vars(args)))
        lanes_by_k = {}
        for text in iter(sys.stdin.readline, ""):
            if not text.strip():
                continue
            cmd = json.loads(text)
            if cmd.get("cmd") == "exit":
                return 0
            if cmd.get("cmd") != "run":
                send(error_message(f"unknown command {cmd.get('cmd')!r}"))
                return 2
            send(_run(torch, step, cmd, args, lanes_by_k))
        return 0  # stdin closed: the harness is gone, so stop
    except _Refused as exc:
        print(f"gpushare_protocol: {exc}", file=sys.stderr)
        send(error_message(str(exc)))
        return 2
    except Exception as exc:  # reported as a protocol error, with the traceback on stderr
        import traceback

        traceback.print_exc()
        send(error_message(f"{type(exc).__name__}: {exc}"))
        return 1
