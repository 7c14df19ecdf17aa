#!/usr/bin/env bash
# Build KoboldCpp's CUDA library (koboldcpp_cublas.so, sm_90 only) from the trimmed source tarball, on the GPU machine.
# Usage: bash build_koboldcpp.sh /path/to/koboldcpp-src.tar.gz
# Result: /tmp/eng/koboldcpp/koboldcpp.py + koboldcpp_cublas.so (koboldcpp.py loads the .so from its own folder).
# Prints "BUILD OK <s> s" or the log's tail and exits non-zero.
set -euo pipefail
TAR="${1:?usage: build_koboldcpp.sh koboldcpp-src.tar.gz}"
mkdir -p /tmp/eng && rm -rf /tmp/eng/koboldcpp /tmp/eng/kcpp-link && tar xzf "$TAR" -C /tmp/eng
cd /tmp/eng/koboldcpp
CUDA_PATH="${CUDA_PATH:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")}"
export PATH="$CUDA_PATH/bin:$PATH"
command -v nvcc >/dev/null || { echo "build_koboldcpp.sh: no nvcc (CUDA_PATH=$CUDA_PATH)"; exit 1; }
# cuBLAS may live outside the toolkit folder (a pip wheel): link and load it from where it is.
CUBLAS_SO="$(ls "$CUDA_PATH"/lib64/libcublas.so* "$CUDA_PATH"/targets/*/lib/libcublas.so* 2>/dev/null | head -1 || true)"
[ -n "$CUBLAS_SO" ] || CUBLAS_SO="$(ldconfig -p | awk '/libcublas\.so/{print $NF; exit}')"
[ -n "$CUBLAS_SO" ] || CUBLAS_SO="$(find / -xdev -name 'libcublas.so.*' -not -path '/tmp/eng/*' 2>/dev/null | head -1)"
CUBLAS_DIR="$(dirname "${CUBLAS_SO:?build_koboldcpp.sh: no libcublas.so found}")"
# Its header likewise (the Makefile looks in $CUDA_PATH/include only); gcc and nvcc's preprocessing read CPATH.
if [ ! -e "$CUDA_PATH/include/cublas_v2.h" ]; then
  H="$(find / -xdev -name cublas_v2.h -not -path '/tmp/eng/*' 2>/dev/null | head -1)"
  [ -n "$H" ] || { echo "build_koboldcpp.sh: no cublas_v2.h found"; exit 1; }
  export CPATH="$(dirname "$H")${CPATH:+:$CPATH}"; fi
# -lcublas needs an unversioned libcublas.so; a wheel ships only .so.13: give the linker one.
LINKDIR=/tmp/eng/kcpp-link; mkdir -p "$LINKDIR"
for l in cublas cublasLt; do
  [ -e "$CUBLAS_DIR/lib$l.so" ] || ln -sf "$(ls "$CUBLAS_DIR"/lib$l.so.* | head -1)" "$LINKDIR/lib$l.so"; done
# -lcuda: the toolkit's stub if there is one, else the driver's libcuda.so.1.
LIBCUDA1="$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')"
if [ ! -e "$CUDA_PATH/lib64/stubs/libcuda.so" ] && ! ldconfig -p | grep -q 'libcuda\.so ' && [ -n "$LIBCUDA1" ]; then
  ln -sf "$LIBCUDA1" "$LINKDIR/libcuda.so"; fi
# CUDA 13's CCCL (cub in ggml-cuda/sum.cu) needs C++17; this Makefile (v1.76) passes -std=c++11 to nvcc too.
sed -i 's/\$(subst -Ofast,-O3,\$(CXXFLAGS))/$(subst -std=c++11,-std=c++17,$(subst -Ofast,-O3,$(CXXFLAGS)))/' Makefile
grep -q 'std=c++11,-std=c++17' Makefile || { echo "build_koboldcpp.sh: the nvcc C++17 patch did not apply"; exit 1; }
s=$SECONDS
# CUDA_DOCKER_ARCH=sm_90: one architecture (else -arch=native, which needs the GPU at build time, or all); the
# Makefile passes it as -arch=$(CUDA_DOCKER_ARCH). KOBOLDCPP_ARCH='compute_90 -code=sm_90': machine code alone,
# without the PTX that -arch=sm_90 adds (a library a third the size once compressed; it runs on sm_90 GPUs only).
if ! make -j"$(nproc)" koboldcpp_cublas LLAMA_CUBLAS=1 CUDA_DOCKER_ARCH="${KOBOLDCPP_ARCH:-sm_90}" CUDA_PATH="$CUDA_PATH" \
    LDFLAGS="-L$LINKDIR -L$CUBLAS_DIR -Wl,-rpath,$CUBLAS_DIR -Wl,-rpath,$CUDA_PATH/lib64" >build.log 2>&1; then
  grep -m5 -B2 -A8 -E 'error|Error' build.log || tail -40 build.log
  echo "BUILD FAILED after $((SECONDS - s)) s (log: /tmp/eng/koboldcpp/build.log)"; exit 1
fi
[ -f koboldcpp_cublas.so ] || { echo "BUILD FAILED: no koboldcpp_cublas.so"; exit 1; }
if ldd koboldcpp_cublas.so | grep 'not found'; then echo "BUILD FAILED: unresolved libraries above"; exit 1; fi
echo "BUILD OK $((SECONDS - s)) s ($(nproc) jobs): /tmp/eng/koboldcpp/koboldcpp_cublas.so"
