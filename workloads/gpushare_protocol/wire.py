"""The protocol on the wire: the private handle on stdout, the clock, and the messages a workload prints."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, TextIO

# 3 adds tenants (GPUSHARE_TENANTS) and green contexts; 2 added open-loop load; the harness still accepts 1 and 2.
PROTOCOL = 3
# Latencies kept per trial, all tenants together: a result line stays well under the harness's 1 MiB limit.
LATENCY_CAP = 20000

Message = Dict[str, Any]

_out: Optional[TextIO] = None  # the private handle on the real stdout, once serve() (or the first emit) has taken it


def claim_stdout() -> TextIO:
    """Keeps a private handle on stdout for protocol lines and sends fd 1 (library prints, C-level
    output) to stderr, which the harness keeps. serve() does this; idempotent."""
    global _out
    if _out is None:
        sys.stdout.flush()
        _out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _out


def flush_all() -> None:
    """Flushes the protocol's handle and Python's own streams (before os._exit)."""
    for stream in (_out, sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def now_us() -> float:
    return time.monotonic_ns() / 1000.0


def line(message: Mapping[str, Any]) -> str:
    """One protocol line: compact JSON, no NaN or infinity (the harness refuses them)."""
    return json.dumps(message, allow_nan=False, separators=(",", ":"))


def _json_value(value: object) -> object:
    """A parameter as JSON can carry it: numbers, text, booleans and null as they are, anything else as text."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return str(value)


def ready_message(
    name: str,
    pid: int,
    device: Optional[str],
    params: Mapping[str, object],
    tenants: int = 1,
    memory_reserved_mib: Optional[float] = None,
    graph_pool_mib: Optional[float] = None,
    tenant_sms: Optional[List[List[int]]] = None,
    released: Optional[Message] = None,
) -> Message:
    """The line a workload prints once built and warmed up: its name, pid, device and parameters; the
    tenants it built; what its allocator holds (MiB, graph pools too); the SMs each green tenant ran on;
    after a switch, what the previous workload held and what was left once it was released (MiB)."""
    message: Message = {
        "event": "ready",
        "protocol": PROTOCOL,
        "workload": name,
        "pid": pid,
        "device": device,
        "params": {k: _json_value(v) for k, v in params.items()},
        "tenants": tenants,
        "memoryReservedMiB": memory_reserved_mib,
        "graphPoolMiB": graph_pool_mib,
        "holds": True,  # serve() waits for start when started with GPUSHARE_HOLD=1 (see hold.await_start)
        "switches": True,  # serve() takes {"cmd":"switch","argv":[...]} (see switching)
    }
    if tenant_sms is not None:
        message["tenantSms"] = tenant_sms
    if released is not None:
        message["released"] = released
    return message


def result_fields(
    window_start_us: float,
    window_end_us: float,
    iterations: int,
    gpu_ms: float,
    latencies_ms: List[float],
    chunk_iterations: int,
    schedule_lag_ms: Optional[float] = None,
    schedule_lag_max_ms: Optional[float] = None,
    dropped_requests: Optional[int] = None,
    step_host_us: Optional[float] = None,
) -> Message:
    """What one window measured (of the process, or of one tenant). The open-loop fields (schedule
    lag, dropped requests) only with a load; step_host_us: host time of one step() call, mean, µs."""
    fields: Message = {
        "windowStartUs": window_start_us,
        "windowEndUs": window_end_us,
        "iterations": iterations,
        "gpuMs": gpu_ms,
        "latenciesMs": latencies_ms,
        "chunkIterations": chunk_iterations,
    }
    optional = (
        ("scheduleLagMs", schedule_lag_ms),
        ("scheduleLagMaxMs", schedule_lag_max_ms),
        ("droppedRequests", dropped_requests),
        ("stepHostUs", step_host_us),
    )
    for key, value in optional:
        if value is not None:
            fields[key] = value
    return fields


def result_message(
    trial: str,
    window_start_us: float,
    window_end_us: float,
    iterations: int,
    gpu_ms: float,
    latencies_ms: List[float],
    chunk_iterations: int,
    schedule_lag_ms: Optional[float] = None,
    schedule_lag_max_ms: Optional[float] = None,
    dropped_requests: Optional[int] = None,
    step_host_us: Optional[float] = None,
) -> Message:
    """The answer to one run command that names no tenants."""
    fields = result_fields(
        window_start_us,
        window_end_us,
        iterations,
        gpu_ms,
        latencies_ms,
        chunk_iterations,
        schedule_lag_ms,
        schedule_lag_max_ms,
        dropped_requests,
        step_host_us,
    )
    return {"event": "result", "trial": trial, **fields}


def tenants_result_message(trial: str, tenants: List[Message]) -> Message:
    """The answer to a run command that names tenants: one entry per tenant ({"tenant": k, **its
    result_fields}) and, at the top, the process as a whole (its span, iterations and GPU time)."""
    whole = result_fields(
        min(t["windowStartUs"] for t in tenants),
        max(t["windowEndUs"] for t in tenants),
        sum(t["iterations"] for t in tenants),
        sum(t["gpuMs"] for t in tenants),
        [],
        1,
    )
    return {"event": "result", "trial": trial, **whole, "tenants": tenants}


def holding_message(pid: int) -> Message:
    """What a held process (GPUSHARE_HOLD=1) prints once it has imported (and run prepare), as it
    waits for start: the harness may then prestart another process on the core it imported on."""
    return {"event": "holding", "pid": pid}


def error_message(text: str, unsupported: bool = False) -> Message:
    """What a workload says before it exits non-zero: one line the harness shows as the reason.
    unsupported: this machine cannot run what was asked (the harness then skips, not fails)."""
    return {"event": "error", "message": text, **({"unsupported": True} if unsupported else {})}


def send(message: Mapping[str, Any]) -> None:
    """Prints one protocol message on the real stdout (taking it first if serve() has not)."""
    out = claim_stdout()
    out.write(line(message) + "\n")
    out.flush()


def emit(event: str, **fields: Any) -> None:
    """send({"event": event, **fields}): for roles that print their own events (workloads/isolation.py)."""
    send({"event": event, **fields})
