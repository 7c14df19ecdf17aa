"""Switching workloads in one process: release what this one built, then run the next one's script.

The next script calls serve() as any workload does. serve() runs each workload in turn in a loop
(loop.serve), so a process that switches a hundred times is one level deep, not a hundred: while a
switch runs a script, its serve() call is handed back to that loop (NextWorkload) instead of serving
inside the script. Code a switched-to script has after its serve() call therefore does not run."""

from __future__ import annotations

import gc
import os
import runpy
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Union

from .errors import Refused
from .tenants import Tenant, memory
from .wire import Message

if TYPE_CHECKING:
    from .loop import Call


class SwitchTo:
    """What serving one workload ended with when the harness said switch: the next one's argv."""

    def __init__(self, argv: List[str]) -> None:
        self.argv = argv


class NextWorkload(BaseException):
    """serve() called by the script a switch runs: unwinds that script to the loop, which serves the call.
    A BaseException, so that a script's own `except Exception` does not catch it."""

    def __init__(self, call: Call) -> None:
        super().__init__(call.name)
        self.call = call


class _State:
    """The process's switching so far: whether a workload has started (a switched-to one is never held),
    what the last one left when it was released, and whether a switch's script is running now."""

    def __init__(self) -> None:
        self.started = False
        self.released: Optional[Message] = None
        self.running_script = False


state = _State()


def release(torch: Any, name: str, tenants: List[Tenant], threads: bool, argv: object) -> SwitchTo:
    """Releases this workload (its steps, and with them its models, buffers and CUDA graphs; then the
    allocator's cache), noting what it held and what was left (state.released, for the next ready line)."""
    if threads:
        raise Refused("a process whose tenants run on threads does not switch workloads")
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        raise Refused(f"switch takes argv, a list of strings [script, args...], got {argv!r}")
    held, _ = memory(torch)
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
    left, _ = memory(torch)
    state.released = {"workload": name, "memoryReservedMiB": held, "leftMiB": left}
    return SwitchTo(list(argv))


def run_script(argv: List[str]) -> Union[Call, int]:
    """Runs the next workload's script ([script, args...]) as `python3 script.py args...` would, up to its
    serve() call, which it returns; or the script's exit status, where it ends without calling serve()."""
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))  # as `python3 script.py` would have it
    state.running_script = True
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except NextWorkload as handed:
        return handed.call
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        state.running_script = False
    return 0
