"""serve(): one workload process from its first ready line to its exit, workload after workload where
the harness switches it."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Any, Callable, List, Optional, Sequence, Union

from . import cli, hold, switching, trial
from .errors import Refused, Unsupported
from .tenants import Tenant, built_step, env_tenants, make_tenants, memory, serve_tenants, start_threads, twin, warm_up
from .wire import LATENCY_CAP, error_message, flush_all, holding_message, ready_message, send


class Call:
    """One call of serve(): what to serve, as the workload's script asked."""

    def __init__(
        self,
        name: str,
        setup: Callable[..., object],
        argv: cli.Argv,
        add_arguments: Optional[Callable[[argparse.ArgumentParser], object]],
        description: Optional[str],
        exit_at_once: bool,
        prepare: Optional[Callable[..., object]],
    ) -> None:
        self.name, self.setup, self.argv = name, setup, argv
        self.add_arguments, self.description = add_arguments, description
        self.exit_at_once, self.prepare = exit_at_once, prepare


def serve(
    name: str,
    setup: Callable[..., object],
    argv: Union[Sequence[str], argparse.Namespace, None] = None,
    *,
    add_arguments: Optional[Callable[[argparse.ArgumentParser], object]] = None,
    description: Optional[str] = None,
    exit_at_once: bool = False,
    prepare: Optional[Callable[..., object]] = None,
) -> int:
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
    imports and CUDA context carry over; its ready line says what was released. The script's own
    serve() call is served by the first one's loop, so code after it in a switched-to script does
    not run.

    The old form serve(name, build, args), with args from parser().parse_args() and build() taking
    no argument, still works. Anything else that cannot work (argv that is not a list of strings, a
    setup taking two arguments, no PyTorch) is refused with an error line before anything is built.
    """
    call = Call(name, setup, argv, add_arguments, description, exit_at_once, prepare)
    if switching.state.running_script:
        raise switching.NextWorkload(call)  # a script a switch runs: the loop below serves it
    outcome: Union[int, switching.SwitchTo, Call] = _guarded(call)
    while not isinstance(outcome, int):
        outcome = _next_script(outcome.argv) if isinstance(outcome, switching.SwitchTo) else _guarded(outcome)
    return outcome


def _next_script(argv: List[str]) -> Union[int, Call]:
    """The next workload's serve() call, or its script's exit status; an error line if the script fails."""
    try:
        return switching.run_script(argv)
    except Exception as exc:  # the script failed before it called serve(): the workload's error
        return _failed(exc)


def _guarded(call: Call) -> Union[int, switching.SwitchTo]:
    """Serves one workload; what cannot work, or fails, is an error line and an exit status."""
    try:
        return _serve_one(call)
    except Refused as exc:
        print(f"gpushare_protocol: {exc}", file=sys.stderr)
        send(error_message(str(exc)))
        return 2
    except Unsupported as exc:
        print(f"gpushare_protocol: unsupported here: {exc}", file=sys.stderr)
        send(error_message(str(exc), unsupported=True))
        return 2
    except Exception as exc:
        return _failed(exc)


def _failed(exc: Exception) -> int:
    """An unexpected failure, reported as a protocol error, with the traceback on stderr."""
    traceback.print_exc()
    send(error_message(f"{type(exc).__name__}: {exc}"))
    return 1


def _leave(at_once: bool) -> int:
    """serve's end on the exit command: 0 to return, or, at once, the process's end with status 0."""
    if at_once:
        flush_all()
        os._exit(0)
    return 0


def _serve_one(call: Call) -> Union[int, switching.SwitchTo]:
    """One workload: arguments, imports (held where asked), tenants, warm-up, ready, then its commands."""
    from .wire import claim_stdout

    old_form = isinstance(call.argv, argparse.Namespace)
    # Before stdout is taken: --help prints there.
    args = cli.arguments(call.argv, call.add_arguments, call.description, sys.argv[1:])
    claim_stdout()
    setup_takes_args = cli.takes_args(call.setup) and not old_form
    prepare_takes_args = call.prepare is not None and cli.takes_args(call.prepare, "prepare") and not old_form
    count, green_pct = env_tenants()
    held = os.environ.get(hold.HOLD_ENV) == "1" and not switching.state.started  # a switched-to one starts at once
    undo = hold.hold_begin() if held else []
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError as exc:
        raise Refused(f"gpushare_protocol needs PyTorch built for CUDA (pip install torch): {exc}") from exc
    if call.prepare is not None:
        call.prepare(args) if prepare_takes_args else call.prepare()
    if held:
        send(holding_message(os.getpid()))
        if not hold.await_start():
            return _leave(call.exit_at_once)
    for restore in undo:
        restore()
    switching.state.started = True
    hold.pin()
    if not torch.cuda.is_available():
        raise Refused(
            "PyTorch sees no CUDA GPU (torch.cuda.is_available() is False): "
            f"check CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} and the driver"
        )

    def build() -> object:
        return call.setup(args) if setup_takes_args else call.setup()

    tenants, sms = make_tenants(torch, count, green_pct)
    for t in tenants:
        with t.entered(torch):
            t.step = built_step(build())
    torch.cuda.synchronize()
    warm_up(torch, tenants, args.warmup_ms)
    reserved, graphs = memory(torch)  # the tenants' own, before a green process's twin is built
    if green_pct is not None:
        tenants[0].whole = twin(torch, 0, build)
        warm_up(torch, [tenants[0].whole], args.warmup_ms / count)
    released, switching.state.released = switching.state.released, None
    device = torch.cuda.get_device_name()
    send(
        ready_message(
            call.name,
            os.getpid(),
            device,
            vars(args),
            tenants=count,
            memory_reserved_mib=reserved,
            graph_pool_mib=graphs,
            tenant_sms=sms,
            released=released,
        )
    )
    return _commands(torch, call, tenants, args)


def _commands(
    torch: Any, call: Call, tenants: List[Tenant], args: argparse.Namespace
) -> Union[int, switching.SwitchTo]:
    """The harness's commands to a ready workload, until exit, a switch, or stdin's end."""
    import json

    threads = False
    client = int(os.environ.get("GPUSHARE_CLIENT_INDEX", "0"))
    for text in iter(sys.stdin.readline, ""):
        if not text.strip():
            continue
        cmd = json.loads(text)
        kind = cmd.get("cmd")
        if kind == "exit":
            return _leave(call.exit_at_once)
        if kind == "switch":
            return switching.release(torch, call.name, tenants, threads, cmd.get("argv"))
        if kind != "run":
            send(error_message(f"unknown command {kind!r}"))
            return 2
        if "tenants" in cmd:
            if not threads:
                start_threads(torch, tenants)
                threads = True
            send(serve_tenants(torch, tenants, cmd, args))
            continue
        # A command naming no tenants (protocol 1 and 2): tenant 0, on this thread.
        torch.cuda.synchronize()
        phase = client / max(1, int(cmd.get("clients") or 1))
        with tenants[0].entered(torch):
            fields = trial.run(torch, tenants[0], cmd, args, f"{cmd['trial']}/{client}", phase, LATENCY_CAP)
        send({"event": "result", "trial": cmd["trial"], **fields})
    return 0  # stdin closed: the harness is gone, so stop
