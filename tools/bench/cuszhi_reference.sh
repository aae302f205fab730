#!/usr/bin/env bash
# Reference run of the cuSZ-Hi research compressor (github.com/shixun404/cuSZ-Hi)
# on the real test fields, for comparison with H5Z-FZ's spline presets.
#
# cuSZ-Hi's source is never part of this repository: it lives in the git-ignored
# folder .peers/cuSZ-Hi (exported from a mirror of its repository, minus docs,
# tests, examples and scripts). This script exports it when missing (and a mirror
# is there), patches it for CUDA 13, builds the `cuszhi` CLI for one GPU arch,
# then compresses + decompresses every field at value-range-relative bounds
# 1e-2, 1e-3, 1e-4 and prints a markdown table. One failure never stops the run.
#
#   tools/bench/cuszhi_reference.sh [all|export|patch|build|run]   (default: all)
#
# Environment (all optional):
#   FZ_DATA          test fields     (../shared/data beside the repo, else .devdeps/data)
#   CUSZHI_SRC       the exported copy                 (<repo>/.peers/cuSZ-Hi)
#   CUSZHI_BUILD     build folder                      ($CUSZHI_SRC/build)
#   CUSZHI_MIRROR    bare git dir of cuSZ-Hi, for export (/work/.mirror/shixun404+cuSZ-Hi/repo)
#   CUSZHI_ARCH      CMAKE_CUDA_ARCHITECTURES          (90)
#   CUSZHI_JOBS      build parallelism                 (nproc)
#   CUSZHI_SCHEMES   lossless pipelines to run: "cr", "tp" or "cr tp"   (cr tp)
#                    cr = Huffman + RTR (ratio first), tp = TCMS + BITR (throughput)
#   CUSZHI_BOUNDS    value-range-relative bounds       (1e-2 1e-3 1e-4)
#   CUSZHI_RUN_DIR   scratch folder for .cusza/.cuszx and logs ($CUSZHI_BUILD/runs);
#                    the table is also written to $CUSZHI_RUN_DIR.table.md
#   CUSZHI_TIMEOUT   seconds per CLI call              (120)
#   CUDA_HOME        CUDA toolkit                      (/usr/local/cuda)
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

# The real fields (FZ_DATA) and the CUDA toolkit (CUDA_HOME, PATH).
. "$here/peer_env.sh"
CUSZHI_SRC=${CUSZHI_SRC:-$repo/.peers/cuSZ-Hi}
CUSZHI_BUILD=${CUSZHI_BUILD:-$CUSZHI_SRC/build}
CUSZHI_MIRROR=${CUSZHI_MIRROR:-/work/.mirror/shixun404+cuSZ-Hi/repo}
CUSZHI_ARCH=${CUSZHI_ARCH:-90}
CUSZHI_JOBS=${CUSZHI_JOBS:-$(nproc)}
CUSZHI_SCHEMES=${CUSZHI_SCHEMES:-cr tp}
CUSZHI_BOUNDS=${CUSZHI_BOUNDS:-1e-2 1e-3 1e-4}
CUSZHI_RUN_DIR=${CUSZHI_RUN_DIR:-$CUSZHI_BUILD/runs}
CUSZHI_TIMEOUT=${CUSZHI_TIMEOUT:-120}

# field file, cuSZ-Hi --dim3 (x fastest, then y, then z)
FIELDS=(
  "wmag91.float 91x91x91"
  "999x999.float 999x999x1"
  "vorticity.128_128_41 128x128x41"
  "vorticity.512_512 512x512x1"
)

log() { printf '[cuszhi_reference] %s\n' "$*" >&2; }

# ---------------------------------------------------------------- export
# Only what the CMake build of the CLI reads; doc/ (PDFs), test/, example/,
# script/, third_party/ (googletest submodule) and .github/ stay out.
do_export() {
  if [ -f "$CUSZHI_SRC/CMakeLists.txt" ]; then
    log "export: $CUSZHI_SRC already there"
    return 0
  fi
  if ! git --git-dir="$CUSZHI_MIRROR" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    log "export: no copy at $CUSZHI_SRC and no mirror at $CUSZHI_MIRROR"
    return 1
  fi
  mkdir -p "$CUSZHI_SRC" || return 1
  git --git-dir="$CUSZHI_MIRROR" archive HEAD -- \
      CMakeLists.txt CUSZConfig.cmake.in LICENSE README.md cmake include src \
    | tar -x -C "$CUSZHI_SRC" || return 1
  # Sources of the other back ends (HIP, SYCL) and the unused archive folder.
  rm -rf "$CUSZHI_SRC/src/archive"
  find "$CUSZHI_SRC/src" \( -name '*.hip' -o -name '*.dp.cpp' \) -delete
  git --git-dir="$CUSZHI_MIRROR" rev-parse HEAD > "$CUSZHI_SRC/.exported-commit"
  log "export: $(cat "$CUSZHI_SRC/.exported-commit") -> $CUSZHI_SRC ($(du -sh "$CUSZHI_SRC" | cut -f1))"
}

# ---------------------------------------------------------------- patch
# CUDA 13's CCCL no longer pulls these thrust headers in transitively.
# Each file gets its missing includes at the top, once (a marker line guards it).
PATCH_MARK='// cuszhi_reference.sh: thrust headers CUDA 13 no longer includes transitively'
patch_one() {  # file header...
  local f=$CUSZHI_SRC/$1; shift
  [ -f "$f" ] || { log "patch: missing $f"; return 1; }
  grep -qF "$PATCH_MARK" "$f" && return 0
  local lines="$PATCH_MARK" h
  for h in "$@"; do lines="$lines\n#include <thrust/$h>"; done
  sed -i "1i $lines" "$f"
}
do_patch() {
  local rc=0
  # thrust::transform_reduce, thrust::plus                (cmpg4_1.cu, cmpg4_2.cu)
  patch_one src/stat/detail/compare.thrust.inl transform_reduce.h functional.h execution_policy.h || rc=1
  # thrust::max_element, thrust::transform                (cmpg5_1.cu, cmpg5_2.cu)
  patch_one src/stat/detail/maxerr.thrust.inl extrema.h transform.h functional.h execution_policy.h || rc=1
  # thrust::min/max_element, thrust::reduce, thrust::plus (extrema.cu)
  patch_one src/stat/detail/extrema.thrust.inl extrema.h reduce.h functional.h execution_policy.h || rc=1
  # thrust::device, thrust::min/max_element               (cli_psz.cc via pipeline/cli.inl)
  patch_one include/utils/analyzer.hh extrema.h functional.h execution_policy.h || rc=1
  log "patch: done (rc=$rc)"
  return $rc
}

# ---------------------------------------------------------------- build
# Only the `cuszhi` CLI target (and the libraries it links). CUDA 13 keeps thrust
# and cub under include/cccl, which nvcc adds by itself but g++ (the .cc files,
# e.g. src/cli_psz.cc -> utils/analyzer.hh -> thrust) does not: pass it for CXX.
do_build() {
  local cccl=$CUDA_HOME/include/cccl gen=()
  [ -d "$cccl" ] || cccl=$CUDA_HOME/targets/x86_64-linux/include/cccl
  command -v ninja >/dev/null && gen=(-G Ninja)
  local t0=$SECONDS
  # A build folder configured elsewhere (e.g. copied from another machine with
  # the source at another path) makes CMake refuse: start it afresh.
  if [ -f "$CUSZHI_BUILD/CMakeCache.txt" ] &&
     ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$CUSZHI_SRC" "$CUSZHI_BUILD/CMakeCache.txt"; then
    log "build: $CUSZHI_BUILD was configured for another source path; removing it"
    rm -rf "$CUSZHI_BUILD"
  fi
  cmake -S "$CUSZHI_SRC" -B "$CUSZHI_BUILD" "${gen[@]}" \
      -DPSZ_BACKEND=cuda -DPSZ_BUILD_EXAMPLES=OFF -DBUILD_TESTING=OFF \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$CUSZHI_ARCH" \
      -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" \
      -DCMAKE_CXX_FLAGS="-isystem $cccl" \
      > "$CUSZHI_BUILD.configure.log" 2>&1 \
    || { log "build: configure failed, see $CUSZHI_BUILD.configure.log"; tail -20 "$CUSZHI_BUILD.configure.log" >&2; return 1; }
  cmake --build "$CUSZHI_BUILD" --target cusz-bin -j "$CUSZHI_JOBS" \
    || { log "build: failed after $((SECONDS - t0)) s"; return 1; }
  log "build: $CUSZHI_BUILD/cuszhi in $((SECONDS - t0)) s on $CUSZHI_JOBS jobs"
}

# ---------------------------------------------------------------- run
# Prints: "<cr_file> <maxerr_over_bound> <psnr> ok|over" or "<cr_file> ERR <why>".
check_py='
import sys, os
import numpy as np
orig_path, dec_path, comp_path, eb = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
o = np.fromfile(orig_path, dtype="<f4").astype(np.float64)
cr = "-"
if os.path.exists(comp_path) and os.path.getsize(comp_path) > 0:
    cr = "%.3f" % (o.size * 4 / os.path.getsize(comp_path))
if not os.path.exists(dec_path):
    print(cr, "ERR", "no-decompressed-file"); sys.exit(0)
d = np.fromfile(dec_path, dtype="<f4").astype(np.float64)
if d.size != o.size:
    print(cr, "ERR", "size %d != %d" % (d.size, o.size)); sys.exit(0)
rng = o.max() - o.min()
err = np.abs(d - o)
if not np.all(np.isfinite(err)):
    print(cr, "ERR", "non-finite"); sys.exit(0)
mse = np.mean(err ** 2)
psnr = float("inf") if mse == 0 else 20 * np.log10(rng) - 10 * np.log10(mse)
q = err.max() / (eb * rng)
print(cr, "%.4f" % q, "%.2f" % psnr, "ok" if q <= 1.0 else "over")
'

do_run() {
  local bin=$CUSZHI_BUILD/cuszhi
  [ -x "$bin" ] || { log "run: no $bin"; return 1; }
  command -v python3 >/dev/null || { log "run: no python3"; return 1; }
  mkdir -p "$CUSZHI_RUN_DIR" || return 1
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >&2
  local to=()
  command -v timeout >/dev/null && to=(timeout "$CUSZHI_TIMEOUT")

  echo
  echo "cuSZ-Hi $(cat "$CUSZHI_SRC/.exported-commit" 2>/dev/null || echo '(commit unknown)'), spline3, auto-tuning cr-first, sm_$CUSZHI_ARCH"
  echo
  echo "| field | scheme | bound | ratio (tool) | ratio (file size) | max err / (bound*range) | PSNR dB | status |"
  echo "|---|---|---|---|---|---|---|---|"

  local entry name dims scheme eb dir src in rc res cr_tool cr_file q psnr flag status
  note() { [ "$status" = ok ] && status=$1 || status="$status; $1"; }
  why() {  # rc log -> "rc=N (timeout)" or "rc=N (last error line of the log)"
    local msg
    if [ "$1" -eq 124 ]; then echo "rc=124 (timeout ${CUSZHI_TIMEOUT}s)"; return; fi
    msg=$(sed -e 's/\x1b\[[0-9;]*m//g' -e 's#/[^ ]*/##g' -e 's/^ *//' "$2" | grep -v 'cuszhi_reference.sh: line' | grep -iE 'error|what\(\)|ERR|fault|abort' | tail -1 | tr -d '|' | cut -c1-100)
    echo "rc=$1${msg:+ ($msg)}"
  }
  for entry in "${FIELDS[@]}"; do
    read -r name dims <<<"$entry"
    src=$FZ_DATA/$name
    for scheme in $CUSZHI_SCHEMES; do
      for eb in $CUSZHI_BOUNDS; do
        dir=$CUSZHI_RUN_DIR/$scheme/$eb
        mkdir -p "$dir"
        in=$dir/$name
        rm -f "$in" "$in.cusza" "$in.cuszx" "$in.comp.log" "$in.decomp.log"
        if [ ! -f "$src" ]; then
          echo "| $name | $scheme | $eb | - | - | - | - | missing input |"
          continue
        fi
        # cuSZ-Hi writes <input>.cusza next to its input and, on decompression,
        # <input minus last suffix>.cuszx = <input>.cuszx: link the input into a
        # writable folder.
        ln -s "$src" "$in" 2>/dev/null || cp "$src" "$in"
        status=ok
        # (subshells: a crash's "Aborted" message lands in the log, not the table)
        ( "${to[@]}" "$bin" -z -t f32 -m r2r -e "$eb" --predictor spline3 -s "$scheme" \
            -a cr-first --dim3 "$dims" --report time,cr -i "$in"; exit $? ) > "$in.comp.log" 2>&1
        rc=$?
        [ $rc -ne 0 ] && note "compress $(why $rc "$in.comp.log")"
        cr_tool=$(awk '/psz::comp::review::CR/ {print $2; exit}' "$in.comp.log")
        if [ ! -s "$in.cusza" ]; then
          [ $rc -eq 0 ] && note "no .cusza written"
          echo "| $name | $scheme | $eb | ${cr_tool:--} | - | - | - | $status |"
          continue
        fi
        ( "${to[@]}" "$bin" -x -i "$in.cusza" --compare "$in" --report time; exit $? ) > "$in.decomp.log" 2>&1
        rc=$?
        [ $rc -ne 0 ] && note "decompress $(why $rc "$in.decomp.log")"
        res=$(python3 -c "$check_py" "$src" "$in.cuszx" "$in.cusza" "$eb" 2>&1 | tail -1)
        read -r cr_file q psnr flag <<<"$res"
        if [ "$q" = ERR ]; then
          note "check: $psnr"; q=-; psnr=-
        elif ! [[ $q =~ ^[0-9]+\.[0-9]+$ ]]; then
          note "check failed: $res"; cr_file=-; q=-; psnr=-
        elif [ "$flag" != ok ]; then
          note "BOUND VIOLATED"
        fi
        echo "| $name | $scheme | $eb | ${cr_tool:--} | ${cr_file:--} | ${q:--} | ${psnr:--} | $status |"
      done
    done
  done
  echo
  log "run: logs under $CUSZHI_RUN_DIR/<scheme>/<bound>/<field>.{comp,decomp}.log"
}

case "${1:-all}" in
  export) do_export ;;
  patch)  do_export && do_patch ;;
  build)  do_export && do_patch && do_build ;;
  run)    do_run | tee "$CUSZHI_RUN_DIR.table.md" ;;
  all)    do_export && do_patch && do_build; do_run | tee "$CUSZHI_RUN_DIR.table.md" ;;
  *) echo "usage: $0 [all|export|patch|build|run]" >&2; exit 2 ;;
esac
