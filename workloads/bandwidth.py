"""bandwidth: a streaming copy between two device buffers far larger than L2 (memory-bandwidth bound)."""

import sys

from gpushare_protocol import serve


def add_arguments(p):
    # 1 GiB each: 20× the H100's 50 MB L2, so every copy streams from and to HBM.
    p.add_argument("--mib", type=int, default=1024, help="size of each of the two buffers, MiB")


def setup(args):
    import torch

    n = args.mib * 1024 * 1024 // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)

    def step(i, lane, variant):
        dst.copy_(src)

    return step


if __name__ == "__main__":
    sys.exit(serve("bandwidth", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
