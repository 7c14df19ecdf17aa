"""pipeline: chunks of --chunk-mib through host-to-device copy, compute, device-to-host copy.

The compute is --matmuls fp32 products of the chunk (as rows of 1024) with a fixed 1024×1024 matrix:
with enough of it, two streams hide the copies behind compute, the overlap streams exist for.

The variant's "pinned" picks page-locked or pageable host buffers; with pageable memory the
copies cannot overlap other work, whatever the number of streams. Pageable buffers exist only with
--pageable true (the harness then adds pageable arms).
"""

import sys

from gpushare_protocol import flag, serve

SLOTS = 4


def add_arguments(p):
    p.add_argument("--chunk-mib", type=int, default=16)
    p.add_argument("--matmuls", type=int, default=2, help="fp32 products per chunk (the compute)")
    p.add_argument("--pageable", type=flag, default=False, help="also allocate pageable host buffers")


def setup(args):
    import torch

    n = args.chunk_mib * 1024 * 1024 // 4
    host = {
        pinned: (
            [torch.randn(n).pin_memory() if pinned else torch.randn(n) for _ in range(SLOTS)],
            [torch.empty(n, pin_memory=pinned) for _ in range(SLOTS)],
        )
        for pinned in ((True, False) if args.pageable else (True,))
    }
    w = torch.randn(1024, 1024, device="cuda") / 32
    device = {}

    def step(i, lane, variant):
        src, dst = host[bool(variant.get("pinned", True))]
        if lane not in device:  # not setdefault: its default would allocate on every call
            device[lane] = (torch.empty(n, device="cuda"), torch.empty(n, device="cuda"))
        d, e = device[lane]
        d.copy_(src[i % SLOTS], non_blocking=True)
        a, b = d.view(-1, 1024), e.view(-1, 1024)
        for _ in range(args.matmuls):
            torch.mm(a, w, out=b)
            a, b = b, a
        dst[i % SLOTS].copy_(a.view(-1), non_blocking=True)

    return step


if __name__ == "__main__":
    sys.exit(serve("pipeline", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
