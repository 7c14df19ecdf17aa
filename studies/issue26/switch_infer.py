"""#26: does a process that ran spin and gemm first (a switch) run infer at another rate than a fresh one?

python3 studies/issue26/switch_infer.py fresh|switched  prints one JSON line: infer's iterations per second
in each of 8 windows of 250 ms (CUDA-graph replay, a sync per request, as the default suite runs it), after
building infer in a fresh process, or after spin and gemm were built, run and released in this one as
gpushare_protocol's switch does. Alternate the two modes over many processes to compare.
"""
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workloads"))
import gemm  # noqa: E402
import gpushare_protocol as g  # noqa: E402
import infer  # noqa: E402
import spin  # noqa: E402

ARGV = {
    spin: ["--blocks", "8", "--spin-us", "1000"],
    gemm: ["--size", "4096", "--dtype", "fp16", "--graph", "false"],
    infer: ["--model", "transformer", "--layers", "4", "--tokens", "128", "--batch", "8", "--hidden", "1024",
            "--graph", "true"],
}


def args_of(module):
    p = g.parser()
    module.add_arguments(p)
    return p.parse_args(ARGV[module])


def run_for(torch, step, seconds, sync=True):
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        step(i, 0, {"streams": 1, "pinned": True})
        if sync:
            torch.cuda.synchronize()
        i += 1
    torch.cuda.synchronize()
    return i


def main(mode):
    import torch

    torch.zeros(1, device="cuda")
    if mode == "switched":
        for module in (spin, gemm):
            step = module.setup(args_of(module))
            run_for(torch, step, 1.0, sync=False)
            del step
            gc.collect()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
    step = infer.setup(args_of(infer))
    run_for(torch, step, 1.0)
    rates = [run_for(torch, step, 0.25) / 0.25 for _ in range(8)]
    print(json.dumps({"mode": mode, "ratesPerS": rates, "reservedMiB": torch.cuda.memory_reserved() / 2**20}))


if __name__ == "__main__":
    main(sys.argv[1])
