"""A real model as a custom workload: a torchvision network with random weights (nothing is
downloaded), one batch per request, replayed from a CUDA graph unless --graph false.

  gpushare bench --modes timeslice,mps -- python3 examples/torchvision_model.py --model resnet18
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads"))
from gpushare_protocol import flag, forward_step, parser, serve  # noqa: E402


def build(args):
    def make():
        import torch
        import torchvision

        torch.set_grad_enabled(False)
        model = getattr(torchvision.models, args.model)(weights=None).cuda().half().eval()
        x = torch.randn(args.batch, 3, args.size, args.size, device="cuda").half()
        return forward_step(torch, lambda: model(x), args.graph)

    return make


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument("--model", default="resnet18", help="a torchvision.models constructor, e.g. resnet18, mobilenet_v3_small")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=224, help="image side, pixels")
    p.add_argument("--graph", type=flag, default=True)
    a = p.parse_args()
    sys.exit(serve(a.model, build(a), a))
