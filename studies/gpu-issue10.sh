#!/usr/bin/env bash
# The runs behind issue 10's closing note, on the GPU machine: two default benches back to back, the
# gate of the second against the first, and a real model (torchvision resnet18, random weights) as a
# custom command at 2 and 4 clients under time-slicing and MPS. Results land in $OUT.
set -uo pipefail
out=${OUT:?}
npm run build >/dev/null 2>&1 || exit 1
for i in 1 2; do
  { time npm run bench -- --out "$out/default-$i"; } > "$out/default-$i.txt" 2>&1
  echo "default-$i exit $(tail -n 3 "$out/default-$i.txt" | head -1)"
done
node dist/harness/main.js gate "$out/default-2" --baseline "$out/default-1" > "$out/gate.txt" 2>&1; echo "gate exit $?" >> "$out/gate.txt"
for k in 2 4; do
  { time node dist/harness/main.js bench --out "$out/resnet18-c$k" --modes timeslice,mps --clients "$k" --quiet -- python3 examples/torchvision_model.py --model resnet18; } > "$out/resnet18-c$k.txt" 2>&1
done
