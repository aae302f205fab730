#!/bin/bash
# Issue 17's runs: the parallel HDF5 benchmark with one rank per GPU, on one
# host with 4 GPUs, after `source .devdeps/env.sh`, a CUDA build of the
# plugin and `source .mpideps/env.sh` (docs/PERFORMANCE.md, "Several GPUs"):
#     bash tools/mpi/multi_gpu_run.sh PLUGIN_DIR OUT_DIR PART
# PART 1: fz_mpi check with 4 ranks on 4 GPUs (cuda:local); weak scaling,
#         MIB_PER_RANK (default 4096) per rank, with 4, 2 and 1 ranks on 4
#         GPUs; then 4 ranks on 2 GPUs (CUDA_VISIBLE_DEVICES=0,1: two ranks
#         per GPU). 1 and 2 ranks on 2 GPUs are the same runs as on 4 (rank r
#         takes GPU r), so they are not repeated.
# PART 2: strong scaling, TOTAL_MIB (default 16384) in all, with 4, 2 and 1
#         ranks on 4 GPUs and 4 ranks on 2 GPUs; then weak scaling with 4 and
#         1 ranks under glibc's malloc thresholds raised (GLIBC_TUNABLES, see
#         README "Several GPUs"), against the same presets without, in one run.
# Each run has its own folder under OUT_DIR (gpu_mpi_run.sh's logs, JSON,
# summary.txt and tables.md) and a time limit, so a slow run costs only itself.
# PRESETS (default: uncompressed and every lossy preset) applies to every run.
set -uo pipefail
plugin=${1:?plugin folder}; out=${2:?output folder}; part=${3:?part 1 or 2}
mkdir -p "$out"
export PRESETS=${PRESETS:-none,pfpl,fzgpu,cusz,cuszhi-tp,cuszhi-cr}
status=0
run() {  # folder, seconds, then VAR=value settings and the rank counts
  local name=$1 limit=$2; shift 2
  local settings=() ranks=() arg
  for arg in "$@"; do
    if [[ $arg == *=* ]]; then settings+=("$arg"); else ranks+=("$arg"); fi
  done
  echo "#### $name (${settings[*]}; ranks ${ranks[*]}), limit $limit s" | tee -a "$out/summary.txt"
  local start=$SECONDS
  env "${settings[@]}" timeout "$limit" bash tools/mpi/gpu_mpi_run.sh "$plugin" "$out/$name" "${ranks[@]}" \
    > "$out/$name.out" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || status=1
  [ -e "$out/$name/summary.txt" ] && cat "$out/$name/summary.txt" >> "$out/summary.txt"
  echo "#### $name: exit $rc, $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}
case $part in
1)
  run check-4gpu 90 STEPS=check MIXED=0 4
  run weak-4gpu 320 STEPS=weak MIB_PER_RANK=${MIB_PER_RANK:-4096} LABEL="4 GPUs" 4 2 1
  run weak-2gpu 110 STEPS=weak MIB_PER_RANK=${MIB_PER_RANK:-4096} LABEL="2 GPUs" CUDA_VISIBLE_DEVICES=0,1 4
  ;;
2)
  run strong-4gpu 300 STEPS=strong TOTAL_MIB=${TOTAL_MIB:-16384} LABEL="4 GPUs" 4 2 1
  run strong-2gpu 90 STEPS=strong TOTAL_MIB=${TOTAL_MIB:-16384} LABEL="2 GPUs" CUDA_VISIBLE_DEVICES=0,1 4
  tuned=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296
  run malloc-default 60 STEPS=weak PRESETS=none,fzgpu,cuszhi-cr MIB_PER_RANK=${MIB_PER_RANK:-4096} LABEL="default malloc" 4 1
  run malloc-tuned 60 STEPS=weak PRESETS=none,fzgpu,cuszhi-cr MIB_PER_RANK=${MIB_PER_RANK:-4096} LABEL="malloc thresholds raised" GLIBC_TUNABLES=$tuned 4 1
  ;;
*) echo "multi_gpu_run.sh: PART is 1 or 2" >&2; exit 2 ;;
esac
exit $status
