#!/usr/bin/env bash
# Reference run of cuSZp (github.com/szcompressor/cuSZp), the fastest GPU
# error-bounded compressor a user can install, device-resident beside
# fz_device_bench (issue 31's anchor: run both in one device call).
#
# cuSZp's source is never part of this repository: it lives in the git-ignored
# folder .peers/cuSZp (exported from a mirror of its repository: include/ and
# src/ only). This script exports it when missing (and a mirror is there),
# compiles its sources with our driver tools/bench/cuszp_device_bench.cu (ours:
# same field, bounds, timing and table as fz_device_bench) for one GPU arch,
# and runs it.
#
#   tools/bench/cuszp_reference.sh [all|export|build|run]   (default: all)
#
# Environment (all optional):
#   FZ_DATA        test fields (../shared/data beside the repo, else .devdeps/data)
#   CUSZP_SRC      the exported copy                  (<repo>/.peers/cuSZp)
#   CUSZP_MIRROR   bare git dir of cuSZp, for export  (/work/.mirror/szcompressor+cuSZp/repo)
#   CUSZP_ARCH     sm_XX number                       (90)
#   CUSZP_SIDE     the field's side (side^3 float32)  (512: 512 MiB)
#   CUSZP_REPS     timed calls, best reported         (5)
#   CUDA_HOME      CUDA toolkit                       (/usr/local/cuda)
set -eu -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The real fields (FZ_DATA) and the CUDA toolkit (CUDA_HOME, PATH).
. "$here/peer_env.sh"
CUSZP_SRC=${CUSZP_SRC:-$repo/.peers/cuSZp}
CUSZP_MIRROR=${CUSZP_MIRROR:-/work/.mirror/szcompressor+cuSZp/repo}
CUSZP_ARCH=${CUSZP_ARCH:-90}
CUSZP_SIDE=${CUSZP_SIDE:-512}
CUSZP_REPS=${CUSZP_REPS:-5}
bench=$CUSZP_SRC/build/cuszp_device_bench

do_export() {
  if [ -d "$CUSZP_SRC/src" ]; then return 0; fi
  if [ ! -d "$CUSZP_MIRROR" ]; then
    echo "cuszp_reference: no $CUSZP_SRC and no mirror at $CUSZP_MIRROR" >&2
    return 1
  fi
  mkdir -p "$CUSZP_SRC"
  git --git-dir="$CUSZP_MIRROR" archive HEAD include src | tar -x -C "$CUSZP_SRC"
  git --git-dir="$CUSZP_MIRROR" rev-parse --short HEAD > "$CUSZP_SRC/COMMIT"
  echo "cuszp_reference: exported cuSZp $(cat "$CUSZP_SRC/COMMIT") to $CUSZP_SRC"
}

do_build() {
  mkdir -p "$CUSZP_SRC/build"
  # One nvcc call over cuSZp's sources and our driver: cuSZp's own CMake
  # lists architectures CUDA 13 no longer has (sm_60-70).
  nvcc -O3 -std=c++17 -arch="sm_$CUSZP_ARCH" -rdc=true -I"$CUSZP_SRC/include" -I"$CUSZP_SRC/include/cuSZp" \
    "$CUSZP_SRC"/src/*.cu "$here/cuszp_device_bench.cu" -o "$bench"
}

do_run() {
  echo "cuSZp $(cat "$CUSZP_SRC/COMMIT" 2>/dev/null || echo '?'), $CUSZP_SIDE^3 float32, best of $CUSZP_REPS"
  "$bench" "$FZ_DATA" "$CUSZP_SIDE" "$CUSZP_REPS"
}

case "${1:-all}" in
  export) do_export ;;
  build) do_build ;;
  run) do_run ;;
  all) do_export && do_build && do_run ;;
  *) echo "usage: $0 [all|export|build|run]" >&2; exit 2 ;;
esac
