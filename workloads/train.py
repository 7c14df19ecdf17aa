"""train: one training step of a small transformer encoder per iteration (forward, backward, AdamW), bf16 autocast."""

import sys

from gpushare_protocol import serve


def add_arguments(p):
    p.add_argument("--layers", type=int, default=4, help="transformer encoder layers")
    p.add_argument("--hidden", type=int, default=1024, help="model width")
    p.add_argument("--tokens", type=int, default=256, help="tokens per sequence")
    p.add_argument("--batch", type=int, default=16, help="sequences per step")


def setup(args):
    import torch

    h = args.hidden
    layers = (torch.nn.TransformerEncoderLayer(h, 8, 4 * h, batch_first=True) for _ in range(args.layers))
    model = torch.nn.Sequential(*layers).cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.tokens, h, device="cuda")

    def step(i, lane, variant):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


if __name__ == "__main__":
    sys.exit(serve("train", setup, add_arguments=add_arguments, description=__doc__, exit_at_once=True))
