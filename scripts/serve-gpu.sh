#!/usr/bin/env bash
# The server tenant's reference runs on a GPU machine (issue 38): the reference server at 1, 2 and 4 copies
# under time-slicing, MPS and MPS with a thread cap against a dedicated copy, then capacity at a TTFT p99
# SLO. Run from the repository root with the CLI built (dist/) and PyTorch installed; results go under
# runs/results/ (or $OUT when set). About 10 minutes on an H100.
set -euo pipefail
out=${OUT:-runs/results}
server='python3 examples/reference_server.py --port {port}'
node dist/harness/main.js bench --serve "$server" --ready-path /health --copies 1,2,4 \
  --window-s 3 --rounds 6 --concurrency 8 --input-tokens 128 --output-tokens 64 \
  --slo-ttft-p99-ms 500 --gpu-hour-usd 3 --out "$out/serve-bench" || echo "bench --serve exit $?"
node dist/harness/main.js capacity --serve "$server" --ready-path /health --copies 2 \
  --window-s 3 --input-tokens 128 --output-tokens 64 --slo-ttft-p99-ms 500 --out "$out/serve-capacity" ||
  echo "capacity --serve exit $?"
node dist/harness/main.js plan --run "$out/serve-bench" || true
