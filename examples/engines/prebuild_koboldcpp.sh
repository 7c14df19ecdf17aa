#!/usr/bin/env bash
# Build KoboldCpp's CUDA library (koboldcpp_cublas.so, sm_90) on a machine without a GPU, so that a GPU machine's
# time goes to the bench and not to the build (233 s of 16 cores there, 2026-12-06). Needs nvcc (CUDA 13) and pip.
# Usage: bash prebuild_koboldcpp.sh SRC.tar.gz OUT.tar.xz   (SRC.tar.gz from pack_koboldcpp.sh)
# cuBLAS comes from NVIDIA's wheel (pip download, cached in ${KOBOLDCPP_WHEELS:-/tmp/kcpp-wheels}); the driver's
# libcuda.so.1 from a stub of that name (its calls go to the driver's when the GPU machine loads the library). The
# library needs libcublas.so.13 and libcudart.so.13 at run time: serve_koboldcpp.sh finds them in PyTorch's
# nvidia wheels there. Then: bash scripts/device-carry.sh OUT.tar.xz.
set -euo pipefail
SRC="$(realpath "${1:?usage: prebuild_koboldcpp.sh SRC.tar.gz OUT.tar.xz}")"
OUT="$(realpath -m "${2:?usage: prebuild_koboldcpp.sh SRC.tar.gz OUT.tar.xz}")"
command -v nvcc >/dev/null || { echo "prebuild_koboldcpp.sh: no nvcc on PATH" >&2; exit 1; }
# The toolkit as nvcc itself names it (its own folder's parent): on PATH it may be a wrapper script or a link.
toolkit="$(dirname "$(nvcc --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ _HERE_=//p' | head -1)")"
wheels=${KOBOLDCPP_WHEELS:-/tmp/kcpp-wheels}
mkdir -p "$wheels"
wheel() { find "$wheels" -name 'nvidia_cublas-*.whl' | sort | tail -1; }
[ -n "$(wheel)" ] ||
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 -d "$wheels" nvidia-cublas
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
unzip -q "$(wheel)" 'nvidia/cu13/*' -d "$tmp/wheel"
# One CUDA root with the toolkit and cuBLAS side by side: build_koboldcpp.sh looks for both under $CUDA_PATH.
root="$tmp/cuda"
mkdir -p "$root/include" "$root/lib64" "$tmp/stub"
for d in bin nvvm targets lib; do [ -e "$toolkit/$d" ] && ln -s "$toolkit/$d" "$root/$d"; done
ln -s "$toolkit"/include/* "$tmp"/wheel/nvidia/cu13/include/* "$root/include/"
ln -s "$toolkit"/lib64/* "$tmp"/wheel/nvidia/cu13/lib/* "$root/lib64/"
# The stub defines every driver function cuda.h declares (by the names its macros give them): a library that
# defines none is dropped by the linker's --as-needed, and the cu* calls would then find no libcuda at run time.
echo '#include <cuda.h>' | gcc -E -P -I"$toolkit/include" - | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' |
  tr -d '( ' | sort -u | sed 's/.*/void &(void) {}/' | gcc -shared -x c - -Wl,-soname,libcuda.so.1 -o "$tmp/stub/libcuda.so"
ln -s libcuda.so "$tmp/stub/libcuda.so.1"
# CPATH: the Makefile's -I flags name $CUDA_PATH/targets/*/include, not $CUDA_PATH/include, and nvcc adds its own.
KOBOLDCPP_ARCH='compute_90 -code=sm_90' CUDA_PATH="$root" CPATH="$tmp/wheel/nvidia/cu13/include" \
  LIBRARY_PATH="$tmp/stub" LD_LIBRARY_PATH="$tmp/stub" bash "$(dirname "$0")/build_koboldcpp.sh" "$SRC"
readelf -d /tmp/eng/koboldcpp/koboldcpp_cublas.so | grep -q 'NEEDED.*\[libcuda\.so\.1\]' ||
  { echo "prebuild_koboldcpp.sh: the library does not name libcuda.so.1" >&2; exit 1; }
# What the GPU machine runs: koboldcpp.py, the library, and gguf-py for make_model.py; not the web UI or API docs
# (koboldcpp.py says it found none and serves the API).
tar cf - -C /tmp/eng koboldcpp/koboldcpp.py koboldcpp/koboldcpp_cublas.so koboldcpp/gguf-py | xz -T0 -9 >"$OUT"
echo "prebuilt: $OUT ($(du -h "$OUT" | cut -f1)), cuBLAS headers of $(basename "$(wheel)")"
