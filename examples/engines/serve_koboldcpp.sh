#!/usr/bin/env bash
# KoboldCpp (LostRuins/koboldcpp) on one GPU, one copy per call. gpushare: --serve 'bash serve_koboldcpp.sh --port {port} ...'
# Usage: serve_koboldcpp.sh --port P [--model /tmp/model-0.1b/model.gguf] [--bin /tmp/eng/koboldcpp/koboldcpp.py]
#        [--ctx 4096] [--multiuser 64] [--threads 2] [--python python3]
#        [--mem-fraction F]   (accepted and ignored: KoboldCpp has no memory-fraction flag; memory = weights + ctx KV)
# --bin is koboldcpp.py; it loads koboldcpp_cublas.so from its own folder (build: engines/build_koboldcpp.sh).
set -euo pipefail
PORT=""; MODEL=/tmp/model-0.1b/model.gguf; BIN="${KOBOLDCPP_PY:-/tmp/eng/koboldcpp/koboldcpp.py}"
CTX=4096; MULTIUSER=64; THREADS=2; PY=python3
while [ $# -gt 0 ]; do case "$1" in
  --port) PORT="$2"; shift 2;; --model) MODEL="$2"; shift 2;; --bin) BIN="$2"; shift 2;;
  --ctx) CTX="$2"; shift 2;; --multiuser) MULTIUSER="$2"; shift 2;; --threads) THREADS="$2"; shift 2;;
  --python) PY="$2"; shift 2;; --mem-fraction) shift 2;;
  *) echo "serve_koboldcpp.sh: unknown argument $1" >&2; exit 2;; esac; done
[ -n "$PORT" ] || { echo "serve_koboldcpp.sh: --port is required" >&2; exit 2; }
[ -f "$(dirname "$BIN")/koboldcpp_cublas.so" ] || {
  echo "serve_koboldcpp.sh: no koboldcpp_cublas.so beside $BIN; build it with build_koboldcpp.sh" >&2; exit 2; }
# A library prebuilt on another machine (prebuild_koboldcpp.sh) finds libcublas.so.13 and libcudart.so.13 by
# no path that exists here: take them from the Python's nvidia wheels (PyTorch's), read when the loader starts.
if ldd "$(dirname "$BIN")/koboldcpp_cublas.so" | grep -q 'not found'; then
  NV_LIBS="$("$PY" -c 'import glob, nvidia; print(":".join(sorted({d for p in nvidia.__path__ for d in glob.glob(p + "/*/lib")})))' 2>/dev/null || true)"
  export LD_LIBRARY_PATH="$NV_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
# --usecublas normal: all visible GPUs, i.e. the one gpushare names in CUDA_VISIBLE_DEVICES. A GPU number here
#   ("--usecublas 0") would make koboldcpp.py overwrite CUDA_VISIBLE_DEVICES with that index.
# --gpulayers 999: every layer on the GPU (-1 would guess from nvidia-smi's free memory, so copies would differ).
# --contextsize: the one KV cache (one sequence: KoboldCpp generates one request at a time).
# --multiuser N: up to N-1 requests wait for the model instead of getting 503 "Server is busy"; the HTTP
#   server has 24 handler threads, so more than 24 requests in flight wait in the listen backlog.
# --skiplauncher: never the tk GUI. --quiet: no prompts/outputs in the log.
exec "$PY" "$BIN" --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --usecublas normal --gpulayers 999 --contextsize "$CTX" --multiuser "$MULTIUSER" \
  --threads "$THREADS" --skiplauncher --quiet
