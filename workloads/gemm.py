"""gemm: n×n matrix products of --dtype, optionally replayed from a CUDA graph (one per stream)."""
import sys

from gpushare_protocol import flag, parser, serve


def build(args):
    def make():
        import torch

        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
        a = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
        b = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
        graphs = {}

        def graph_for(lane):
            if lane not in graphs:
                out = torch.empty(args.size, args.size, device="cuda", dtype=dtype)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    torch.matmul(a, b, out=out)  # warm cuBLAS outside the capture
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    torch.matmul(a, b, out=out)
                graphs[lane] = g
            return graphs[lane]

        def step(i, lane, variant):
            if args.graph:
                graph_for(lane).replay()
            else:
                torch.matmul(a, b)

        return step

    return make


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    p.add_argument("--graph", type=flag, default=False)
    a = p.parse_args()
    sys.exit(serve("gemm", build(a), a))
