#!/usr/bin/env bash
# Pack KoboldCpp's source into the trimmed tarball that build_koboldcpp.sh builds from on the GPU machine
# (carried there: the whole source, 43 MB, would crowd the 64 MiB a device call takes).
# Usage: bash pack_koboldcpp.sh SRC OUT.tar.gz
#   SRC: a KoboldCpp checkout (git clone --depth 1 --branch v1.76 https://github.com/LostRuins/koboldcpp),
#        or a git directory with no work tree (a mirror): its HEAD is read, and blobs it lacks are skipped.
# Leaves out what a CUDA build of the text engine never reads (Windows binaries, the other GPU backends' shaders,
# docs, media, tests, models' vocabularies, the image generator's embedded weights) and stubs the image
# generator's CLIP vocabulary, which model.cpp includes but text generation never reads.
set -euo pipefail
SRC="${1:?usage: pack_koboldcpp.sh SRC OUT.tar.gz}"
OUT="$(realpath -m "${2:?usage: pack_koboldcpp.sh SRC OUT.tar.gz}")"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dst="$tmp/koboldcpp"; mkdir -p "$dst"
skip='\.(dll|exe)$|^(media|docs|models|tests|\.github|\.devops|lib|vulkan-shaders)/|^colab\.ipynb$|^poetry\.lock$|^taesd|^kcpp_sdui\.embd$|ggml-vulkan-shaders\.cpp$|^include/vulkan/'
git -C "$SRC" ls-tree -r HEAD | while IFS=$'\t' read -r meta path; do
  grep -qE "$skip" <<<"$path" && continue
  read -r m _ blob <<<"$meta"
  mkdir -p "$dst/$(dirname "$path")"
  git -C "$SRC" cat-file blob "$blob" >"$dst/$path" 2>/dev/null || { rm -f "$dst/$path"; echo "absent, skipped: $path"; continue; }
  [ "$m" = 100755 ] && chmod +x "$dst/$path"
done
grep -q 'KcppVersion = "1.76"' "$dst/koboldcpp.py" || echo "pack_koboldcpp.sh: not v1.76; build_koboldcpp.sh was checked on 1.76 only" >&2
printf '%s\n' '// Stub (gpushare pack_koboldcpp.sh): the CLIP BPE merges of the image generator, never read by text generation.' \
  'static unsigned char merges_utf8_c_str[] = {0};' >"$dst/otherarch/sdcpp/vocab.hpp"
tar czf "$OUT" -C "$tmp" koboldcpp
echo "$OUT: $(du -h "$OUT" | cut -f1)"
