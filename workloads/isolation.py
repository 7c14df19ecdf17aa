"""isolation: the roles `gpushare probe` plays to test what breaks when processes share a GPU.

Each role prints JSON lines only (gpushare_protocol.emit): {"event":"ready",...} once set up, replies
to commands, and {"event":"result",...} at the end; a CUDA error becomes {"event":"failed","error":…}
and exit 1. Long-running roles read commands on stdin: {"cmd":"alloc","mib":N}, {"cmd":"status"},
{"cmd":"stop"} (EOF means stop).

  tenant     keeps the GPU busy with spin kernels; answers alloc and status while it runs
  hog        tries allocations of given sizes, then allocates until OOM and holds it
  faulter    launches a kernel that writes to an illegal address
  context    creates a CUDA context through the driver API (no PyTorch): time and memory
  latency    open-loop short requests on a schedule; latency counted from each scheduled time
  smcap      the SMs this process sees and the fp16 GEMM rate it reaches
  trap       K streams with and without one synchronous copy on the default stream
  priority   a short request's latency beside a full-GPU background stream, at normal and high priority
  greenctx   the same, with the background confined to a green context of fewer SMs
"""

import argparse
import ctypes
import json
import os
import queue
import sys
import threading
import time

from gpushare_protocol import claim_stdout, emit, now_us


def commands():
    """Commands from stdin on a queue; EOF is a stop."""
    q = queue.Queue()

    def read():
        for line in iter(sys.stdin.readline, ""):
            if line.strip():
                q.put(json.loads(line))
        q.put({"cmd": "stop"})

    threading.Thread(target=read, daemon=True).start()
    return q


def cuda():
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    return torch


def spin_kernel():
    from spin import spin_kernel as make

    return make()


def try_alloc(torch, mib):
    try:
        t = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
        t.fill_(1)
        torch.cuda.synchronize()
        del t
        torch.cuda.empty_cache()
        return {"ok": True, "error": None}
    except Exception as exc:  # OOM (or a CUDA error): the reply says which
        return {"ok": False, "error": first_line(exc)}


def first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def tenant(args):
    torch = cuda()
    spin = spin_kernel()
    out = torch.zeros(args.blocks, dtype=torch.int64, device="cuda")
    ns = int(args.spin_us * 1000)
    q = commands()
    emit("ready", role="tenant", pid=os.getpid(), sms=torch.cuda.get_device_properties(0).multi_processor_count)
    t0, kernels = now_us(), 0
    while True:
        for _ in range(args.batch):
            spin[(args.blocks,)](out, ns, num_warps=1)
        torch.cuda.synchronize()
        kernels += args.batch
        if not q.empty():  # one command per batch: two status replies are a batch of kernels apart
            cmd = q.get()
            if cmd["cmd"] == "alloc":
                emit("alloc", mib=cmd["mib"], **try_alloc(torch, cmd["mib"]))
            elif cmd["cmd"] == "status":
                emit("status", kernels=kernels, atUs=now_us())
            elif cmd["cmd"] == "stop":
                elapsed_s = (now_us() - t0) / 1e6
                emit(
                    "result",
                    role="tenant",
                    kernels=kernels,
                    elapsedS=elapsed_s,
                    blockUsPerS=kernels * args.blocks * args.spin_us / elapsed_s,
                )
                return 0


def hog(args):
    torch = cuda()
    q = commands()
    emit("ready", role="hog", pid=os.getpid())
    tries = [{"mib": mib, **try_alloc(torch, mib)} for mib in args.try_mib]
    # Big chunks first, then small ones: what is left free at the end is under one small chunk.
    held, error, chunk = [], None, args.chunk_mib
    while sum(t.numel() for t in held) < args.max_mib << 20:
        try:
            t = torch.empty(chunk << 20, dtype=torch.uint8, device="cuda")
            t.fill_(1)
            held.append(t)
        except Exception as exc:
            error = first_line(exc)
            if chunk <= 64:
                break
            chunk = 64
    torch.cuda.synchronize()
    emit("result", role="hog", tries=tries, heldMib=sum(t.numel() for t in held) / 2**20, error=error)
    while q.get()["cmd"] != "stop":
        pass
    return 0


def faulter(args):
    import triton
    import triton.language as tl

    @triton.jit
    def poke(ptr, offset):
        tl.store(ptr + offset, 1)

    torch = cuda()
    emit("ready", role="faulter", pid=os.getpid())
    x = torch.zeros(1, dtype=torch.int32, device="cuda")
    t0 = now_us()
    poke[(1,)](x, 1 << 42)
    torch.cuda.synchronize()
    emit("result", role="faulter", faulted=False, error=None, atUs=t0)
    return 0


def infault(args):
    """Tenants of one process, each spinning kernels on its own stream and thread, while one more
    thread of the same process makes an illegal address: which tenants still run after it. A CUDA
    fault is sticky for the context, and the process has one: none is expected to survive."""
    import triton
    import triton.language as tl

    @triton.jit
    def poke(ptr, offset):
        tl.store(ptr + offset, 1)

    torch = cuda()
    spin = spin_kernel()
    n, ns = args.tenants, int(args.spin_us * 1000)
    streams = [torch.cuda.Stream() for _ in range(n)]
    outs = [torch.zeros(args.blocks, dtype=torch.int64, device="cuda") for _ in range(n)]
    kernels, errors, stop = [0] * n, [None] * n, threading.Event()

    def tenant(k):
        torch.cuda.set_stream(streams[k])
        try:
            while not stop.is_set():
                spin[(args.blocks,)](outs[k], ns, num_warps=1)
                streams[k].synchronize()
                kernels[k] += 1
            # Stopped without an error of its own: one more kernel says whether it still runs.
            spin[(args.blocks,)](outs[k], ns, num_warps=1)
            streams[k].synchronize()
        except Exception as exc:
            errors[k] = first_line(exc)

    threads = [threading.Thread(target=tenant, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while min(kernels) == 0 and time.monotonic() < deadline and not any(errors):
        time.sleep(0.01)
    emit("ready", role="infault", pid=os.getpid(), tenants=n, running=sum(1 for k in kernels if k > 0))
    x = torch.zeros(1, dtype=torch.int32, device="cuda")
    side = torch.cuda.Stream()
    faulter_error = None
    try:
        with torch.cuda.stream(side):
            poke[(1,)](x, 1 << 42)
        side.synchronize()
    except Exception as exc:
        faulter_error = first_line(exc)
    time.sleep(1)  # the tenants' next synchronizations meet the fault, or run on
    stop.set()
    for t in threads:
        t.join(timeout=10)
    victims = [
        {
            "survived": errors[k] is None and not threads[k].is_alive(),
            "error": errors[k] if errors[k] is not None else ("stopped answering" if threads[k].is_alive() else None),
        }
        for k in range(n)
    ]
    emit("result", role="infault", faulterError=faulter_error, victims=victims)
    return 0


def context(args):
    cu = ctypes.CDLL("libcuda.so.1")
    q = commands()

    def check(status, what):
        if status != 0:
            name, text = ctypes.c_char_p(), ctypes.c_char_p()
            cu.cuGetErrorName(status, ctypes.byref(name))
            cu.cuGetErrorString(status, ctypes.byref(text))
            raise RuntimeError(f"{what}: {(name.value or b'?').decode()} ({(text.value or b'').decode()})")

    t0 = now_us()
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    check(cu.cuInit(0), "cuInit")
    t_init = now_us()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    # The first allocation finishes the context's lazy set-up (and, under MPS, the server's connection).
    check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)), "cuMemAlloc")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    init_ms, create_ms = (t_init - t0) / 1000, (now_us() - t_init) / 1000
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
    emit(
        "ready",
        role="context",
        pid=os.getpid(),
        initMs=init_ms,
        createMs=create_ms,
        freeMib=free.value / 2**20,
        totalMib=total.value / 2**20,
    )
    while q.get()["cmd"] != "stop":
        pass
    emit("result", role="context", createMs=create_ms)
    return 0


def latency(args):
    torch = cuda()
    x = torch.zeros(1, device="cuda")
    stream = torch.cuda.Stream()
    for _ in range(20):
        with torch.cuda.stream(stream):
            x.add_(1)
        stream.synchronize()
    q = commands()
    emit("ready", role="latency", pid=os.getpid())
    if q.get()["cmd"] != "go":
        return 0
    lat, late = schedule(args, lambda: request(torch, stream, x))
    emit("result", role="latency", latenciesMs=lat, lateRequests=late, periodMs=args.period_ms)
    while q.get()["cmd"] != "stop":
        pass
    return 0


def request(torch, stream, x):
    with torch.cuda.stream(stream):
        x.add_(1)
    stream.synchronize()


def schedule(args, send, between=None):
    """Open loop: request i is due at t0 + i·period; latency counts from that time, not from when it
    was sent, so a request delayed by the one before it still counts its wait (no coordinated omission)."""
    period_us = args.period_ms * 1000
    if between is not None:
        between()
    t0 = now_us() + 10_000
    lat, late = [], 0
    for i in range(args.requests):
        due = t0 + i * period_us
        if between is not None:
            between()
        while (left := due - now_us()) > 0:
            if between is not None:
                between()  # keep the background fed while waiting, not only once per request
                time.sleep(max(0, min(left, 200)) / 1e6)
            elif left > 1500:
                time.sleep((left - 1000) / 1e6)
        late += now_us() - due > period_us  # sent over a period after it was due: the generator fell behind
        send()
        lat.append((now_us() - due) / 1000)
    return lat, late


def smcap(args):
    torch = cuda()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.float16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.float16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0, n = now_us(), 0
    while now_us() - t0 < args.duration_s * 1e6:
        for _ in range(4):
            a @ b
        torch.cuda.synchronize()
        n += 4
    seconds = (now_us() - t0) / 1e6
    emit(
        "result",
        role="smcap",
        sms=sms,
        tflops=2 * args.size**3 * n / seconds / 1e12,
        threadPercentage=os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
    )
    return 0


def blocking_stream(torch):
    """A stream created with the driver's default flags, so it synchronizes with the legacy default
    stream (PyTorch's own streams are created non-blocking, and do not)."""
    cu = ctypes.CDLL("libcuda.so.1")
    handle = ctypes.c_void_p()
    status = cu.cuStreamCreate(ctypes.byref(handle), 0)
    if status != 0:
        raise RuntimeError(f"cuStreamCreate failed with {status}")
    return torch.cuda.ExternalStream(handle.value)


def trap(args):
    torch = cuda()
    spin = spin_kernel()
    ns = int(args.spin_us * 1000)
    out = torch.zeros(args.blocks, dtype=torch.int64, device="cuda")
    host = torch.ones(1024)
    dev = torch.zeros(1024, device="cuda")
    results = []
    for kind in ("pytorch", "blocking"):
        streams = [torch.cuda.Stream() if kind == "pytorch" else blocking_stream(torch) for _ in range(args.streams)]
        for k in (1, args.streams):
            for stray in (False, True):

                def once():
                    for s in streams[:k]:
                        with torch.cuda.stream(s):
                            spin[(args.blocks,)](out, ns, num_warps=1)
                    if stray:
                        dev.copy_(host)  # synchronous, on the default stream

                once()
                torch.cuda.synchronize()
                t0 = now_us()
                for _ in range(args.iterations):
                    once()
                torch.cuda.synchronize()
                elapsed_us = now_us() - t0
                results.append(
                    {
                        "streamKind": kind,
                        "streams": k,
                        "strayCopy": stray,
                        "concurrency": args.iterations * k * args.spin_us / elapsed_us,
                    }
                )
    emit("result", role="trap", spinUs=args.spin_us, runs=results)
    return 0


def background(torch, spin, stream, sms, args):
    """Keeps `stream` fed with spin kernels that fill every SM, at most args.depth in flight."""
    blocks = sms * args.blocks_per_sm
    out = torch.zeros(blocks, dtype=torch.int64, device="cuda")
    ns, inflight, count = int(args.spin_us * 1000), [], [0]

    def top_up():
        while inflight and inflight[0].query():
            inflight.pop(0)
            count[0] += 1
        while len(inflight) < args.depth:
            with torch.cuda.stream(stream):
                spin[(blocks,)](out, ns, num_warps=1)
                ev = torch.cuda.Event()
                ev.record(stream)
            inflight.append(ev)

    return top_up, count, blocks


def priority(args):
    torch = cuda()
    spin = spin_kernel()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.zeros(1, device="cuda")
    runs = []
    for level in ("normal", "high"):
        bg = torch.cuda.Stream(priority=0)
        fg = torch.cuda.Stream(priority=-1 if level == "high" else 0)
        top_up, count, blocks = background(torch, spin, bg, sms, args)
        top_up()  # compiles the kernel before the schedule starts
        torch.cuda.synchronize()
        count[0] = 0
        request(torch, fg, x)
        t0 = now_us()
        lat, late = schedule(args, lambda: request(torch, fg, x), between=top_up)
        torch.cuda.synchronize()
        seconds = (now_us() - t0) / 1e6
        runs.append(
            {
                "priority": level,
                "latenciesMs": lat,
                "lateRequests": late,
                "backgroundBlockUsPerS": count[0] * blocks * args.spin_us / seconds,
            }
        )
    emit("result", role="priority", runs=runs, sms=sms, periodMs=args.period_ms)
    return 0


def greenctx(args):
    torch = cuda()
    from torch.cuda import green_contexts

    spin = spin_kernel()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.zeros(1, device="cuda")
    fg = torch.cuda.Stream()
    emit("ready", role="greenctx", pid=os.getpid(), sms=sms, torch=torch.__version__)
    runs = []
    for arm in ("streams", "green"):
        stop, count, box = threading.Event(), [0], {}

        def feed():
            try:
                ctx = None
                if arm == "green":
                    ctx = green_contexts.GreenContext.create(sms - args.critical_sms, 0)
                    enter = getattr(ctx, "set_context", None) or ctx.make_current
                    enter()
                stream = torch.cuda.current_stream() if arm == "green" else torch.cuda.Stream()
                top_up, c, blocks = background(torch, spin, stream, sms, args)
                box["blocks"] = blocks
                top_up()  # compiles the kernel in this context before the schedule starts
                torch.cuda.synchronize()
                c[0] = 0
                box["warm"], box["t0"] = True, now_us()
                while not stop.is_set():
                    top_up()
                    time.sleep(0.0002)
                box["t1"] = now_us()
                torch.cuda.synchronize()
                count[0] = c[0]
                if ctx is not None:
                    (getattr(ctx, "pop_context", None) or ctx.pop_current)()
            except Exception as exc:
                box["error"] = first_line(exc)

        thread = threading.Thread(target=feed)
        thread.start()
        while "warm" not in box and "error" not in box and thread.is_alive():
            time.sleep(0.01)
        time.sleep(0.1)
        lat, late = schedule(args, lambda: request(torch, fg, x))
        stop.set()
        thread.join()
        if "error" in box:
            raise RuntimeError(f"{arm} background: {box['error']}")
        runs.append(
            {
                "arm": arm,
                "latenciesMs": lat,
                "lateRequests": late,
                "backgroundBlockUsPerS": count[0] * box["blocks"] * args.spin_us / ((box["t1"] - box["t0"]) / 1e6),
                "backgroundSms": sms - args.critical_sms if arm == "green" else sms,
            }
        )
    emit("result", role="greenctx", runs=runs, sms=sms, criticalSms=args.critical_sms, periodMs=args.period_ms)
    return 0


ROLES = {
    "tenant": tenant,
    "hog": hog,
    "faulter": faulter,
    "infault": infault,
    "context": context,
    "latency": latency,
    "smcap": smcap,
    "trap": trap,
    "priority": priority,
    "greenctx": greenctx,
}


def main():
    claim_stdout()  # protocol lines only on stdout: anything else printed goes to stderr
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", choices=sorted(ROLES))
    p.add_argument("--blocks", type=int, default=8, help="thread blocks per spin kernel (tenant, trap)")
    p.add_argument(
        "--blocks-per-sm", type=int, default=32, help="background kernels' blocks per SM (priority, greenctx)"
    )
    p.add_argument("--spin-us", type=float, default=1000, help="how long each block spins, µs")
    p.add_argument("--batch", type=int, default=4, help="tenant kernels between synchronizations")
    p.add_argument("--depth", type=int, default=3, help="background kernels in flight")
    p.add_argument(
        "--try-mib", type=lambda s: [int(v) for v in s.split(",") if v], default=[], help="hog: sizes to try once"
    )
    p.add_argument("--chunk-mib", type=int, default=512)
    p.add_argument("--max-mib", type=int, default=1 << 22)
    p.add_argument("--period-ms", type=float, default=5)
    p.add_argument("--requests", type=int, default=500)
    p.add_argument("--size", type=int, default=8192, help="smcap GEMM size")
    p.add_argument("--duration-s", type=float, default=1.5)
    p.add_argument("--streams", type=int, default=4)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--critical-sms", type=int, default=16, help="greenctx: SMs kept from the background")
    p.add_argument("--tenants", type=int, default=4, help="infault: tenants (threads) of the one process")
    args = p.parse_args()
    try:
        code = ROLES[args.role](args)
    except Exception as exc:  # the error is the measurement for faulter; a failure for the rest
        import traceback

        traceback.print_exc()
        emit("failed", role=args.role, error=first_line(exc), atUs=now_us())
        code = 1
    sys.stderr.flush()
    os._exit(code)  # at once: after a fatal CUDA error, interpreter teardown can hang


if __name__ == "__main__":
    main()
