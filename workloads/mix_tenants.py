"""mix_tenants: a latency-critical victim and an aggressor in one process, for gpushare mix's in-process modes.

Tenant 0 is the victim, tenant 1 the aggressor, each built by its own workload script's setup (a built-in
of workloads/, with the arguments the harness gives) on a CUDA stream and a host thread of its own:

- without GPUSHARE_GREEN_SM_PCT (streams), the victim's stream has the highest priority the device
  offers (torch.cuda.Stream(priority=-1)) and the aggressor's the default;
- with it (green), each tenant runs in a green context of its own SMs (gpushare_protocol's split), and
  has a twin outside any green context for its alone windows (variant whole): alone on the whole GPU,
  the baseline every mode shares.

A run command names the tenants it releases (protocol 3); unlike serve(), it may give each tenant its
own load ("tenantLoads": {"0": {"kind", "qps"}}): the victim open-loop, the aggressor flat out (no load).
Everything else (the timing of windows, open-loop arrivals, green contexts, the messages) is
gpushare_protocol's own, unchanged.
"""

import argparse
import importlib.util
import json
import os
import sys

import gpushare_protocol as gp
from gpushare_protocol import tenants as gt
from gpushare_protocol import trial


def _side(text, what):
    """A side given as a JSON list: the workload script's path, then its arguments."""
    argv = json.loads(text)
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"--{what}: expected a JSON list of the script's path and its arguments, got {text!r}")
    script, args = argv[0], argv[1:]
    spec = importlib.util.spec_from_file_location(f"gpushare_mix_{what}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    p = gp.parser(module.__doc__)
    if hasattr(module, "add_arguments"):
        module.add_arguments(p)
    return module, p.parse_args(args)


def _tenants(torch):
    """The two tenants, and the SMs each ran on (green) or None."""
    green = os.environ.get(gp.GREEN_ENV)
    if green is not None:
        return gt.make_tenants(torch, 2, "even" if green == "even" else float(green))
    return [gt.Tenant(0, torch.cuda.Stream(priority=-1)), gt.Tenant(1, torch.cuda.Stream())], None


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--victim", required=True, help="JSON list: the victim's script and its arguments")
    p.add_argument("--aggressor", required=True, help="JSON list: the aggressor's script and its arguments")
    p.add_argument("--warmup-ms", type=float, default=500)
    a = p.parse_args()
    gp.claim_stdout()
    try:
        sides = [_side(a.victim, "victim"), _side(a.aggressor, "aggressor")]
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA GPU (torch.cuda.is_available() is False)")
        tenants, sms = _tenants(torch)
        for t, (module, args) in zip(tenants, sides):
            with t.entered(torch):
                t.step = module.setup(args)
        torch.cuda.synchronize()
        gt.warm_up(torch, tenants, a.warmup_ms)
        reserved, graphs = gt.memory(torch)  # the tenants' own, before green's twins are built
        if sms is not None:
            # Green: each tenant's twin outside any green context, for its alone windows on the whole GPU
            # (a run command whose variant says whole), the baseline every mode shares.
            for t, (module, args) in zip(tenants, sides):
                t.whole = gt.twin(torch, t.index, lambda module=module, args=args: module.setup(args))
            gt.warm_up(torch, [t.whole for t in tenants], a.warmup_ms)
        gp.send(
            gp.ready_message(
                "mix_tenants",
                os.getpid(),
                torch.cuda.get_device_name(),
                {},
                tenants=2,
                memory_reserved_mib=reserved,
                graph_pool_mib=graphs,
                tenant_sms=sms,
            )
        )
        gt.start_threads(torch, tenants)
        for text in iter(sys.stdin.readline, ""):
            if not text.strip():
                continue
            cmd = json.loads(text)
            if cmd.get("cmd") == "exit":
                return 0
            active, loads = cmd.get("tenants") or [0], cmd.get("tenantLoads") or {}
            chosen = gt.serving(tenants, active, cmd)
            torch.cuda.synchronize()  # both idle: no device-wide synchronization inside the window
            for k in active:
                t, args = chosen[k], sides[k][1]
                sub = dict(cmd, load=loads.get(str(k)))
                seed = f"{cmd['trial']}/{t.index}"
                t.jobs.put(
                    lambda t=t, sub=sub, args=args, seed=seed: trial.run(
                        torch, t, sub, args, seed, t.index / 2, gp.LATENCY_CAP // 2
                    )
                )
            results = []
            for k in active:
                ok, value = chosen[k].done.get()
                if not ok:
                    raise value
                results.append({"tenant": k, **value})
            gp.send(gp.tenants_result_message(cmd["trial"], results))
        return 0
    except gp.Unsupported as exc:
        print(f"mix_tenants: unsupported here: {exc}", file=sys.stderr)
        gp.send(gp.error_message(str(exc), unsupported=True))
        return 2
    except Exception as exc:  # reported as a protocol error, with the traceback on stderr
        import traceback

        traceback.print_exc()
        gp.send(gp.error_message(f"{type(exc).__name__}: {exc}"))
        return 1


if __name__ == "__main__":
    sys.exit(main())
