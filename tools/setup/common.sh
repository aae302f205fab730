# Sourced by the tools/setup scripts: paths, interpreters, messages.
# shellcheck shell=bash

FZ_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FZ_BUILD_DIR="${FZ_BUILD_DIR:-$FZ_REPO/build}"
FZ_JOBS="${FZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
FZ_VENV_B="${FZ_VENV_B:-$FZ_REPO/.venv-h5py113}"
FZ_VENV_A="$FZ_REPO/.venv-h5py316"   # only used when python3 on PATH is Debian's
FZ_H5PY_A="${FZ_H5PY_A:-3.16.*}"     # bundles HDF5 2.0
FZ_H5PY_B="${FZ_H5PY_B:-3.13.0}"     # bundles HDF5 1.14 (1.14.6)
FZ_DEBIAN_PY=/usr/bin/python3        # Debian's python3-h5py (HDF5 1.10)

if [[ -t 2 ]]; then
  fz_say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
else
  fz_say() { printf '==> %s\n' "$*" >&2; }
fi
fz_note() { printf '    %s\n' "$*" >&2; }
fz_die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# The first python3 on PATH that is not Debian's (pyenv, conda, ...), else "".
fz_default_python3() {
  local dir p debian
  debian="$(readlink -f "$FZ_DEBIAN_PY" 2>/dev/null || true)"
  IFS=: read -r -a _dirs <<<"${PATH:-}"
  for dir in "${_dirs[@]}"; do
    p="$dir/python3"
    if [[ -x "$p" && "$(readlink -f "$p")" != "$debian" ]]; then
      # pyenv shims resolve lazily: ask the interpreter itself
      if [[ "$("$p" -c 'import sys; print(sys.executable)' 2>/dev/null || true)" != "$FZ_DEBIAN_PY" ]]; then
        echo "$p"; return 0
      fi
    fi
  done
  echo ""
}

# Interpreter A (h5py 3.16 / HDF5 2.0): python3 on PATH, or a venv when that is Debian's.
fz_python_a() {
  if [[ -n "${FZ_PY_A:-}" ]]; then echo "$FZ_PY_A"; return; fi
  local p; p="$(fz_default_python3)"
  if [[ -n "$p" ]]; then echo "$p"; else echo "$FZ_VENV_A/bin/python"; fi
}
fz_python_b() { echo "${FZ_PY_B:-$FZ_VENV_B/bin/python}"; }
fz_python_c() { echo "${FZ_PY_C:-$FZ_DEBIAN_PY}"; }

# "HDF5 x.y.z, h5py a.b.c" or fails.
fz_h5py_version() {
  "$1" -c 'import h5py; print("HDF5 %s, h5py %s" % (h5py.version.hdf5_version, h5py.version.version))' 2>/dev/null
}
