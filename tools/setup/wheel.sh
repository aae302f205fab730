#!/usr/bin/env bash
# Builds the h5fz wheel from this clone as `pip wheel .` does (pyproject.toml:
# scikit-build-core runs the CMake build of the plugin and the h5fz program and
# packs them with the Python package), then repairs it with auditwheel: the
# h5fz program's HDF5 and the libraries under it go into the wheel (h5fz.libs),
# and the tag becomes manylinux_2_X for the glibc of the machine that built it.
# Prints the repaired wheel's path last.
#
#   FZ_WHEEL_DIR    output folder (default build-wheel): raw/ and dist/ under it
#   FZ_WHEEL_CUDA   ON, OFF or auto (default auto: CUDA when nvcc is found, as
#                   `pip install .` does)
#   FZ_WHEEL_ARGS   more pip arguments, e.g. -Ccmake.define.CMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$FZ_REPO"

OUT="${FZ_WHEEL_DIR:-$FZ_REPO/build-wheel}"
PY="$(fz_python_a)"
read -r -a extra <<<"${FZ_WHEEL_ARGS:-}"
case "${FZ_WHEEL_CUDA:-auto}" in
  ON|on|1) extra+=("-Ccmake.define.FZ_ENABLE_CUDA=ON") ;;
  OFF|off|0) extra+=("-Ccmake.define.FZ_ENABLE_CUDA=OFF") ;;
  auto) ;;
  *) fz_die "FZ_WHEEL_CUDA must be ON, OFF or auto" ;;
esac
"$PY" -c 'import auditwheel' 2>/dev/null || fz_die "$PY lacks auditwheel (tools/setup/deps.sh installs it)"
command -v patchelf >/dev/null || fz_die "patchelf not found (apt-get install patchelf)"

rm -rf "$OUT/raw" "$OUT/dist" "$OUT/cmake"
mkdir -p "$OUT/raw" "$OUT/dist"
fz_say "pip wheel . (scikit-build-core; CUDA ${FZ_WHEEL_CUDA:-auto}) -> $OUT/raw"
# A build folder of its own (not pyproject's build-pip/), made afresh: the
# wheel is built as on a machine that never built it.
"$PY" -m pip wheel . --no-deps -w "$OUT/raw" -Cbuild-dir="$OUT/cmake" "${extra[@]}"
raw=("$OUT"/raw/h5fz-*.whl)
((${#raw[@]} == 1)) && [[ -f "${raw[0]}" ]] || fz_die "expected one wheel in $OUT/raw"
fz_say "auditwheel repair -> $OUT/dist"
"$PY" -m auditwheel repair -w "$OUT/dist" "${raw[0]}"
fixed=("$OUT"/dist/h5fz-*.whl)
((${#fixed[@]} == 1)) && [[ -f "${fixed[0]}" ]] || fz_die "expected one repaired wheel in $OUT/dist"
fz_note "wheel: ${fixed[0]} ($(du -h "${fixed[0]}" | cut -f1))"
echo "${fixed[0]}"
