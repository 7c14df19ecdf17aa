"""gemm: n×n matrix products of --dtype, optionally replayed from a CUDA graph (one per stream)."""

import sys

from gpushare_protocol import flag, graph_replay, serve


def add_arguments(p):
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    p.add_argument("--graph", type=flag, default=False)


def setup(args):
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    a = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
    b = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
    replays = {}  # one graph per stream lane, with the output buffer it writes into

    def step(i, lane, variant):
        if not args.graph:
            torch.matmul(a, b)
            return
        if lane not in replays:
            out = torch.empty(args.size, args.size, device="cuda", dtype=dtype)
            # Every replay writes into `out`: it must live as long as the graph, or the
            # allocator hands its memory to something else (an illegal address on 2 streams).
            replays[lane] = (graph_replay(torch, lambda: torch.matmul(a, b, out=out), warmups=1), out)
        replays[lane][0]()

    return step


if __name__ == "__main__":
    sys.exit(serve("gemm", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
