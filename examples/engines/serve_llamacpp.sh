#!/usr/bin/env bash
# llama.cpp's llama-server on one GPU, one copy per call. gpushare: --serve 'bash serve_llamacpp.sh --port {port} ...'
# Usage: serve_llamacpp.sh --port P [--model /tmp/model-0.1b/model.gguf] [--bin PATH] [--parallel 64] [--ctx-per-slot 512]
#        [--mem-fraction F]   (accepted and ignored: llama.cpp has no memory-fraction flag; memory = weights + ctx KV)
set -euo pipefail
PORT=""; MODEL=/tmp/model-0.1b/model.gguf; BIN="${LLAMA_SERVER:-/tmp/llama.cpp/build/bin/llama-server}"
PARALLEL=64; CTX_PER_SLOT=512; NGL=all; THREADS=2
while [ $# -gt 0 ]; do case "$1" in
  --port) PORT="$2"; shift 2;; --model) MODEL="$2"; shift 2;; --bin) BIN="$2"; shift 2;;
  --parallel) PARALLEL="$2"; shift 2;; --ctx-per-slot) CTX_PER_SLOT="$2"; shift 2;;
  --ngl) NGL="$2"; shift 2;; --threads) THREADS="$2"; shift 2;; --mem-fraction) shift 2;;
  *) echo "serve_llamacpp.sh: unknown argument $1" >&2; exit 2;; esac; done
[ -n "$PORT" ] || { echo "serve_llamacpp.sh: --port is required" >&2; exit 2; }
# -c is the TOTAL context: with the unified KV cache (-kvu) all slots share it, each request limited to --ctx-per-slot by n_predict+prompt.
# --fit off: otherwise llama.cpp shrinks unset sizes to the device memory free at start (copies would differ).
# --ignore-eos: a random model may sample EOS; max_tokens is then exact. --alias: the id /v1/models lists (gpushare sends it as model).
exec "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$PORT" --alias gpushare-llama \
  -ngl "$NGL" -c $((PARALLEL * CTX_PER_SLOT)) -np "$PARALLEL" -kvu --fit off -fa auto \
  --ignore-eos --no-webui --threads "$THREADS" --log-disable
