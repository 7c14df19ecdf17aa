#!/usr/bin/env bash
# What a GPU machine without Node.js needs to run the CLI, small enough to travel beside an engine's source in
# one device call (64 MiB with the tracked tree): Node.js and the built bundle, no node_modules (benches and
# scripts/*-gpu.sh need none; `npm run test:gpu` does: use ../shared/device/pack.sh for that).
# Usage (repository root): bash scripts/device-carry.sh [KOBOLDCPP_CHECKOUT]
#   writes .carry/ (git-ignored through .git/info/exclude): node.xz, dist/ (without the developer scripts), setup.sh,
#   and with a KoboldCpp checkout its trimmed source (examples/engines/pack_koboldcpp.sh) as koboldcpp-src.tar.gz.
# On the GPU machine, carry [".carry"] and start the command with: source .carry/setup.sh
#   (then, e.g., KOBOLDCPP_SRC=.carry/koboldcpp-src.tar.gz OUT=$OUT bash scripts/engines-gpu.sh koboldcpp)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
grep -qxF '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >>"$exclude"
npm run build >/dev/null
rm -rf .carry && mkdir -p .carry
xz -T0 -9 -c "$(readlink -f "$(command -v node)")" >.carry/node.xz
cp -r dist .carry/dist && rm -rf .carry/dist/harness/cli
[ $# -eq 0 ] || bash examples/engines/pack_koboldcpp.sh "$1" .carry/koboldcpp-src.tar.gz
cat >.carry/setup.sh <<'SETUP'
# Sourced on the GPU machine: node on PATH and the carried bundle as dist/.
_c=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p /tmp/nodejs/bin
[ -x /tmp/nodejs/bin/node ] || { xz -dc "$_c/node.xz" >/tmp/nodejs/bin/node && chmod +x /tmp/nodejs/bin/node; }
rm -rf "$_c/../dist" && cp -r "$_c/dist" "$_c/../dist"
export PATH=/tmp/nodejs/bin:$PATH
echo "node $(node --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
SETUP
du -sh .carry
