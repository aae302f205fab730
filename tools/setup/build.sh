#!/usr/bin/env bash
# Configures and builds H5Z-FZ (Release) into build/ (FZ_BUILD_DIR overrides).
# CUDA is automatic: the backend is built when nvcc is found. Extra CMake
# arguments: FZ_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90" or on the command line.
# FZ_BUILD_TARGETS: space-separated targets to build (default: all of them;
# the main job builds only the plugin, H5Zfz).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

read -r -a extra <<<"${FZ_CMAKE_ARGS:-}"
fz_say "configure $FZ_BUILD_DIR (Release)"
cmake -S "$FZ_REPO" -B "$FZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@"
read -r -a targets <<<"${FZ_BUILD_TARGETS:-}"
if ((${#targets[@]})); then
  fz_say "build ${targets[*]} with $FZ_JOBS jobs"
  cmake --build "$FZ_BUILD_DIR" -j "$FZ_JOBS" --target "${targets[@]}"
else
  fz_say "build with $FZ_JOBS jobs"
  cmake --build "$FZ_BUILD_DIR" -j "$FZ_JOBS"
fi
if [[ -f "$FZ_BUILD_DIR/plugin/libH5Zfz.so" ]]; then
  fz_note "plugin: $FZ_BUILD_DIR/plugin/libH5Zfz.so"
else
  fz_die "the build did not produce $FZ_BUILD_DIR/plugin/libH5Zfz.so"
fi
