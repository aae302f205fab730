#!/bin/bash
# Issue 17's runs: the parallel HDF5 benchmark with one rank per GPU on one
# host with 2 or 4 GPUs, after `source .devdeps/env.sh`, a CUDA build of the
# plugin and `source .mpideps/env.sh` (docs/PERFORMANCE.md, "Several GPUs"):
#     bash tools/mpi/multi_gpu_run.sh PLUGIN_DIR OUT_DIR GPUS
# GPUS is 2 or 4: the GPUs the runs are planned for (CUDA_VISIBLE_DEVICES may
# hide some of a larger host's). In order, each with its own time limit:
#   - fz_mpi check with GPUS ranks, each on its own GPU (cuda:local);
#   - weak scaling, MIB_PER_RANK (default 4096) per rank, with 4, 2 and 1
#     ranks (on 2 GPUs, 4 ranks means two ranks per GPU);
#   - strong scaling, TOTAL_MIB (default GPUS x 4096) in all, the same ranks;
#   - weak scaling with GPUS ranks of uncompressed, fzgpu and cuszhi-cr, once
#     as it is (malloc-as-is), once with the filter's frames left in the
#     chunk's buffer as one process leaves them (frames-in-place,
#     H5Z_FZ_FRAME_BUFFERS=in-place) and once with glibc's malloc thresholds
#     raised (malloc-raised, GLIBC_TUNABLES; docs/PERFORMANCE.md, "Frame-sized
#     buffers").
# RUNS (default "check weak strong malloc") picks among them ("frames" for
# frames-in-place, "malloc" for malloc-raised; either runs malloc-as-is, the
# baseline of both), RANKS (default "4 2 1") the rank counts of weak and
# STRONG_RANKS (default RANKS) those of strong; PRESETS (default: uncompressed and every lossy preset) is for weak
# and strong. Each run has its own folder under OUT_DIR (gpu_mpi_run.sh's
# logs, JSON, summary.txt and tables.md), so a run stopped by its limit costs
# only itself; OUT_DIR/summary.txt gathers them. On 4 x H200 (3f57a86) check
# took 5 s, weak 224 s and strong with 4 ranks 53 s; on 2 x H200 (0bd676a)
# weak took 109 s with 4 ranks and 63 s with 2, and 1 rank did not finish in
# the 200 s limit then set; on 4 x H200 (a226823) each memory run took 53-61
# s, weak with 4 ranks 81 s, with 2 and 1 115 s, strong with 1 rank 98 s.
set -uo pipefail
plugin=${1:?plugin folder}; out=${2:?output folder}; gpus=${3:?GPUS: 2 or 4}
case $gpus in
  2) limits="60 260 240 60" ;;
  4) limits="60 300 240 90" ;;
  *) echo "multi_gpu_run.sh: GPUS is 2 or 4" >&2; exit 2 ;;
esac
read -r check_s weak_s strong_s malloc_s <<< "$limits"
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
  local start=$SECONDS work=${TMPDIR:-/tmp}/fz_mpi_work_$name
  env "${settings[@]}" FZ_MPI_WORK=$work timeout --kill-after=5 "$limit" bash tools/mpi/gpu_mpi_run.sh "$plugin" "$out/$name" "${ranks[@]}" \
    > "$out/$name.out" 2>&1
  local rc=$?
  # A rank that outlived its stopped mpirun would run on into the next run.
  pkill -KILL -f -- "--out $work" 2>/dev/null && echo "#### $name: ranks left running were killed" | tee -a "$out/summary.txt"
  rm -rf "$work"
  [ "$rc" -eq 0 ] || status=1
  [ -e "$out/$name/summary.txt" ] && cat "$out/$name/summary.txt" >> "$out/summary.txt"
  echo "#### $name: exit $rc, $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}
label="$gpus GPUs"
runs=" ${RUNS:-check weak strong malloc} "
ranks=${RANKS:-4 2 1}
[[ $runs == *" check "* ]] && run check "$check_s" STEPS=check MIXED=0 "$gpus"
[[ $runs == *" weak "* ]] && run weak "$weak_s" STEPS=weak MIB_PER_RANK="${MIB_PER_RANK:-4096}" LABEL="$label" $ranks
[[ $runs == *" strong "* ]] && run strong "$strong_s" STEPS=strong TOTAL_MIB="${TOTAL_MIB:-$((gpus * 4096))}" \
  LABEL="$label" ${STRONG_RANKS:-$ranks}
raised=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
memory_runs() {  # name, label, then settings: weak with GPUS ranks of three presets
  local name=$1 label_of_run=$2; shift 2
  run "$name" "$malloc_s" STEPS=weak PRESETS=none,fzgpu,cuszhi-cr MIB_PER_RANK="${MIB_PER_RANK:-4096}" \
    LABEL="$label, $label_of_run" "$@" "$gpus"
}
if [[ $runs == *" malloc "* || $runs == *" frames "* ]]; then
  memory_runs malloc-as-is "malloc as it is"
  [[ $runs == *" frames "* ]] && memory_runs frames-in-place "frames in place" H5Z_FZ_FRAME_BUFFERS=in-place
  [[ $runs == *" malloc "* ]] && memory_runs malloc-raised "malloc thresholds raised" GLIBC_TUNABLES=$raised
fi
exit $status
