"""pipeline: chunks of --chunk-mib through host-to-device copy, compute, device-to-host copy.

The variant's "pinned" picks page-locked or pageable host buffers; with pageable memory the
copies cannot overlap other work, whatever the number of streams.
"""
import sys

from gpushare_protocol import parser, serve

SLOTS = 4


def build(args):
    def make():
        import torch

        n = args.chunk_mib * 1024 * 1024 // 4
        host = {
            pinned: ([torch.randn(n).pin_memory() if pinned else torch.randn(n) for _ in range(SLOTS)],
                     [torch.empty(n, pin_memory=pinned) for _ in range(SLOTS)])
            for pinned in (True, False)
        }
        device = {}

        def step(i, lane, variant):
            src, dst = host[bool(variant.get("pinned", True))]
            d = device.setdefault(lane, torch.empty(n, device="cuda"))
            d.copy_(src[i % SLOTS], non_blocking=True)
            d.mul_(1.0001).add_(0.5).sin_()
            dst[i % SLOTS].copy_(d, non_blocking=True)

        return step

    return make


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument("--chunk-mib", type=int, default=16)
    a = p.parse_args()
    sys.exit(serve("pipeline", build(a), a))
