"""A real model as a custom workload: a torchvision network with random weights (nothing is
downloaded), one batch per request, replayed from a CUDA graph unless --graph false.

  gpushare check -- python3 examples/torchvision_model.py --model resnet18
  gpushare bench --modes timeslice,mps -- python3 examples/torchvision_model.py --model resnet18

gpushare puts its helper, gpushare_protocol, on the workload's PYTHONPATH: no sys.path changes here.
"""

import sys

from gpushare_protocol import flag, forward_step, serve


def add_arguments(p):
    p.add_argument(
        "--model", default="resnet18", help="a torchvision.models constructor, e.g. resnet18, mobilenet_v3_small"
    )
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=224, help="image side, pixels")
    p.add_argument("--graph", type=flag, default=True)


def prepare():
    # Before CUDA: a prestarted client imports torchvision (6 s on an H100's host) while another comparison measures.
    import torchvision  # noqa: F401


def setup(args):
    import torch
    import torchvision

    torch.set_grad_enabled(False)
    model = getattr(torchvision.models, args.model)(weights=None).cuda().half().eval()
    x = torch.randn(args.batch, 3, args.size, args.size, device="cuda").half()
    return forward_step(torch, lambda: model(x), args.graph)


if __name__ == "__main__":
    # exit_at_once: the harness's exit command ends the process without Python's slow teardown of PyTorch.
    sys.exit(
        serve(
            "torchvision", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True, prepare=prepare
        )
    )
