"""A process's tenants: model instances, each with its CUDA stream, host thread and (green mode) green context."""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from . import trial
from .errors import Refused
from .shapes import Command, Step
from .wire import LATENCY_CAP, Message, now_us, tenants_result_message

TENANTS_ENV = "GPUSHARE_TENANTS"  # how many tenants (model instances) this process serves; 1 unless gpushare asks
GREEN_ENV = "GPUSHARE_GREEN_SM_PCT"  # set: each tenant in a green context of this share of the SMs, %, or "even"

GreenShare = Union[float, str, None]
"""GPUSHARE_GREEN_SM_PCT as read: a share in %, "even", or None (no green contexts)."""


class Tenant:
    """One model instance of the process: its step, its CUDA stream (lane 0) and, in the green mode,
    the green context it runs in. Its requests run on a host thread of its own."""

    def __init__(self, index: int, stream: Any, green: Any = None) -> None:
        self.index, self.stream, self.green = index, stream, green
        self.step: Optional[Step] = None
        # Its grad mode, as its own code left it (infer's setup turns it off): PyTorch keeps it per
        # thread, so each tenant's is applied wherever it runs, and one tenant's setup sets no other's.
        self.grad = True
        self.lanes_by_k: Dict[int, List[Any]] = {1: [stream]}
        self.jobs: queue.Queue[Callable[[], Message]] = queue.Queue()
        self.done: queue.Queue[Tuple[bool, Any]] = queue.Queue()
        # In the green mode, tenant 0's twin on the whole GPU: its own model and stream in the primary
        # context, on a thread of its own, for the arm every mode shares: one tenant alone on the whole GPU.
        self.whole: Optional[Tenant] = None

    def ready_step(self) -> Step:
        """Its step, which setup has returned by the time anything runs it."""
        if self.step is None:
            raise RuntimeError(f"tenant {self.index} has no step: its setup has not run")
        return self.step

    @contextlib.contextmanager
    def entered(self, torch: Any) -> Iterator[None]:
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

    def start_thread(self, torch: Any) -> None:
        """Its host thread: runs each job put on `jobs` with its context and stream current, answers on `done`."""

        def work() -> None:
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


def twin(torch: Any, index: int, build: Callable[[], object]) -> Tenant:
    """A green tenant's twin outside any green context: its own model (build(), as its setup) and stream in
    the primary context, current where this is called: every SM. It serves a run command whose variant says
    whole, the arm every mode shares (one tenant alone on the whole GPU). Not warmed up."""
    made = Tenant(index, torch.cuda.Stream())
    with made.entered(torch):
        made.step = built_step(build())
    return made


def built_step(step: object) -> Step:
    """What setup returned, refused unless it is a step(i, lane, variant)."""
    if not callable(step):
        raise Refused(f"setup must return step(i, lane, variant), but returned {type(step).__name__}")
    return step  # callable; its signature is the user's to get right


def serving(tenants: List[Tenant], active: List[int], cmd: Command) -> Dict[int, Tenant]:
    """The tenants a run command's `active` ones run as: their twins where its variant says whole."""
    if not (cmd.get("variant") or {}).get("whole"):
        return {k: tenants[k] for k in active}
    twins = {k: tenants[k].whole for k in active}
    found = {k: t for k, t in twins.items() if t is not None}
    if len(found) != len(twins):
        raise ValueError(
            f"the run command asks for tenants {active!r} alone on the whole GPU, but only green "
            f"tenants have twins there"
        )
    return found


def start_threads(torch: Any, tenants: List[Tenant]) -> None:
    """Each tenant's host thread, and its twin's where it has one."""
    for t in tenants + [t.whole for t in tenants if t.whole is not None]:
        t.start_thread(torch)


def make_tenants(torch: Any, count: int, green_pct: GreenShare) -> Tuple[List[Tenant], Optional[List[List[int]]]]:
    """The process's tenants, each with a stream of its own; in the green mode (green_pct not None:
    "even" or a share in %) in green contexts of their own SMs, checked disjoint on the GPU itself.
    Returns (tenants, the SM ids each ran on or None)."""
    if green_pct is None:
        return [Tenant(i, torch.cuda.Stream()) for i in range(count)], None
    from . import green  # only the green mode needs the driver's bindings and Triton

    share = None if green_pct == "even" else float(green_pct)
    contexts, total = green.green_contexts(torch, count, share)
    made = [Tenant(i, g.stream, g) for i, g in enumerate(contexts)]
    used = [green.sms_used(torch, t, total) for t in made]
    green.check_disjoint(made, used)
    return made, used


def env_tenants() -> Tuple[int, GreenShare]:
    """GPUSHARE_TENANTS (1 when unset) and GPUSHARE_GREEN_SM_PCT (None when unset), checked."""
    text = os.environ.get(TENANTS_ENV, "1")
    if not text.isdigit() or int(text) < 1:
        raise Refused(f"{TENANTS_ENV}={text!r}: expected a whole number of tenants, 1 or more")
    given = os.environ.get(GREEN_ENV)
    if given is None or given == "even":
        return int(text), given
    try:
        share = float(given)
    except ValueError:
        share = -1.0
    if not 0 < share <= 100:
        raise Refused(f"{GREEN_ENV}={given!r}: expected a share of the SMs in % (0-100] or even")
    return int(text), share


def memory(torch: Any) -> Tuple[float, Optional[float]]:
    """What the process's caching allocator holds (torch.cuda.memory_reserved), MiB, and the part in
    CUDA-graph pools (segments of a private pool), MiB; None where this PyTorch cannot say."""
    reserved: float = torch.cuda.memory_reserved() / 2**20
    try:
        segments = torch.cuda.memory_snapshot()
        if not all("segment_pool_id" in s for s in segments):
            return reserved, None
        pooled = sum(s["total_size"] for s in segments if tuple(s["segment_pool_id"]) != (0, 0))
        return reserved, pooled / 2**20
    except Exception:  # an allocator without snapshots: the reservation alone
        return reserved, None


def warm_up(torch: Any, tenants: List[Tenant], warmup_ms: float) -> None:
    """Each tenant in turn (CUDA-graph captures must not overlap), in its context and on its stream,
    at least 2 steps and its share of the warm-up time."""
    share_us = warmup_ms * 1000 / len(tenants)
    for t in tenants:
        step = t.ready_step()
        with t.entered(torch):
            t_end, i = now_us() + share_us, 0
            while i < 2 or now_us() < t_end:
                step(i, 0, {"streams": 1, "pinned": True})
                t.stream.synchronize()
                i += 1
    torch.cuda.synchronize()


def _job(
    torch: Any, t: Tenant, cmd: Command, args: argparse.Namespace, phase: float, cap: int
) -> Callable[[], Message]:
    """Tenant t's run of cmd, for its thread."""
    return lambda: trial.run(torch, t, cmd, args, f"{cmd['trial']}/{t.index}", phase, cap)


def serve_tenants(torch: Any, tenants: List[Tenant], cmd: Command, args: argparse.Namespace) -> Message:
    """A run command that names tenants: each runs it on its own thread, started together; one result."""
    active = cmd["tenants"]
    if (
        not isinstance(active, list)
        or not active
        or len(set(active)) != len(active)
        or not all(isinstance(k, int) and 0 <= k < len(tenants) for k in active)
    ):
        raise ValueError(
            f"the run command names tenants {active!r}, but this process has {len(tenants)} (0-{len(tenants) - 1})"
        )
    runs_as = serving(tenants, active, cmd)
    torch.cuda.synchronize()  # every tenant idle: no device-wide synchronization inside the window
    cap = max(100, LATENCY_CAP // len(active))
    for t in runs_as.values():
        t.jobs.put(_job(torch, t, cmd, args, t.index / len(tenants), cap))
    results = []
    for k in active:
        ok, value = runs_as[k].done.get()
        if not ok:
            raise value
        results.append({"tenant": k, **value})
    return tenants_result_message(cmd["trial"], results)
