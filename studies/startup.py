"""Where a workload's start-up goes: spawn → ready, exit command → gone, and import torch alone (JSON lines).

Run from the repository root on the GPU machine: python3 studies/startup.py [spin.py gemm.py …]
"""
import json, subprocess, sys, time
W = sys.argv[1:] or ["spin.py", "gemm.py", "infer.py"]
for script in W:
    for _ in range(2):
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, f"workloads/{script}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        p.stdout.readline()
        t1 = time.monotonic()
        p.stdin.write('{"cmd":"exit"}\n'); p.stdin.flush(); p.wait()
        t2 = time.monotonic()
        print(json.dumps({"script": script, "readyS": round(t1 - t0, 3), "exitS": round(t2 - t1, 3)}))
t0 = time.monotonic(); subprocess.run([sys.executable, "-c", "import torch"]); t1 = time.monotonic()
subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"]); t2 = time.monotonic()
print(json.dumps({"importTorchS": round(t1 - t0, 3), "importAndCudaInitS": round(t2 - t1, 3)}))
