#!/usr/bin/env bash
# On the GPU machine (the `device` tool), after tools/setup/gpu_check.sh has
# built build-gpu: the CUDA backend's benchmark tables (docs/PERFORMANCE.md,
# "CUDA backend"). Each table is also written to $OUT.
#   source .devdeps/env.sh && bash tools/setup/gpu_check.sh && bash tools/setup/gpu_bench.sh
set -uo pipefail
out="${OUT:-/tmp/gpu_bench}"
mkdir -p "$out"
status=0
b=build-gpu/tools
step() { echo "==> $*"; }
step "device-resident, 512 MiB (wmag91 mirrored to 512^3), one chunk, then 16 MiB chunks"
$b/fz_device_bench --reps 5 2>&1 | tee "$out/device_resident.md" || status=1
$b/fz_device_bench --reps 3 --chunk-mib 16 2>&1 | tee "$out/device_resident_16mib.md" || status=1
step "chunk path (host buffer in, frame out): GPU, then the host's 16 cores"
H5Z_FZ_DEVICE=cuda $b/fz_chunk_bench --sizes 1,4,16,64 --inflight 1,4 --api batch --reps 3 2>&1 | tee "$out/chunk_gpu.md" || status=1
H5Z_FZ_DEVICE=cuda H5Z_FZ_GPU_COPY=direct $b/fz_chunk_bench --sizes 16,64 --inflight 1,4 --api batch \
  --presets lossless,fzgpu 2>&1 | tee "$out/chunk_gpu_direct.md" || status=1
H5Z_FZ_DEVICE=cpu $b/fz_chunk_bench --sizes 1,16,64 --inflight 1 --api batch --reps 2 2>&1 | tee "$out/chunk_cpu.md" || status=1
step "h5py, 1 GiB dataset in 16 MiB chunks: plugin (auto: GPU both ways at this size) vs uncompressed vs gzip"
H5Z_FZ_DEVICE=auto python3 tools/bench/h5py_bench.py --plugin-dir build-gpu/plugin --slow-reps 1 2>&1 \
  | tee "$out/h5py_auto.md" || status=1
step "h5py again, reads from the disk (the file dropped from the page cache before each read)"
H5Z_FZ_DEVICE=auto python3 tools/bench/h5py_bench.py --plugin-dir build-gpu/plugin --codecs fzgpu,pfpl,lossless \
  --cold-reads 2>&1 | tee "$out/h5py_auto_cold.md" || status=1
exit $status
