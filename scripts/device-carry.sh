#!/usr/bin/env bash
# What a GPU machine without Node.js needs to run the CLI, small enough to travel beside an engine's source in
# one device call (64 MiB with the tracked tree): Node.js and the built bundle, no node_modules (benches and
# scripts/*-gpu.sh need none; `npm run test:gpu` does: use ../shared/device/pack.sh for that).
# Usage (repository root): bash scripts/device-carry.sh [KOBOLDCPP_CHECKOUT | KOBOLDCPP_PREBUILT.tar.xz]
#   writes .carry/ (git-ignored through .git/info/exclude): node.xz (stripped), dist.tar.xz (without the developer
#   scripts), setup.sh; with a KoboldCpp checkout its trimmed source (examples/engines/pack_koboldcpp.sh) as
#   koboldcpp-src.tar.gz, or with the library prebuilt here (examples/engines/prebuild_koboldcpp.sh) that as
#   koboldcpp-prebuilt.tar.xz: not both, which with the tracked tree would pass the 64 MiB.
# On the GPU machine, carry [".carry"] and start the command with: source .carry/setup.sh
#   (then, e.g., OUT=$OUT bash scripts/engines-gpu.sh koboldcpp)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
grep -qxF '/.carry/' "$exclude" 2>/dev/null || echo '/.carry/' >>"$exclude"
npm run build >/dev/null
rm -rf .carry && mkdir -p .carry
# Stripped (its debug symbols are 12 MB) and compressed: 22 MB of the 64 MiB.
strip -o .carry/node "$(readlink -f "$(command -v node)")" && xz -T0 -9 .carry/node
tar cf - --exclude=dist/harness/cli dist | xz -T0 -9 >.carry/dist.tar.xz
case "${1:-}" in
  '') ;;
  *.tar.xz) cp "$1" .carry/koboldcpp-prebuilt.tar.xz ;;
  *) bash examples/engines/pack_koboldcpp.sh "$1" .carry/koboldcpp-src.tar.gz ;;
esac
cat >.carry/setup.sh <<'SETUP'
# Sourced on the GPU machine: node on PATH and the carried bundle unpacked as dist/.
_c=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p /tmp/nodejs/bin
[ -x /tmp/nodejs/bin/node ] || { xz -dc "$_c/node.xz" >/tmp/nodejs/bin/node && chmod +x /tmp/nodejs/bin/node; }
rm -rf "$_c/../dist" && tar xJf "$_c/dist.tar.xz" -C "$_c/.."
export PATH=/tmp/nodejs/bin:$PATH
echo "node $(node --version) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
SETUP
du -sh .carry
