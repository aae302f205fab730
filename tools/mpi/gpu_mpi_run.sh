#!/bin/bash
# The parallel HDF5 runs on a GPU machine (issue 16: ranks sharing one GPU;
# issue 17: one rank per GPU), after `source .devdeps/env.sh` and
# `source .mpideps/env.sh` (tools/setup/mpi_devdeps.sh) and a CUDA build of
# the plugin:
#     bash tools/mpi/gpu_mpi_run.sh PLUGIN_DIR OUT_DIR [RANKS...] 
# Builds tools/mpi/fz_mpi, then for each rank count (default 1 2 4):
#   - fz_mpi check with every rank on the GPU (H5Z_FZ_DEVICE=cuda:local);
#   - with 2 ranks or more (and MIXED not 0), a mixed job: rank 0 on the CPU,
#     the others on the GPU, and the reverse, to show a rank without a GPU
#     writes the same frames;
#   - fz_mpi bench, weak (MIB_PER_RANK, default 1024) and strong (TOTAL_MIB,
#     default 4096) scaling, under H5Z_FZ_DEVICE=auto (the default).
# STEPS (default "check weak strong") picks among them; CUDA_VISIBLE_DEVICES
# limits the GPUs (2 of a 4-GPU host); FZ_MPI_BUILD (default build-mpi) is
# where fz_mpi is built, FZ_MPI_WORK where the ranks write; LABEL names the
# runs in tables.md
# (tools/mpi/scaling_tables.py, written beside the JSON). Logs and JSON go to
# OUT_DIR, and every summary line and table also to OUT_DIR/summary.txt.
set -uo pipefail
plugin=${1:?plugin folder}; out=${2:?output folder}; shift 2
ranks=${*:-1 2 4}
mkdir -p "$out"
work=${FZ_MPI_WORK:-/tmp/fz_mpi_work}
mkdir -p "$work"
[ -e "$plugin/libH5Zfz.so" ] || { echo "gpu_mpi_run.sh: no libH5Zfz.so in $plugin (build the plugin first)" >&2; exit 1; }
export HDF5_PLUGIN_PATH=$(cd "$plugin" && pwd)
build=${FZ_MPI_BUILD:-build-mpi}
bash tools/mpi/build.sh "$build" > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
bin=$build/fz_mpi
presets=${PRESETS:-none,lossless,pfpl,fzgpu,cusz,cuszhi-tp,cuszhi-cr}
status=0
step() {  # name, then the command; keeps going, remembers a failure
  local name=$1; shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || status=1
  echo "== $name: exit $rc, $((SECONDS - start)) s; $(grep -E 'passed|FAILED|filter device' "$out/$name.log" | sort -u | tr '\n' ' ' | cut -c1-600)" | tee -a "$out/summary.txt"
}
steps=${STEPS:-check weak strong}
table() { grep -vE '^rank |pmix|^ |^-|PMIx|^$|MCA|startup|continue|system|suppress|environment' "$out/$1.log" | tee -a "$out/summary.txt"; }
for n in $ranks; do
  [[ " $steps " == *" check "* ]] || continue
  step "check-$n-cuda" env H5Z_FZ_DEVICE=cuda:local mpirun -np "$n" $bin check --out "$work" --json "$out/check-$n-cuda.json"
  if [ "$n" -ge 2 ] && [ "${MIXED:-1}" != 0 ]; then
    rest=$((n - 1))
    step "check-$n-cpu-first" mpirun -np 1 -x H5Z_FZ_DEVICE=cpu $bin check --out "$work" --json "$out/check-$n-cpu-first.json" \
      : -np $rest -x H5Z_FZ_DEVICE=cuda:local $bin check --out "$work"
    step "check-$n-gpu-first" mpirun -np 1 -x H5Z_FZ_DEVICE=cuda:local $bin check --out "$work" --json "$out/check-$n-gpu-first.json" \
      : -np $rest -x H5Z_FZ_DEVICE=cpu $bin check --out "$work"
  fi
done
# Each rank gets its share of the cores, bound (Open MPI's default binds a rank
# to one core when there are two ranks or fewer; the filter's CPU threads
# follow the cores a rank may use).
cores=$(nproc)
mapping() { echo "--map-by slot:PE=$(( cores / $1 > 0 ? cores / $1 : 1 )) --bind-to core"; }
for n in $ranks; do
  [[ " $steps " == *" weak "* ]] || continue
  step "weak-$n" mpirun -np "$n" $(mapping "$n") $bin bench --out "$work" --presets "$presets" --mib-per-rank "${MIB_PER_RANK:-1024}" \
    --json "$out/weak-$n.json"
  table "weak-$n"
done
for n in $ranks; do
  [[ " $steps " == *" strong "* ]] || continue
  step "strong-$n" mpirun -np "$n" $(mapping "$n") $bin bench --out "$work" --presets "$presets" --total-mib "${TOTAL_MIB:-4096}" \
    --json "$out/strong-$n.json"
  table "strong-$n"
done
reports=$(ls "$out"/weak-*.json "$out"/strong-*.json 2>/dev/null)
[ -z "$reports" ] || python3 tools/mpi/scaling_tables.py $reports --label "${LABEL:-scaling}" > "$out/tables.md" || status=1
rm -rf "$work"
exit $status
