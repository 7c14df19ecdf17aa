"""The loops a trial's window runs: closed (until a deadline, or a fixed amount of work) and open
(requests at arrival times the workload generates itself)."""

from __future__ import annotations

import random
import time
from typing import Any, List, Mapping, Sequence, Tuple, cast

from .shapes import Step, Variant
from .wire import now_us

FIXED_WORK_REPEATS = 3  # a fixed-work trial runs its work this many times and reports the median
# A one-lane window reads the host time of its steps on every 16th chunk (a clock read costs ~1 µs).
HOST_TIME_STRIDE = 16


def wait_until(t_us: float) -> None:
    while True:
        left = t_us - now_us()
        if left <= 0:
            return
        if left > 2000:
            time.sleep((left - 1000) / 1e6)  # sleep most of it, spin the last millisecond


class HostTime:
    """Host time spent inside step() calls: with tenants on threads of one process, it grows with
    the wait for Python's GIL, which is part of what in-process tenancy costs."""

    def __init__(self) -> None:
        self.ns, self.calls = 0, 0

    def step_us(self) -> float | None:
        return self.ns / self.calls / 1000 if self.calls else None


def enqueue(torch: Any, step: Step, lanes: Sequence[Any], variant: Variant, first: int, n: int, host: HostTime) -> None:
    """Enqueues iterations first..first+n-1, round-robin over the lanes (streams)."""
    for i in range(first, first + n):
        lane = i % len(lanes)
        with torch.cuda.stream(lanes[lane]):
            t0 = time.perf_counter_ns()
            step(i, lane, variant)
            host.ns += time.perf_counter_ns() - t0
        host.calls += 1


def fixed_work(torch: Any, step: Step, lanes: Sequence[Any], variant: Variant, target: int, host: HostTime) -> float:
    """GPU time of the fixed work, ms: the median of FIXED_WORK_REPEATS back-to-back runs, so one
    run slowed by something outside the workload (seen on H100: +20-50 ms in 1 of 5) does not count."""
    cur = torch.cuda.current_stream()
    times: List[float] = []
    for _ in range(FIXED_WORK_REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(cur)
        for s in lanes:
            s.wait_stream(cur)
        enqueue(torch, step, lanes, variant, 0, target, host)
        for s in lanes:
            cur.wait_stream(s)
        end.record(cur)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def window(
    torch: Any,
    step: Step,
    lanes: Sequence[Any],
    variant: Variant,
    deadline_us: float,
    sync_every: int,
    cap: int,
    host: HostTime,
) -> Tuple[int, float, List[float]]:
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
    done, latencies = 0, cast(List[float], [])
    if len(lanes) == 1:
        done = _one_lane(torch, step, lanes[0], variant, deadline_us, sync_every, cap, host, latencies)
    else:
        while True:
            ts = now_us()
            enqueue(torch, step, lanes, variant, done, sync_every, host)
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


def _one_lane(
    torch: Any,
    step: Step,
    lane: Any,
    variant: Variant,
    deadline_us: float,
    sync_every: int,
    cap: int,
    host: HostTime,
    latencies: List[float],
) -> int:
    """window() on one lane, its stream entered once: the requests done, latencies appended."""
    # Locals and integer nanoseconds: each attribute lookup and float division is paid per request.
    clock, sync, keep, room = time.monotonic_ns, lane.synchronize, latencies.append, cap
    deadline_ns, chunk, done = deadline_us * 1000.0, 0, 0
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
    return done


def arrivals(load: Mapping[str, Any], t0_us: float, end_us: float, seed: str, phase: float) -> List[float]:
    """The scheduled times of a window's requests, made here and not by the harness: constant spacing
    (shifted by `phase` of a gap, so clients do not fire together), or Poisson arrivals (exponential
    gaps) from a generator seeded by the trial and client, so a rerun repeats them and clients differ."""
    rng, gap_us = random.Random(seed), 1e6 / load["qps"]
    poisson = load["kind"] == "poisson"
    t = t0_us if poisson else t0_us - (1 - phase) * gap_us
    times: List[float] = []
    while True:
        t += rng.expovariate(1.0 / gap_us) if poisson else gap_us
        if t >= end_us:
            return times
        times.append(t)


def open_loop(
    torch: Any,
    step: Step,
    lanes: Sequence[Any],
    variant: Variant,
    t0_us: float,
    end_us: float,
    load: Mapping[str, Any],
    seed: str,
    phase: float,
    cap: int,
    host: HostTime,
) -> Tuple[int, int, List[float], float, float]:
    """One worker serving requests at their scheduled times: a request due while the one before is
    still running waits (a queue), and its latency counts from its scheduled time, so that wait counts
    too (no coordinated omission). The lags returned are the generator's own: how late requests started
    although the worker was idle when they were due (host wake-up, not queueing), as p99 and max."""
    latencies: List[float] = []
    lags: List[float] = []
    done, free_at = 0, t0_us
    due_times = arrivals(load, t0_us, end_us, seed, phase)
    give_up = end_us + (end_us - t0_us)  # a backlog longer than the window again is not served
    for due in due_times:
        if now_us() > give_up:
            break
        wait_until(due)
        start = now_us()
        if free_at <= due:
            lags.append((start - due) / 1000.0)
        enqueue(torch, step, lanes, variant, done, 1, host)
        for s in lanes:
            s.synchronize()
        free_at = now_us()
        done += 1
        if len(latencies) < cap:
            latencies.append((free_at - due) / 1000.0)
    lags.sort()
    p99 = lags[int(0.99 * (len(lags) - 1))] if lags else 0.0
    return done, len(due_times) - done, latencies, p99, (lags[-1] if lags else 0.0)
