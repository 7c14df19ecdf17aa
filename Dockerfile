# syntax=docker/dockerfile:1
#
# gpushare in a container: the image `gpushare fleet job` runs on every GPU node of a pool, and a way to
# bench any machine that has the NVIDIA Container Toolkit.
#
# Base: pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime (Ubuntu 22.04; PyTorch 2.8 with Triton, which the
# spin workload needs; python3 on PATH). A pinned tag, so every node of a fleet runs the same PyTorch. CUDA
# 12.8 runs Hopper (H100, H200) and Blackwell (B200), and needs an NVIDIA driver >= 570, or >= 525 through
# CUDA's minor-version compatibility: what most GPU clusters run. A CUDA 13 image would need driver >= 580.
# Node.js: 22.21.1 (package.json engines: >= 20.19), the official binary copied from the node image.
# The package is built from this repository alone: npm ci, npm run build, npm pack, and the packed tarball
# unpacked. It has no runtime dependencies: npm run build bundles them into dist/.
#
# nvidia-smi and nvidia-cuda-mps-control are not in the image: the NVIDIA Container Toolkit mounts them
# from the host's driver, nvidia-smi with the "utility" capability and the MPS binaries with "compute"
# (libnvidia-container src/nvc_info.c: utility_bins, compute_bins). Hence NVIDIA_DRIVER_CAPABILITIES=
# compute,utility below. Which GPUs the container sees is the device plugin's to say (a pod's
# nvidia.com/gpu request) or Docker's (--gpus).
#
# Build, from the repository root (the build downloads the two base images and the npm packages):
#   docker build -t ghcr.io/<org>/gpushare:0.1.0 . && docker push ghcr.io/<org>/gpushare:0.1.0
# Run on a GPU machine (Docker with the NVIDIA Container Toolkit):
#   docker run --rm --gpus all ghcr.io/<org>/gpushare:0.1.0 doctor
#   docker run --rm --gpus all -v "$PWD/results:/work/results" ghcr.io/<org>/gpushare:0.1.0 bench --modes timeslice,mps
# Run in GPU pods (whole GPUs through nvidia.com/gpu; not privileged):
#   gpushare fleet job --nodes nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 --count 3 \
#     --image ghcr.io/<org>/gpushare:0.1.0 --out job.yaml && kubectl apply -f job.yaml
#   (the Job's header says how to read the runs back: kubectl logs, or a ReadWriteMany claim)
# One pod by hand: a container with this image, args ["doctor"] or ["bench", ...], and
#   resources: {limits: {nvidia.com/gpu: 1}}; add runtimeClassName: nvidia where that runtime is not the default.
#
# Not yet built: written where no container registry could be reached, so the build is untested
# (test/unit/dockerfile.test.ts checks what can be checked without building it).

FROM node:22.21.1-bookworm-slim AS build
WORKDIR /src
# Dependencies first, so a change to the sources reuses this layer. --ignore-scripts: `prepare` would
# build before the sources are here.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY build.mjs tsconfig.json LICENSE README.md ./
COPY harness ./harness
COPY workloads ./workloads
COPY simulator ./simulator
COPY examples ./examples
COPY docs ./docs
RUN npm run build \
 && npm pack --ignore-scripts --pack-destination /tmp \
 && mkdir -p /opt/gpushare \
 && tar -xzf /tmp/gpushare-*.tgz -C /opt/gpushare --strip-components=1 \
 && chmod 755 /opt/gpushare/dist/harness/main.js

FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=build /opt/gpushare /opt/gpushare
# A smoke test that needs no GPU: node and the CLI start, PyTorch and Triton import, a plan is made.
RUN ln -s /opt/gpushare/dist/harness/main.js /usr/local/bin/gpushare \
 && node --version \
 && gpushare --version \
 && python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)" \
 && gpushare bench --dry-run --modes timeslice,mps > /dev/null
# bench's default output (results/, reports/) lands under the working directory.
WORKDIR /work
ENTRYPOINT ["gpushare"]
CMD ["--help"]
