#!/usr/bin/env bash
# On the GPU machine (the device tool, carry [".carry"] from scripts/device-carry.sh): run the given phases in
# turn under one deadline, then pack every run into $OUT/runs.tgz. A device call returns at most 8 files, two
# folders deep, and nothing from a command killed at its limit: here the deadline stops the phase in flight as
# Ctrl-C does (SIGINT to its process group: gpushare keeps what it measured and stops its servers), and the
# packing always runs.
# Usage: bash scripts/device-run.sh DEADLINE_S 'PHASE[@MIN_S]'...
#   PHASE: a command line run with OUT=/tmp/runs, e.g. 'bash scripts/engines-gpu.sh koboldcpp'; @MIN_S: skip it
#   when fewer seconds than that are left (default 30).
# Example: bash scripts/device-run.sh 560 'bash scripts/fleet-gpu.sh capacity' \
#            'bash scripts/engines-gpu.sh koboldcpp-build@240'
set -uo pipefail
deadline=${1:?usage: device-run.sh DEADLINE_S PHASE...}
shift
# shellcheck source=/dev/null
source .carry/setup.sh
out=${OUT:?OUT: the folder whose files the device tool brings back}
export KOBOLDCPP_SRC=${KOBOLDCPP_SRC:-.carry/koboldcpp-src.tar.gz}
runs=/tmp/runs
mkdir -p "$runs"
log="$runs/console.txt"
t0=$SECONDS
for spec in "$@"; do
  phase=${spec%@*}
  need=30
  [ "$phase" = "$spec" ] || need=${spec##*@}
  left=$((deadline - (SECONDS - t0)))
  {
    if [ "$left" -le "$need" ]; then
      echo "== $phase: skipped, $left s left of the $need s it needs"
      continue
    fi
    echo "== $phase ($left s left)"
    OUT=$runs timeout -s INT -k 20 "$left" bash -c "$phase" 2>&1
    echo "== $phase: exit $? at $((SECONDS - t0)) s"
  } >>"$log"
done
tar czf "$out/runs.tgz" -C "$runs" .
tail -c 7000 "$log"
