"""spin: kernels of --blocks thread blocks that each spin for --spin-us on the GPU's global timer."""

import sys

from gpushare_protocol import serve


def spin_kernel():
    """A Triton kernel spin[(blocks,)](out, ns, num_warps=1): each block spins ns on %globaltimer."""
    import triton
    import triton.language as tl

    @triton.jit
    def spin(out_ptr, ns):
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        now = start
        while now - start < ns:
            now = tl.inline_asm_elementwise(
                "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
            )
        tl.store(out_ptr + tl.program_id(0), now - start)

    return spin


def add_arguments(p):
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--spin-us", type=float, default=1000)


def setup(args):
    import torch

    spin = spin_kernel()
    out = torch.zeros(args.blocks, dtype=torch.int64, device="cuda")
    ns = int(args.spin_us * 1000)

    def step(i, lane, variant):
        spin[(args.blocks,)](out, ns, num_warps=1)

    return step


if __name__ == "__main__":
    sys.exit(serve("spin", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
