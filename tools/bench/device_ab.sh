#!/usr/bin/env bash
# Several revisions side by side in one device call: each is built for one GPU
# arch, runs a chosen set of GPU tests, the per-kernel time of chosen kernels
# (Nsight Compute) and fz_device_bench, and one table compares them. Made for
# device time that comes in few calls (30 minutes a session): measuring two
# candidate kernels against main costs one call instead of three.
#
# Here (the development machine), after ../shared/tools/device-deps.sh:
#   tools/bench/device_ab.sh pack main wip/huffman-pairs wip/huffman-pairs-skip
# (revisions of this session: only main persists between sessions, so a
# branch not measured and merged or dropped within its session is lost)
# writes .ab/ (git-ignored): one exported tree per revision (named by its
# position and short hash) and one copy of .devdeps. Then, on the device
# machine, with carry [".ab"]:
#   tools/bench/device_ab.sh run
# reads the settings below from the environment, builds the trees in
# parallel, and writes $OUT/ab.md (the table) and $OUT/logs.tar.gz (each
# revision's build, test, ncu and bench logs in one archive: the device hands
# back at most 8 files).
#
# Environment for `run` (all optional):
#   AB_ARCH     CUDA arch                                   (90)
#   AB_TARGETS  ninja targets                               (fz_device_bench and the tests AB_TESTS names)
#   AB_TESTS    ctest -R regex over the GPU tests           (huffman|frame_digest_gpu|backend_identity)
#   AB_KERNELS  ncu -k regex; each kernel's mean over its launches (decode_blocks)
#   AB_PRESETS  fz_device_bench presets, comma-separated    (cusz@1e-2,cusz@1e-3,cusz@1e-4)
#   AB_SIDE     the mirrored field's side (side^3 float32)  (512)
#   AB_REPS     fz_device_bench timed calls                 (3)
set -eu -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ab=$repo/.ab

pack() {
  [ $# -ge 1 ] || { echo "device_ab: pack needs revisions" >&2; exit 2; }
  [ -d "$repo/.devdeps" ] || { echo "device_ab: no .devdeps (run ../shared/tools/device-deps.sh)" >&2; exit 2; }
  rm -rf "$ab"
  mkdir -p "$ab"
  cp -r "$repo/.devdeps" "$ab/.devdeps"
  local k=0
  for rev in "$@"; do
    local hash
    hash=$(git -C "$repo" rev-parse --short "$rev^{commit}")
    local name="$k-$hash"
    mkdir -p "$ab/$name"
    git -C "$repo" archive "$hash" | tar -x -C "$ab/$name"
    echo "$rev" > "$ab/$name/.ab_revision"
    k=$((k + 1))
  done
  du -sh "$ab"
}

run() {
  cd "$ab"
  # shellcheck disable=SC1091
  source .devdeps/env.sh
  local out=${OUT:-$ab/out}
  # The device hands back at most 8 files: the logs go into one archive.
  local logs=$ab/logs
  rm -rf "$logs"
  mkdir -p "$out" "$logs"
  local arch=${AB_ARCH:-90}
  local tests=${AB_TESTS:-huffman|frame_digest_gpu|backend_identity}
  local targets=${AB_TARGETS:-fz_device_bench huffman_cuda_test huffman_stage_gpu_test frame_digest_gpu_test backend_identity_gpu_test}
  local kernels=${AB_KERNELS:-decode_blocks}
  local presets=${AB_PRESETS:-cusz@1e-2,cusz@1e-3,cusz@1e-4}
  local side=${AB_SIDE:-512} reps=${AB_REPS:-3}
  local trees=()
  for d in */; do
    d=${d%/}
    [ -f "$d/.ab_revision" ] && trees+=("$d")
  done
  [ ${#trees[@]} -gt 0 ] || { echo "device_ab: nothing packed in $ab" >&2; exit 2; }
  local jobs=$(( $(nproc) / ${#trees[@]} ))
  [ "$jobs" -ge 1 ] || jobs=1
  # Builds in parallel; `wait` on each pid (never a loop over pgrep, whose
  # pattern would match this script's own command line).
  local pids=() target_list=()
  read -r -a target_list <<< "$targets"
  for d in "${trees[@]}"; do
    ( cmake -S "$d" -B "$d/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
        > "$logs/$d.build.log" 2>&1 &&
      ninja -C "$d/build-gpu" -j "$jobs" "${target_list[@]}" >> "$logs/$d.build.log" 2>&1 ) &
    pids+=($!)
  done
  local built=()
  for i in "${!trees[@]}"; do
    if wait "${pids[$i]}"; then built+=(ok); else built+=(failed); fi
  done
  {
    echo "| revision | build | GPU tests (${tests//|/ or }) | kernels ${kernels//|/ or }: mean us per preset | fz_device_bench: preset ratio compress / decompress GB/s (device memory, x chunk) |"
    echo "|---|---|---|---|---|"
  } > "$out/ab.md"
  for i in "${!trees[@]}"; do
    local d=${trees[$i]} rev
    rev=$(cat "$d/.ab_revision")
    if [ "${built[$i]}" != ok ]; then
      echo "| $rev ($d) | failed (see logs/$d.build.log in logs.tar.gz) | | | |" >> "$out/ab.md"
      continue
    fi
    local tested
    if ctest --test-dir "$d/build-gpu" -L gpu -R "$tests" --output-on-failure > "$logs/$d.ctest.log" 2>&1; then
      tested=$(grep -o "[0-9]*% tests passed.*" "$logs/$d.ctest.log" | head -1 || true)
    else
      tested="FAILED: $(grep -o "[0-9]*% tests passed.*" "$logs/$d.ctest.log" | head -1 || true)"
    fi
    local times=""
    for p in ${presets//,/ }; do
      # Per-kernel summaries (averages over each kernel's launches), kept
      # whole in the logs archive and summed up by ncu_summary.py.
      local summary="$logs/$d.${p//@/_}.ncu.txt"  # '@' is not a name the device hands back
      ncu --clock-control none --print-summary per-kernel -k "regex:$kernels" \
          --metrics gpu__time_duration.sum,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
          "$d/build-gpu/tools/fz_device_bench" --data "$FZ_DATA" --side "$side" --reps 1 --presets "$p" \
          > "$summary" 2>&1 || true
      times="$times$p: $(python3 "$here/ncu_summary.py" --brief "$summary" || true); "
    done
    local bench
    bench=$("$d/build-gpu/tools/fz_device_bench" --data "$FZ_DATA" --side "$side" --reps "$reps" --presets "$presets" 2>&1 |
            tee "$logs/$d.bench.log" | awk -F'|' '/^\| [a-z]/ && $2 !~ /preset/ { gsub(/ /, "", $2);
              gsub(/ /, "", $4); gsub(/ /, "", $5); gsub(/ /, "", $6); gsub(/ /, "", $8); gsub(/ /, "", $9);
              printf "%s %s %s / %s", $2, $4, $5, $6;
              if ($8 != "") printf " (memory x chunk %s / %s)", $8, $9;
              printf "; " }' || true)
    echo "| $rev ($d) | ok | $tested | $times | $bench |" >> "$out/ab.md"
  done
  tar -czf "$out/logs.tar.gz" -C "$ab" logs
  cat "$out/ab.md"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  *) echo "usage: tools/bench/device_ab.sh pack REV... | run" >&2; exit 2 ;;
esac
