"""infer: one small-batch forward pass of a small transformer encoder or MLP (random fp16 weights) per iteration."""

import sys

from gpushare_protocol import flag, forward_step, serve


def add_arguments(p):
    p.add_argument("--model", choices=["mlp", "transformer"], default="transformer")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4, help="transformer layers")
    p.add_argument("--tokens", type=int, default=128, help="tokens per sequence (transformer)")
    p.add_argument("--graph", type=flag, default=False)


def setup(args):
    import torch

    torch.set_grad_enabled(False)
    h = args.hidden
    if args.model == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(h, 4 * h), torch.nn.GELU(), torch.nn.Linear(4 * h, h))
        x = torch.randn(args.batch, h)
    else:
        layers = (torch.nn.TransformerEncoderLayer(h, 8, 4 * h, batch_first=True) for _ in range(args.layers))
        model = torch.nn.Sequential(*layers)
        x = torch.randn(args.batch, args.tokens, h)
    model = model.cuda().half().eval()
    x = x.cuda().half()
    return forward_step(torch, lambda: model(x), args.graph)


if __name__ == "__main__":
    sys.exit(serve("infer", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
