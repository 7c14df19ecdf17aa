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
directory that holds this package (workloads/ of gpushare) on the workload's PYTHONPATH, so the
import works without touching sys.path; `gpushare check --print-helper-path` prints that directory,
for running the script yourself or pointing an editor or type checker at it (the package is typed:
py.typed).

In-process tenancy comes for free: when gpushare asks for N tenants (GPUSHARE_TENANTS=N, in the
streams and green modes), serve() calls setup N times, one model instance per tenant, each on a CUDA
stream and a host thread of its own (with GPUSHARE_GREEN_SM_PCT, each in a green context of its own
SMs), and serves every tenant's requests as the harness asks.

Needs PyTorch built for CUDA (imported when serve runs, never at import). Importing this module has
no side effect: serve() takes stdout for the protocol when it starts, and from then on anything else
printed (by your code, a library, C code) goes to stderr, which gpushare keeps in the run directory.

The protocol itself (JSON lines on stdout, commands on stdin) is in protocol.schema.json beside this
package (generated from the harness's own definitions); any language can speak it. Times are
CLOCK_MONOTONIC microseconds (time.monotonic_ns() / 1000), comparable across processes.

The modules, one concern each: wire (the messages and stdout), cli (arguments), graphs (CUDA graph
capture), windows (a trial's loops), loopcheck (the loop-overhead check), trial (one run command),
tenants, green (green contexts), hold (prestarted processes), switching, and loop (serve itself).
"""

from .cli import flag, parser
from .errors import Unsupported
from .graphs import forward_step, graph_replay
from .green import SMID_SPIN_NS
from .hold import HOLD_ENV
from .loop import serve
from .loopcheck import LOOP_CHECK_PAIRS, LOOP_CHECK_WINDOW_MS
from .shapes import Step, Variant
from .tenants import GREEN_ENV, TENANTS_ENV
from .windows import FIXED_WORK_REPEATS, HOST_TIME_STRIDE
from .wire import (
    LATENCY_CAP,
    PROTOCOL,
    claim_stdout,
    emit,
    error_message,
    holding_message,
    line,
    now_us,
    ready_message,
    result_fields,
    result_message,
    send,
    tenants_result_message,
)

__all__ = [
    "FIXED_WORK_REPEATS",
    "GREEN_ENV",
    "HOLD_ENV",
    "HOST_TIME_STRIDE",
    "LATENCY_CAP",
    "LOOP_CHECK_PAIRS",
    "LOOP_CHECK_WINDOW_MS",
    "PROTOCOL",
    "SMID_SPIN_NS",
    "TENANTS_ENV",
    "Step",
    "Unsupported",
    "Variant",
    "claim_stdout",
    "emit",
    "error_message",
    "flag",
    "forward_step",
    "graph_replay",
    "holding_message",
    "line",
    "now_us",
    "parser",
    "ready_message",
    "result_fields",
    "result_message",
    "send",
    "serve",
    "tenants_result_message",
]
