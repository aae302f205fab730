#!/usr/bin/env bash
# On the GPU machine: the same-run comparison of this tree (build-gpu, made by
# tools/setup/gpu_check.sh) with a baseline tree whose source is in $1 (e.g.
# `git archive <rev>` unpacked into build-baseline/src), built beside it. The
# device-resident table and the h5py table of each, interleaved (new, base,
# new, base) so that drift in the machine hits both. Tables go to $OUT.
#   source .devdeps/env.sh && bash tools/setup/gpu_check.sh && bash tools/setup/gpu_compare.sh build-baseline/src
# With BUILD_ONLY=1 it builds the baseline and stops (for a first, shorter call);
# ROUNDS (default 2) and REPS (h5py repetitions, default 3) set the run's length.
set -uo pipefail
base_src="$(cd "$1" && pwd)"
base_build="$(dirname "$base_src")/gpu"
arch="${ARCH:-90}"
out="${OUT:-/tmp/gpu_compare}"
mkdir -p "$out"
if [[ ! -x "$base_build/tools/fz_device_bench" ]]; then
  cmake -S "$base_src" -B "$base_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    >"$out/base_configure.log" 2>&1 &&
    cmake --build "$base_build" -j "$(nproc)" --target fz_device_bench H5Zfz >"$out/base_build.log" 2>&1 ||
    { tail -30 "$out/base_configure.log" "$out/base_build.log"; exit 1; }
fi
[[ "${BUILD_ONLY:-0}" == 1 ]] && exit 0
status=0
for round in $(seq 1 "${ROUNDS:-2}"); do
  for which in new base; do
    if [[ $which == new ]]; then build="$PWD/build-gpu"; src="$PWD"; else build="$base_build"; src="$base_src"; fi
    echo "==> round $round, $which: fz_device_bench --reps 5"
    "$build/tools/fz_device_bench" --reps 5 2>&1 | tee "$out/device_${which}_$round.md" || status=1
    echo "==> round $round, $which: h5py_bench.py --codecs fzgpu,pfpl,lossless --reps ${REPS:-3}"
    (cd "$src" && H5Z_FZ_DEVICE=auto python3 tools/bench/h5py_bench.py --plugin-dir "$build/plugin" \
       --codecs fzgpu,pfpl,lossless --reps "${REPS:-3}") 2>&1 | tee "$out/h5py_${which}_$round.md" || status=1
  done
done
exit $status
