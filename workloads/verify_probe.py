"""verify_probe: the one measurement `gpushare verify` adds to the probe's roles (workloads/isolation.py).

  bandwidth  a device-to-device copy loop: after each {"cmd":"go"} on stdin it copies for --seconds and
             prints {"event":"result","gbps":…} (bytes read plus written per second, 1e9); {"cmd":"stop"}
             or EOF ends it. verify runs two under one MPS daemon: the neighbour alone, then beside a
             saturating client, to see what the neighbour loses (nothing partitions bandwidth).

JSON lines only on stdout (gpushare_protocol.emit); a CUDA error is {"event":"failed","error":…}, exit 1.
"""

import argparse
import json
import os
import sys

from gpushare_protocol import claim_stdout, emit, now_us


def bandwidth(args):
    import torch

    torch.cuda.init()
    n = args.mib << 20
    src = torch.ones(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    emit("ready", role="bandwidth", pid=os.getpid())
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        cmd = json.loads(line).get("cmd")
        if cmd == "stop":
            break
        if cmd != "go":
            continue
        t0, copies = now_us(), 0
        while now_us() - t0 < args.seconds * 1e6:
            for _ in range(8):
                dst.copy_(src)
            torch.cuda.synchronize()
            copies += 8
        seconds = (now_us() - t0) / 1e6
        emit("result", role="bandwidth", gbps=2 * n * copies / seconds / 1e9, seconds=seconds)
    return 0


def main():
    claim_stdout()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", choices=["bandwidth"])
    p.add_argument("--seconds", type=float, default=2.0, help="how long each measurement copies")
    p.add_argument("--mib", type=int, default=1024, help="size of the buffer copied, MiB")
    args = p.parse_args()
    try:
        code = bandwidth(args)
    except Exception as exc:  # a failure, reported as data
        text = str(exc).strip().splitlines()
        emit("failed", role=args.role, error=f"{type(exc).__name__}: {text[0] if text else ''}"[:300], atUs=now_us())
        code = 1
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
