#!/usr/bin/env bash
# Installs what H5Z-FZ needs to build and test, skipping what is already there:
# Debian packages (apt-get), pip packages for the default python3 (h5py 3.16 =
# HDF5 2.0), and the venv .venv-h5py113 (h5py 3.13 = HDF5 1.14).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libhdf5-dev hdf5-tools
  python3 python3-h5py python3-pytest python3-numpy python3-venv python3-pip
  netcdf-bin ferret-datasets
  clang libclang-rt-dev
  libgtest-dev googletest
  patchelf
  openmpi-bin python3-mpi4py python3-h5py-mpi libhdf5-openmpi-dev
)

# ---- Debian packages -----------------------------------------------------------
fz_say "Debian packages"
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
# libclang-rt-dev is a virtual name on some releases: accept the fuzzer runtime however it came
if [[ " ${missing[*]} " == *" libclang-rt-dev "* ]]; then
  if compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null \
     || compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/*/libclang_rt.fuzzer*.a" >/dev/null; then
    missing=("${missing[@]/libclang-rt-dev}")
  fi
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  fz_note "missing: ${missing[*]}"
  SUDO=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || fz_die "not root and no sudo: install ${missing[*]} by hand"
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  # install what this release knows; say which names it lacks
  installable=()
  for pkg in "${missing[@]}"; do
    if apt-cache show "$pkg" >/dev/null 2>&1; then installable+=("$pkg"); else fz_note "not in apt: $pkg (skipped)"; fi
  done
  if ((${#installable[@]})); then
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${installable[@]}"
  fi
else
  fz_note "all present"
fi

# ---- interpreter A: h5py 3.16 (HDF5 2.0) -------------------------------------------
PY_A="$(fz_python_a)"
fz_say "Python A (h5py ${FZ_H5PY_A}, HDF5 2.0): $PY_A"
if [[ "$PY_A" == "$FZ_VENV_A/bin/python" && ! -x "$PY_A" ]]; then
  fz_note "python3 on PATH is Debian's (pip refused there): creating $FZ_VENV_A"
  "$FZ_DEBIAN_PY" -m venv "$FZ_VENV_A"
fi
if "$PY_A" - "$FZ_H5PY_A" <<'PYEOF' 2>/dev/null
import fnmatch, sys
import h5py, numpy, pytest, hdf5plugin, matplotlib, xarray, h5netcdf, numcodecs, zarr, dask, auditwheel  # noqa: F401
sys.exit(0 if fnmatch.fnmatch(h5py.version.version, sys.argv[1]) else 1)
PYEOF
then
  fz_note "present: $(fz_h5py_version "$PY_A")"
else
  # auditwheel (with Debian's patchelf): the wheel's repair (tools/setup/wheel.sh);
  # matplotlib: h5fz compare --plot;
  # xarray and h5netcdf: netCDF-4 files with the filter (tests/python/test_netcdf.py);
  # numcodecs and zarr 2: the Zarr codec (tests/python/test_zarr.py); dask: xarray's chunks={}
  # through engine="h5fz" (tests/python/test_xarray_fz.py).
  "$PY_A" -m pip install -q "h5py==${FZ_H5PY_A}" numpy pytest hdf5plugin auditwheel matplotlib \
    xarray h5netcdf numcodecs "zarr>=2.18,<3" "dask[array]"
  fz_note "installed: $(fz_h5py_version "$PY_A")"
fi

# ---- interpreter B: venv with h5py 3.13 (HDF5 1.14) -------------------------------
PY_B="$(fz_python_b)"
fz_say "Python B (h5py ${FZ_H5PY_B}, HDF5 1.14): $PY_B"
if [[ -n "${FZ_PY_B:-}" ]]; then
  fz_note "given by FZ_PY_B: not touched"
elif [[ -x "$PY_B" ]] && "$PY_B" -c 'import h5py, numpy, pytest, numcodecs, sys; sys.exit(0 if h5py.version.hdf5_version.startswith("1.14") else 1)' 2>/dev/null; then
  fz_note "present: $(fz_h5py_version "$PY_B")"
else
  base="$PY_A"
  [[ -x "$base" ]] || base="$FZ_DEBIAN_PY"
  fz_note "creating $FZ_VENV_B from $base"
  rm -rf "$FZ_VENV_B"
  "$base" -m venv "$FZ_VENV_B"
  # numcodecs and zarr 3 (it needs Python 3.11): the zarr-python 3 codec (tests/python/test_zarr.py).
  "$FZ_VENV_B/bin/python" -m pip install -q "h5py==${FZ_H5PY_B}" numpy pytest numcodecs \
    'zarr>=3,<4; python_version >= "3.11"'
  fz_note "installed: $(fz_h5py_version "$PY_B")"
fi

# ---- interpreter C: Debian's python3-h5py (HDF5 1.10) -----------------------------
PY_C="$(fz_python_c)"
fz_say "Python C (Debian python3-h5py): $PY_C"
"$PY_C" -c 'import h5py, numpy, pytest' || fz_die "$PY_C lacks h5py/numpy/pytest (apt-get install python3-h5py python3-pytest)"
fz_note "present: $(fz_h5py_version "$PY_C")"

fz_say "dependencies ready"
