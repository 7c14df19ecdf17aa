#!/usr/bin/env bash
# The server tenant's reference runs on a GPU machine (issue 38), one phase a call (each fits a 10-minute
# device call; `--dry-run` on the same flags prints the load time):
#   bench     the reference server at 1, 2 and 4 copies under time-slicing, MPS and MPS with a thread cap
#             against a dedicated copy (about 402 s of load), then plan's answer from it;
#   capacity  the highest rate at TTFT p99 <= 500 ms per mode at 2 copies (at most 498 s of load).
# Run from the repository root with the CLI built (dist/) and PyTorch installed; results go under
# runs/results/ (or $OUT when set).
set -euo pipefail
phase=${1:?give the phase: bench or capacity}
out=${OUT:-runs/results}
server='python3 examples/reference_server.py --port {port}'
common=(--ready-path /health --input-tokens 128 --output-tokens 64 --slo-ttft-p99-ms 500)
case "$phase" in
  bench)
    node dist/harness/main.js bench --serve "$server" "${common[@]}" --copies 1,2,4 --window-s 3 --rounds 6 \
      --concurrency 8 --gpu-hour-usd 3 --out "$out/serve-bench" || echo "bench --serve exit $?"
    node dist/harness/main.js plan --run "$out/serve-bench" || echo "plan exit $?"
    ;;
  capacity)
    node dist/harness/main.js capacity --serve "$server" "${common[@]}" --copies 2 --window-s 3 \
      --out "$out/serve-capacity" || echo "capacity --serve exit $?"
    ;;
  *)
    echo "serve-gpu.sh: the phase is bench or capacity, not $phase" >&2
    exit 2
    ;;
esac
