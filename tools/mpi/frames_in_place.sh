#!/bin/bash
# Runs one rank of an MPI job with the filter's frames left in the chunk's
# buffer, as one process writes them: the "before" of the frame-sized buffers'
# A/B (multi_gpu_run.sh, RUNS=frames; docs/PERFORMANCE.md, "Frame-sized
# buffers"). The filter hands a rank's frames back in buffers of their own
# size only where a launcher's local-rank variable is set
# (filter/environment.hpp), so this hides those variables from the rank, after
# pinning the rank to the GPU the variable would have chosen
# (H5Z_FZ_DEVICE=cuda:N) when the device is left to the filter (unset, auto or
# cuda:local). Open MPI's own start-up does not read the variable.
#     mpirun -np N tools/mpi/frames_in_place.sh PROGRAM ARGS...
set -euo pipefail
variables="OMPI_COMM_WORLD_LOCAL_RANK MV2_COMM_WORLD_LOCAL_RANK MPI_LOCALRANKID PALS_LOCAL_RANKID SLURM_LOCALID"
local_rank=
for name in $variables; do
  if [ -n "${!name:-}" ]; then local_rank=${!name}; break; fi
done
[ -n "$local_rank" ] || { echo "frames_in_place.sh: no launcher's local rank is set (run it under mpirun)" >&2; exit 2; }
case ${H5Z_FZ_DEVICE:-auto} in
  auto|cuda:local) export H5Z_FZ_DEVICE=cuda:$local_rank ;;
esac
unset $variables
exec "$@"
