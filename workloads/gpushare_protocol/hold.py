"""A prestarted process (GPUSHARE_HOLD=1): it imports at a priority or on cores that leave the measuring
clients alone, says holding, and waits for start; and the cores a measuring process is pinned to."""

from __future__ import annotations

import json
import os
import sys
from typing import Callable, List

from .errors import Refused

HOLD_ENV = "GPUSHARE_HOLD"
CAP_SYS_NICE = 23


def pin() -> None:
    """Pins this process to GPUSHARE_CPUS (set by gpushare --cpu-pin auto), so clients never share a core."""
    cpus = os.environ.get("GPUSHARE_CPUS")
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def hold_begin() -> List[Callable[[], None]]:
    """A prestarted process (GPUSHARE_HOLD=1) imports while another comparison measures: on the cores
    GPUSHARE_HOLD_CPUS names (those the measuring clients do not use); else at a lower priority where
    that can be undone (root). Returns how to undo it, on every thread the process has by then."""
    undo: List[Callable[[], None]] = []
    cpus = os.environ.get("GPUSHARE_HOLD_CPUS")
    if cpus and hasattr(os, "sched_getaffinity"):
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
        undo.append(lambda: os.sched_setaffinity(0, before))
    elif hasattr(os, "geteuid") and os.geteuid() == 0 and has_cap_sys_nice():
        # Raising the priority back needs CAP_SYS_NICE: root in a container without it could lower it
        # and then fail its start with EPERM (seen on an H200 host with the capability dropped).
        priority = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, min(19, priority + 10))
        undo.append(lambda: every_thread(lambda tid: os.setpriority(os.PRIO_PROCESS, tid, priority)))
    return undo


def has_cap_sys_nice() -> bool:
    """Whether CAP_SYS_NICE is in effect: what undoing a lowered priority needs."""
    try:
        with open("/proc/self/status") as status:
            caps = next(int(text.split()[1], 16) for text in status if text.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        return False
    return bool(caps >> CAP_SYS_NICE & 1)


def every_thread(apply: Callable[[int], None]) -> None:
    """apply(tid) on each thread of this process (a priority is per thread in Linux: threads started
    during the imports or prepare inherited the hold's)."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            apply(tid)
        except ProcessLookupError:
            pass  # a thread that ended meanwhile


def await_start() -> bool:
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
        raise Refused(f"a held process (GPUSHARE_HOLD=1) takes start or exit first, got {cmd!r}")
    return False
