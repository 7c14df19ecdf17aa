"""probe: one JSON line about this Python, its PyTorch and the GPU PyTorch sees (for gpushare doctor)."""

import json
import platform
import sys

info = {
    "version": platform.python_version(),
    "torch": None,
    "torchCuda": None,
    "cudaAvailable": False,
    "deviceName": None,
    "smCount": None,
    "triton": None,
}
try:
    import torch

    info.update(torch=torch.__version__, torchCuda=torch.version.cuda, cudaAvailable=torch.cuda.is_available())
    if info["cudaAvailable"]:
        props = torch.cuda.get_device_properties(0)
        info.update(deviceName=props.name, smCount=props.multi_processor_count)
except Exception as exc:  # reported, not fatal: doctor shows what is missing
    print(f"torch: {exc}", file=sys.stderr)
try:
    import triton

    info["triton"] = triton.__version__
except Exception:
    pass
print(json.dumps(info))
