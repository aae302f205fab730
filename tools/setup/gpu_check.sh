#!/usr/bin/env bash
# On the GPU machine (the `device` tool): build with the CUDA backend for the
# machine's architecture, run the CPU test suites there, and check what only a
# CUDA machine can show: the device probe sees the GPU, the plugin (static
# cudart) loads and round-trips through that machine's h5py. Logs go to $OUT.
#   source .devdeps/env.sh && bash tools/setup/gpu_check.sh [cuda-arch, default 90]
set -uo pipefail
arch="${1:-90}"
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out"
status=0
step() { echo "==> $*"; }
step "nvidia-smi"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || status=1
step "configure + build (CUDA arch $arch)"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$out/configure.log" 2>&1 \
  && cmake --build build-gpu -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -40 "$out/configure.log" "$out/build.log"; exit 1; }
grep -E "CUDA backend" "$out/configure.log"
step "ctest"
(cd build-gpu && ctest -j 8 --output-on-failure >"$out/ctest.log" 2>&1) || status=1
grep -E "tests passed|tests failed" "$out/ctest.log"
step "plugin: dependencies and exports"
readelf -d build-gpu/plugin/libH5Zfz.so | grep -E "NEEDED" || true
nm -D --defined-only build-gpu/plugin/libH5Zfz.so | awk '{print $3}'
if readelf -d build-gpu/plugin/libH5Zfz.so | grep -qE "NEEDED.*(libhdf5|libcudart)"; then echo "FAIL: plugin links libhdf5 or libcudart"; status=1; fi
step "h5py round trip through the plugin on this machine (H5Z_FZ_VERBOSE)"
H5Z_FZ_VERBOSE=1 HDF5_PLUGIN_PATH="$PWD/build-gpu/plugin" python3 - "$FZ_DATA" <<'PY' || status=1
import sys, io, numpy as np, h5py
sys.path.insert(0, "tools/python")
import h5fz
w = np.fromfile(sys.argv[1] + "/wmag91.float", dtype="<f4").reshape(91, 91, 91)
print("h5py", h5py.version.version, "HDF5", h5py.version.hdf5_version)
for preset, mode, bound in [("lossless", "abs", None), ("fzgpu", "noa", 1e-3), ("cusz", "noa", 1e-4), ("pfpl", "rel", 1e-3)]:
    b = io.BytesIO()
    with h5py.File(b, "w") as f:
        f.create_dataset("x", data=w, chunks=(31, 91, 91), compression=h5fz.FILTER_ID,
                         compression_opts=h5fz.compression_opts(preset, mode, bound))
    with h5py.File(b, "r") as f:
        r = f["x"][()]; stored = f["x"].id.get_storage_size()
    x, y = w.astype(np.float64), r.astype(np.float64)
    err = np.abs(x - y).max() if mode != "rel" else (np.abs(x - y) / np.abs(x)).max()
    print("%-8s %-3s ratio %.3f max err %.3g" % (preset, mode, w.nbytes / stored, err))
    assert preset != "lossless" or err == 0
PY
step "summary: status $status"
exit $status
