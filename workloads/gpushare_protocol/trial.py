"""One run command for one tenant: a timed window, fixed work, or an open-loop window, and its result's fields."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from . import loopcheck, windows
from .shapes import Command
from .wire import Message, now_us, result_fields

if TYPE_CHECKING:
    from .tenants import Tenant


def run(
    torch: Any, tenant: Tenant, cmd: Command, args: argparse.Namespace, seed: str, phase: float, cap: int
) -> Message:
    """One run command for one tenant, on its thread with its stream current: a timed window, fixed
    work, or an open-loop window; the fields of its result."""
    step = tenant.ready_step()
    variant = cmd.get("variant") or {}
    k = int(variant.get("streams", 1))
    lanes = tenant.lanes_by_k.setdefault(k, [torch.cuda.Stream() for _ in range(k)])
    duration_ms: float = cmd.get("durationMs") or 0.0
    host = windows.HostTime()
    windows.wait_until(cmd["startAtUs"])
    t0 = now_us()
    if cmd.get("load"):
        end = t0 + duration_ms * 1000
        done, dropped, latencies, lag_p99, lag_max = windows.open_loop(
            torch, step, lanes, variant, t0, end, cmd["load"], seed, phase, cap, host
        )
        # The window lasts until its end even when the last request was served before it: a result
        # sent earlier would claim a window that had not ended yet.
        windows.wait_until(end)
        return result_fields(
            t0,
            now_us(),
            done,
            0.0,
            latencies,
            1,
            schedule_lag_ms=lag_p99,
            schedule_lag_max_ms=lag_max,
            dropped_requests=dropped,
            step_host_us=host.step_us(),
        )
    if duration_ms:
        deadline = t0 + duration_ms * 1000
        done, gpu_ms, latencies = windows.window(torch, step, lanes, variant, deadline, args.sync_every, cap, host)
        fields = result_fields(t0, now_us(), done, gpu_ms, latencies, args.sync_every, step_host_us=host.step_us())
    else:
        done = cmd.get("iterations") or args.iterations
        gpu_ms = windows.fixed_work(torch, step, lanes, variant, done, host)
        fields = result_fields(t0, now_us(), done, gpu_ms, [], done, step_host_us=host.step_us())
    if cmd.get("loopCheckMs"):
        # After the window, so it measures nothing of it: the harness asks where this process runs alone.
        with torch.cuda.stream(lanes[0]):
            fields["loopOverhead"] = loopcheck.loop_overhead(
                torch,
                step,
                {**variant, "streams": 1},
                args.sync_every,
                float(cmd["loopCheckMs"]),
                float(duration_ms or loopcheck.LOOP_CHECK_WINDOW_MS),
            )
    return fields
