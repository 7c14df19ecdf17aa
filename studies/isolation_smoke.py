"""A first look at workloads/isolation.py on the GPU machine, without the harness: runs each role
briefly (under a private MPS daemon where it matters) and prints every line they print, tagged.
Used once to check the roles before `gpushare probe` drove them; kept to show how they were tried."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "workloads", "isolation.py")


class Proc:
    def __init__(self, tag, role, *flags, env=None):
        self.tag = tag
        self.p = subprocess.Popen([sys.executable, SCRIPT, role, *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})

    def line(self, timeout=60):
        t = time.time()
        out = self.p.stdout.readline()
        print(f"{self.tag} ({time.time() - t:.1f}s): {out.strip()[:600]}", flush=True)
        return json.loads(out) if out.strip() else None

    def send(self, **cmd):
        try:
            self.p.stdin.write(json.dumps(cmd) + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            print(f"{self.tag}: stdin closed")

    def stop(self):
        self.send(cmd="stop")
        rest = self.p.communicate(timeout=30)
        for out in rest[0].splitlines():
            print(f"{self.tag}: {out[:600]}")
        print(f"{self.tag}: exit {self.p.returncode}; stderr tail: {rest[1][-300:]!r}", flush=True)


def scenario(name, mps_env):
    print(f"=== {name}", flush=True)
    env = dict(mps_env)
    v = Proc("victim", "tenant", env=env)
    v.line()
    v.send(cmd="alloc", mib=256)
    v.line()
    h = Proc("hog", "hog", "--try-mib", "1024,3072", env={**env, **({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=2G"} if "limit" in name else {})})
    h.line()
    h.line()
    v.send(cmd="alloc", mib=256)
    v.line()
    v.send(cmd="status")
    v.line()
    h.stop()
    v.send(cmd="alloc", mib=256)
    v.line()
    v.stop()


def fault(name, env):
    print(f"=== fault {name}", flush=True)
    vs = [Proc(f"victim{i}", "tenant", env=env) for i in range(2)]
    for v in vs:
        v.line()
    f = Proc("faulter", "faulter", env=env)
    f.line()
    f.line()
    time.sleep(1)
    for v in vs:
        v.send(cmd="status")
        v.line()
    t = time.time()
    c = Proc("after", "context", env=env)
    c.line()
    print(f"new client after {time.time() - t:.2f}s", flush=True)
    c.stop()
    for v in vs:
        v.stop()
    f.p.wait()


def main():
    root = tempfile.mkdtemp()
    env = {"CUDA_MPS_PIPE_DIRECTORY": root + "/pipe", "CUDA_MPS_LOG_DIRECTORY": root + "/log"}
    os.makedirs(env["CUDA_MPS_PIPE_DIRECTORY"])
    os.makedirs(env["CUDA_MPS_LOG_DIRECTORY"])
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env={**os.environ, **env}, check=True)
    ctl = lambda c: subprocess.run(["nvidia-cuda-mps-control"], input=c + "\n", text=True, capture_output=True, env={**os.environ, **env}).stdout.strip()
    try:
        for args in (["trap", "--spin-us", "200", "--iterations", "100"], ["priority", "--spin-us", "300", "--requests", "200", "--period-ms", "2"],
                     ["greenctx", "--spin-us", "300", "--requests", "200", "--period-ms", "2"], ["smcap", "--duration-s", "0.5"]):
            print(f"=== {args[0]}", flush=True)
            p = Proc(args[0], *args)
            while (m := p.line()) and m.get("event") == "ready":
                pass
            p.stop()
        for pct in ("100", "25"):
            print(f"=== smcap mps {pct}", flush=True)
            p = Proc("smcap", "smcap", "--duration-s", "0.5", env={**env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": pct})
            p.line()
            p.stop()
        print("=== latency k=1 timeslice and mps", flush=True)
        for tag, e in (("ts", {}), ("mps", env)):
            t = Proc("tenant", "tenant", env=e)
            t.line()
            lat = Proc("latency", "latency", "--requests", "200", env=e)
            lat.line()
            lat.send(cmd="go")
            m = lat.line()
            if m and "latenciesMs" in m:
                xs = sorted(m["latenciesMs"])
                print(f"{tag}: p50 {xs[len(xs) // 2]:.3f} p99 {xs[int(len(xs) * 0.99)]:.3f} behind {m['behindMs']:.2f}")
            lat.stop()
            t.stop()
        scenario("timeslice", {})
        scenario("mps", env)
        scenario("mps limit", env)
        print("=== context", flush=True)
        for tag, e in (("ts", {}), ("mps", env)):
            c = Proc(f"context-{tag}", "context", env=e)
            c.line()
            c.stop()
        fault("timeslice", {})
        fault("mps", env)
        print("server list:", ctl("get_server_list"))
        for pid in ctl("get_server_list").split():
            print("status:", ctl(f"get_server_status {pid}"))
    finally:
        print("quit:", ctl("quit"))
        time.sleep(2)
        for name in ("control.log", "server.log"):
            path = os.path.join(env["CUDA_MPS_LOG_DIRECTORY"], name)
            if os.path.exists(path):
                print(f"--- {name}")
                print(open(path).read()[-3000:])
        print(subprocess.run(["ps", "-eo", "pid,comm,args"], capture_output=True, text=True).stdout[-2000:])


if __name__ == "__main__":
    main()
