#!/usr/bin/env bash
# The GPU runs issues #48 and #49 still need, one phase a call (each within a 10-minute device call; `--dry-run`
# on the same flags prints what a phase sends). Every run is written straight under $OUT, so what a call cut
# short had measured still comes back.
#   capacity  #48: the reference server at 16 layers (its fastest e2e p50 far over this host's null-server
#             floor, so the generator's ceiling can be verified) with a batch of 64 (at 32 a copy queues from
#             about 64 req/s, under the old 177 req/s ceiling even at 4 copies), dedicated and 4 and 8 copies
#             under MPS, about 6 min;
#   replay    #49: the 16-server trace of run …-de7677 replayed twice under MPS, then compared per server
#             (REPLAYS=1: once, to compare with a stored replay, such as …-33ec30, after `gpushare evidence extract`);
#   fleet16   #49: 16 servers of three sizes, Zipf s=0.5, under MPS, capped MPS and time-slicing, then the file's
#             in-process arm (one reference server serving all 16 models), windows long enough for 381
#             requests on every server, then plan's answer and files: on an H100 (2026-12-07) the baselines and
#             three modes filled a 570 s call and the in-process arm took 224 s more in the next
#             (`gpushare bench --resume` on the same machine);
#   fleet40   #49: 40 servers of three sizes, Zipf s=0.5, likewise (no in-process arm; windows of 26 s, which its
#             dry run asks for; a request given up after 15 s, 30 times the SLO): the
#             baselines and three modes take two calls, the second going on with `--resume`;
#   search    #49: the largest fleet of reference-16-s05.yaml's kinds within the SLO (`capacity --serve
#             --fleet`), from its 16 servers (where every mode missed on an H100, run …-a6d03a) down, all three
#             modes in one run (MODES) so the baseline is measured once; the boundary measured once more, a
#             request given up after 15 s (30 times the SLO: a queue that grows drains in that). Its dry run
#             bounds the load at 3,694 s (24 steps a mode, each 3 windows of 17 s); a search stops once its
#             bracket closes and its boundary is measured again. Where a call's deadline stops it, the same
#             phase in the next call on the same machine goes on with `--resume`.
# Run from the repository root with the CLI built (dist/) and PyTorch installed.
set -uo pipefail
phase=${1:?give the phase: capacity, replay, fleet16, fleet40 or search}
out=${OUT:-runs/results}
cli() { node dist/harness/main.js "$@"; }
case "$phase" in
  capacity)
    # The default --max-seq 2048: this server counts a prompt's UTF-8 bytes as tokens, and 128 words are some 770
    # (run …-abb803, at --max-seq 512, got HTTP 400 for every request). KV cache 4 GiB a copy, 34 for 8.
    cli capacity --serve 'python3 examples/reference_server.py --port {port} --layers 16 --max-batch 64' \
      --ready-path /health --input-tokens 128 --output-tokens 64 --slo-ttft-p99-ms 500 --copies 4,8 --modes mps \
      --window-s 2 --max-step-s 66 --warmup-s 6 --warmup-max-s 14 --gpu-hour-usd 3 --ceiling-step-s 1 \
      --out "$out/capacity-b64" || echo "capacity --serve exit $?"
    cli plan --run "$out/capacity-b64" || echo "plan exit $?"
    ;;
  replay)
    for i in $(seq "${REPLAYS:-2}"); do
      cli bench --serve --fleet examples/fleet/reference-16-replay.yaml --ready-path /health --modes mps \
        --start parallel --window-s 5 --rounds 1 --warmup-s 0 --slo-ttft-p99-ms 500 \
        --out "$out/replay-$i" || echo "replay $i exit $?"
    done
    [ "${REPLAYS:-2}" -lt 2 ] || node scripts/compare-replays.mjs "$out/replay-1" "$out/replay-2" mps || echo "compare exit $?"
    ;;
  fleet16 | fleet40)
    file=examples/fleet/reference-16-s05.yaml window=17 timeout=60
    [ "$phase" = fleet40 ] && file=examples/fleet/reference-40-s05.yaml window=26 timeout=15
    modes=${MODES:-mps,mps-threads,timeslice}
    run="$out/$phase-${modes//,/-}"
    if [ -f "$run/serve.json" ]; then
      cli bench --resume "$run" || echo "bench --resume exit $?"
    else
      cli bench --serve --fleet "$file" --ready-path /health --modes "$modes" --start parallel \
        --window-s "$window" --rounds 2 --warmup-s 0 --request-timeout-s "$timeout" --slo-ttft-p99-ms 500 \
        --out "$run" || echo "bench --serve --fleet exit $?"
    fi
    cli plan --run "$run" --out "$run-plan" || echo "plan exit $?"
    ;;
  search)
    modes=${MODES:-mps,mps-threads,timeslice}
    run="$out/search-${modes//,/-}"
    if [ -f "$run/serve.json" ]; then
      cli capacity --resume "$run" || echo "capacity --resume exit $?"
    else
      cli capacity --serve --fleet examples/fleet/reference-16-s05.yaml --ready-path /health --modes "$modes" \
        --start parallel --window-s 17 --rounds 2 --warmup-s 0 --replicates 1 --max-servers 40 \
        --request-timeout-s 15 --slo-ttft-p99-ms 500 --out "$run" || echo "capacity --serve --fleet exit $?"
    fi
    cli plan --run "$run" --out "$run-plan" || echo "plan exit $?"
    ;;
  *)
    echo "fleet-gpu.sh: the phase is capacity, replay, fleet16, fleet40 or search, not $phase" >&2
    exit 2
    ;;
esac
