"""The command line every workload shares, and how serve() reads its own arguments and setup."""

from __future__ import annotations

import argparse
import inspect
from typing import Callable, NoReturn, Optional, Sequence, Union

from .errors import Refused

Argv = Union[Sequence[str], argparse.Namespace, None]


def flag(text: str) -> bool:
    """An argparse type for true/false flags: --graph true, --graph false."""
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parser(description: Optional[str] = None) -> argparse.ArgumentParser:
    """The arguments the harness may pass every workload: --iterations, --sync-every, --warmup-ms."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=100, help="iterations of a fixed-work trial")
    p.add_argument("--sync-every", type=int, default=1, help="iterations between synchronizations in a window")
    p.add_argument("--warmup-ms", type=float, default=500, help="warm-up before ready")
    return p


def takes_args(setup: object, role: str = "setup") -> bool:
    """Whether setup (or prepare) wants the parsed arguments: setup() or setup(args), nothing else."""
    if not callable(setup):
        what = "a function that returns step" if role == "setup" else "a function"
        raise Refused(f"serve(name, setup): {role} must be {what}, got {type(setup).__name__}")
    try:
        params = inspect.signature(setup).parameters.values()
    except (TypeError, ValueError):
        return False  # a builtin or C callable: called without arguments
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.default is p.empty and p.kind in positional]
    if len(required) > 1:
        raise Refused(
            f"serve(name, setup): {role} must take no argument or one (the parsed arguments), "
            f"but {getattr(setup, '__name__', 'it')} takes {len(required)}"
        )
    return len(required) == 1


def arguments(
    argv: Argv,
    add_arguments: Optional[Callable[[argparse.ArgumentParser], object]],
    description: Optional[str],
    default: Sequence[str],
) -> argparse.Namespace:
    """The parsed arguments: the harness's (parser()) and the workload's own (add_arguments)."""
    if isinstance(argv, argparse.Namespace):
        return argv  # the old call form, serve(name, build, parser(...).parse_args())
    if argv is not None and (
        isinstance(argv, (str, bytes))
        or not isinstance(argv, (list, tuple))
        or not all(isinstance(a, str) for a in argv)
    ):
        raise Refused(
            f"serve(name, setup, argv): argv must be a list of command-line strings "
            f"(default sys.argv[1:]), not {type(argv).__name__}; declare your workload's own arguments "
            f"with serve(..., add_arguments=fn), where fn(parser) calls parser.add_argument"
        )
    given = list(default) if argv is None else list(argv)
    p = parser(description)
    if add_arguments is not None:
        add_arguments(p)

    def refuse(message: str) -> NoReturn:
        raise Refused(f"bad arguments {' '.join(given)!r}: {message}")

    p.error = refuse  # type: ignore[method-assign]  # one error line for the harness instead of argparse's exit
    return p.parse_args(given)
