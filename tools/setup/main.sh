#!/usr/bin/env bash
# THE main job of H5Z-FZ: installs what is missing, builds, then writes real
# fields (../shared/data, FZ_DATA overrides) through h5py with the plugin,
# converts a file with h5repack -f UD=32850,..., and prints a table: dataset,
# preset, raw bytes, stored bytes, ratio, max abs error, write and read MB/s.
#
#   FZ_PRESETS   comma-separated presets, NAME[:MODE:BOUND[:TUNING[:ALPHA:BETA]]]
#                (TUNING for cuszhi-tp/cuszhi-cr: off, ratio-first, quality-first,
#                manual; default: lossless and the three lossy presets at the
#                bounds of the project's targets)
#   FZ_FIELDS    comma-separated field file names (default: all of shared/data)
#   FZ_SKIP      space-separated steps to skip: deps build
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$FZ_REPO"
FZ_SKIP=" ${FZ_SKIP:-} "

[[ "$FZ_SKIP" == *" deps "* ]] || bash tools/setup/deps.sh
# Only what the main job runs: the plugin, not the tests
# and benchmarks (a new user's first run built every test target first).
[[ "$FZ_SKIP" == *" build "* ]] || FZ_BUILD_TARGETS="${FZ_BUILD_TARGETS:-H5Zfz}" bash tools/setup/build.sh

PY="$(fz_python_a)"
DATA="${FZ_DATA:-$(dirname "$FZ_REPO")/shared/data}"
[[ -d "$DATA" ]] || fz_die "real fields not found at $DATA (set FZ_DATA)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/h5fz_main.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

fz_say "writing real fields with $PY ($(fz_h5py_version "$PY")) and h5repack ($(h5repack --version 2>/dev/null | tail -n1))"
args=(--data "$DATA" --workdir "$WORK" --presets "${FZ_PRESETS:-lossless,pfpl:noa:1e-3,fzgpu:noa:1e-3,cusz:noa:1e-4,cuszhi-tp:noa:1e-3,cuszhi-cr:noa:1e-3}")
[[ -z "${FZ_FIELDS:-}" ]] || args+=(--fields "$FZ_FIELDS")
HDF5_PLUGIN_PATH="$FZ_BUILD_DIR/plugin" "$PY" tools/python/h5fz_report.py "${args[@]}"

if [[ -f "$WORK/repack_lossless.h5" ]]; then
  fz_say "h5dump -pH of the lossless h5repack output (dataset, size and ratio, filter)"
  HDF5_PLUGIN_PATH="$FZ_BUILD_DIR/plugin" h5dump -pH "$WORK/repack_lossless.h5" \
    | grep -E 'DATASET|SIZE|FILTER_ID' | sed 's/^ *//; s/^DATASET/\nDATASET/'
fi
