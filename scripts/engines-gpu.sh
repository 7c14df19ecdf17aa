#!/usr/bin/env bash
# Issue #48's third-party engines on a GPU machine, one phase a call (each within a 10-minute device call).
#   koboldcpp-build  build KoboldCpp's CUDA library (examples/engines/build_koboldcpp.sh, about 4 min on 16
#                    cores) from $KOBOLDCPP_SRC (default .carry/koboldcpp-src.tar.gz, from scripts/device-carry.sh),
#                    or unpack $KOBOLDCPP_PREBUILT (default .carry/koboldcpp-prebuilt.tar.xz) where it was built
#                    without a GPU (examples/engines/prebuild_koboldcpp.sh); and the random 0.1b model
#                    (examples/engines/make_model.py, with the source's gguf-py); each skipped if present;
#   koboldcpp        the build if missing, then `bench --serve` at 1, 2 and 4 copies under time-slicing and MPS,
#                    then plan (about 6.5 min on the simulator with these delays: each window waits for its
#                    requests to end, and a copy serves one request at a time, so the dedicated copy's windows
#                    last longest).
# KoboldCpp holds each request 350 ms before its first chunk and 150 ms after its last whatever the GPU does
# (docs/serving-recipes.md#koboldcpp). The smoke test's 64 tokens took under 60 ms beside those sleeps, so 512
# output tokens make the GPU's part of a request the larger one. One request resident per copy: it serves them one
# at a time.
# Run from the repository root with the CLI built (dist/) and PyTorch installed; runs go under $OUT.
set -uo pipefail
phase=${1:?give the phase: koboldcpp-build or koboldcpp}
out=${OUT:-runs/results}
src=${KOBOLDCPP_SRC:-.carry/koboldcpp-src.tar.gz}
prebuilt=${KOBOLDCPP_PREBUILT:-.carry/koboldcpp-prebuilt.tar.xz}
build() {
  local gguf=/tmp/gguf-src/koboldcpp/gguf-py
  if [ ! -f /tmp/eng/koboldcpp/koboldcpp_cublas.so ] && [ -f "$prebuilt" ]; then
    # Built on a machine without a GPU (examples/engines/prebuild_koboldcpp.sh): koboldcpp.py, the library, gguf-py.
    mkdir -p /tmp/eng && rm -rf /tmp/eng/koboldcpp && tar xJf "$prebuilt" -C /tmp/eng
    echo "KoboldCpp: the library prebuilt without a GPU ($prebuilt)" | tee "$out/koboldcpp-build.txt"
  elif [ ! -f /tmp/eng/koboldcpp/koboldcpp_cublas.so ]; then
    bash examples/engines/build_koboldcpp.sh "$src" >"$out/koboldcpp-build.txt" 2>&1 &
    local b=$!
  fi
  if [ ! -f /tmp/model-0.1b/model.gguf ]; then
    if [ -z "${b:-}" ] && [ -d /tmp/eng/koboldcpp/gguf-py ]; then
      gguf=/tmp/eng/koboldcpp/gguf-py
    else
      mkdir -p /tmp/gguf-src && tar xzf "$src" -C /tmp/gguf-src koboldcpp/gguf-py
    fi
    python3 examples/engines/make_model.py --size 0.1b --out /tmp/model-0.1b --gguf --gguf-py "$gguf" \
      >"$out/model.txt" 2>&1 || tail -20 "$out/model.txt"
  fi
  if [ -n "${b:-}" ]; then wait "$b" || echo "build exit $?"; tail -3 "$out/koboldcpp-build.txt"; fi
  [ -f /tmp/eng/koboldcpp/koboldcpp_cublas.so ] && [ -f /tmp/model-0.1b/model.gguf ]
}
mkdir -p "$out"
case "$phase" in
  koboldcpp-build) build ;;
  koboldcpp)
    build || { echo "engines-gpu.sh: no KoboldCpp build or model"; exit 1; }
    node dist/harness/main.js bench --endpoint chat --ready-path /v1/models \
      --serve 'bash examples/engines/serve_koboldcpp.sh --port {port} --bin /tmp/eng/koboldcpp/koboldcpp.py --model /tmp/model-0.1b/model.gguf --mem-fraction {mem_fraction}' \
      --copies 1,2,4 --modes timeslice,mps --concurrency 1 --input-tokens 128 --output-tokens 512 \
      --window-s 2 --rounds 6 --warmup-s 4 --warmup-max-s 8 --slo-ttft-p99-ms 2000 --gpu-hour-usd 3 \
      --out "$out/koboldcpp" || echo "bench --serve exit $?"
    node dist/harness/main.js plan --run "$out/koboldcpp" || echo "plan exit $?"
    ;;
  *)
    echo "engines-gpu.sh: the phase is koboldcpp-build or koboldcpp, not $phase" >&2
    exit 2
    ;;
esac
