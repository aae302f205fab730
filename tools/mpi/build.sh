#!/bin/bash
# Builds tools/mpi/fz_mpi (the parallel HDF5 check and benchmark: fz_mpi.c and
# the fz_mpi_*.c beside it, fz_mpi_common.h their shared declarations) against
# Debian's parallel HDF5 (libhdf5-openmpi-dev) and Open MPI, or the unpacked
# copies that tools/setup/mpi_devdeps.sh prepares for the GPU machines
# (FZ_MPI_* and FZ_PHDF5_* from .mpideps/env.sh).
#     bash tools/mpi/build.sh [OUTDIR]     -> OUTDIR/fz_mpi (default build-mpi), and
#                                             OUTDIR/direct_chunk_probe (issue 32 item 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-build-mpi}
mkdir -p "$out"
lib=/usr/lib/x86_64-linux-gnu
mpi_include=${FZ_MPI_INCLUDE:-$lib/openmpi/include}
mpi_lib=${FZ_MPI_LIB:-$lib/openmpi/lib}
phdf5_include=${FZ_PHDF5_INCLUDE:-/usr/include/hdf5/openmpi}
phdf5_lib=${FZ_PHDF5_LIB:-$lib/hdf5/openmpi}
for need in "$mpi_include/mpi.h" "$phdf5_include/hdf5.h" "$phdf5_lib/libhdf5.so"; do
  [ -e "$need" ] || { echo "tools/mpi/build.sh: $need is missing (Debian: apt-get install libhdf5-openmpi-dev)" >&2; exit 1; }
done
sources=()
for name in fz_mpi fz_mpi_common fz_mpi_errors fz_mpi_plugin fz_mpi_hdf5 fz_mpi_check fz_mpi_rules fz_mpi_measure fz_mpi_bench; do
  sources+=("$here/$name.c")
done
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Wno-unused-parameter -o "$out/fz_mpi" "${sources[@]}" \
  -I"$mpi_include" -I"$phdf5_include" -L"$mpi_lib" -L"$phdf5_lib" \
  -Wl,-rpath,"$phdf5_lib" -Wl,-rpath,"$mpi_lib" -lhdf5 -lmpi -ldl -lm
${CC:-cc} -std=c11 -O2 -Wall -Wextra -o "$out/direct_chunk_probe" "$here/direct_chunk_probe.c" \
  -I"$mpi_include" -I"$phdf5_include" -L"$mpi_lib" -L"$phdf5_lib" \
  -Wl,-rpath,"$phdf5_lib" -Wl,-rpath,"$mpi_lib" -lhdf5 -lmpi -lz
echo "built $out/fz_mpi $out/direct_chunk_probe"
