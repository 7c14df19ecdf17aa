#!/usr/bin/env bash
# The GPU part of issue 39 in one go, on a GPU machine: plan's files for a committed H100 run (MPS for
# 4 models: 25% of the threads, a pinned-memory limit each), `gpushare verify` over them with every
# named silent-failure case, and `gpushare verify` over `gpushare artifacts` of the same run.
#   scripts/verify-gpu.sh <out dir>
# Writes <out dir>/plan, <out dir>/artifacts, the verify run directories (verify.json, report.md) and
# summary.txt; prints a compact summary. It fails softly: a step that cannot run says so and the next
# runs; a case that cannot run is `skipped` with the reason in its run. The steps' limits, with their
# grace after SIGINT, add up to 355 s: a verify cut short is saved `interrupted` with what it measured.
# Every MPS daemon is gpushare's own (private directories under <out dir>/tmp) and stopped by it; the
# end checks that none is left and quits any that is. Compute mode, clocks and persistence are never touched. Needs dist/ (npm run build)
# or node_modules to build it, python3 with PyTorch, nvidia-smi and nvidia-cuda-mps-control.
# On the simulator (simulator/bin first on PATH) it runs the same steps on the fake node.
set -uo pipefail

out="${1:?usage: scripts/verify-gpu.sh <out dir>}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run="${VERIFY_GPU_RUN:-$here/results/2026-11-27-h100-80gb-hbm3-2c8cff}"
mkdir -p "$out/tmp"
out="$(cd "$out" && pwd)"
# gpushare puts its private MPS directories under TMPDIR: here, so the end can find any left.
export TMPDIR="$out/tmp"
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

cli="$here/dist/harness/main.js"
if [[ ! -f "$cli" ]]; then
  (cd "$here" && npm run build >/dev/null 2>&1) || say "step build: dist/harness/main.js missing and npm run build failed"
fi


# Any MPS control daemon whose pipe directory is under our TMPDIR is ours: quit it (never by name).
leftover_daemons() {
  local pipe left=0
  for pipe in "$TMPDIR"/gpushare-mps-*/pipe; do
    [[ -S "$pipe/control" ]] || continue
    if echo get_server_list | CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 5 nvidia-cuda-mps-control >/dev/null 2>&1; then
      left=$((left + 1))
      echo quit | CUDA_MPS_PIPE_DIRECTORY="$pipe" timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
      say "leftover: an MPS daemon answered at $pipe: quit sent"
    fi
  done
  say "mps daemons left running at the end: $left"
}
trap leftover_daemons EXIT

started=$SECONDS
step() {
  # step <name> <timeout s> <command...>: runs it, keeps its output, says how it ended.
  local name="$1" limit="$2"
  shift 2
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr"
  local code=$?
  say "step $name: exit $code ($((SECONDS - started)) s elapsed)"
  return 0
}

say "verify-gpu: run $(basename "$run"), out $out"
step plan 15 node "$cli" plan --run "$run" --models 4 --mem-gib 10 --sm-pct 20 --out "$out/plan" --k8s dra
step artifacts 15 node "$cli" artifacts --run "$run" --out "$out/artifacts" --k8s dra
# The limits of plan's files, then every named case (skipped ones say why).
step verify-plan 225 node "$cli" verify "$out/plan" --cases all --out "$out/verify-plan"
step verify-artifacts 60 node "$cli" verify "$out/artifacts" --out "$out/verify-artifacts"

for name in verify-plan verify-artifacts; do
  say ""
  say "== $name"
  # The rows (verdict, id, measured), the cases and the verdict line, without the run's paths.
  grep -E '^(enforced|not enforced|partly|not measured|skipped|case |did not hold|verify: exit)|^ {14}' "$out/$name.stdout" \
    | tee -a "$summary"
  [[ -s "$out/$name.stderr" ]] && tail -n 3 "$out/$name.stderr" | sed 's/^/  stderr: /' | tee -a "$summary"
done
say ""
say "verify-gpu: done in $((SECONDS - started)) s; reports: $out/verify-plan/report.md $out/verify-artifacts/report.md"
