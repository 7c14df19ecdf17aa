#!/usr/bin/env bash
# The progress bar on a real terminal: a bench (streams and time-slicing) inside an 80-column tmux
# pane on the GPU machine, captured with tmux capture-pane every 15 s. Captures land in $OUT.
set -uo pipefail
out=${OUT:?}
npm run build >/dev/null 2>&1 || exit 1
command -v tmux >/dev/null || { echo "no tmux here"; exit 3; }
tmux new-session -d -s bench -x 80 -y 24 "env -u CI node dist/harness/main.js bench --modes streams,timeslice --out $out/run; echo EXIT \$?; sleep 600"
for i in 1 2 3 4 5 6 7 8; do
  sleep 15
  tmux capture-pane -p -t bench > "$out/pane-$i.txt"
  grep -q '^EXIT' "$out/pane-$i.txt" && break
done
tmux kill-session -t bench
cd "$out" && tar czf run.tgz run --remove-files
