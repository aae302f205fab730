/* H5Z-FZ under parallel HDF5: a check and a scaling benchmark, in C against
 * HDF5's public API and MPI only (the filter is found through
 * HDF5_PLUGIN_PATH, as any application finds it). Built by tools/mpi/build.sh
 * against Debian's parallel HDF5 (libhdf5-openmpi-dev) and Open MPI. This
 * file holds the usage, the options and main; fz_mpi_common.h names the files
 * of the check, the benchmark and the helpers they share.
 *
 *   mpirun -np N fz_mpi check --out DIR [--data DIR] [--json FILE]
 *       Every preset and mode: N ranks write one dataset collectively (rows
 *       split unevenly, so chunks are shared by ranks and ragged at the
 *       edges) and read it back collectively; rank 0 writes the same data
 *       from one process. Checked: the filter's stored options, every chunk
 *       frame for frame, each rank's read against the one-process values,
 *       every element within the bound. Then the rules parallel HDF5 sets
 *       (allocation and fill times, independent writes) are tried.
 *
 *   mpirun -np N fz_mpi bench --out DIR [--data DIR] [--presets none,fzgpu,...]
 *          [--mode noa] [--bound 1e-3] (--mib-per-rank M | --total-mib M)
 *          [--chunk-mib 4] [--reps 1] [--no-verify] [--no-first-write] [--json FILE]
 *       Collective write and read of wmag91 rows tiled to M MiB per rank
 *       (weak scaling) or M MiB in all (strong scaling): seconds, GB/s per
 *       rank and in total, ratio, and the part of each that the filter spent
 *       (h5z_fz_filter_totals) and the file system (the stored bytes through
 *       plain MPI-IO) against HDF5's own, and the memory each phase took
 *       (page faults, resident memory above the rank's start). Each preset
 *       is warmed up untimed on one chunk first, and the first filtered
 *       preset also writes and reads the whole slab once untimed
 *       (--no-first-write skips it): a process's first large filtered write
 *       pays for growing its heap, since HDF5 holds all of a rank's chunks
 *       at once, and that would fall on whichever preset came first. Every chunk is compared, frame for frame, with a
 *       one-process write of the same rows.
 *
 * Each rank prints the device the filter chose for it (h5z_fz_device_in_use:
 * H5Z_FZ_DEVICE and the MPI local rank). Exit status 1 when a check fails. */
#include "fz_mpi_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *option(int argc, char **argv, const char *name, const char *fallback) {
  for (int i = 2; i + 1 < argc; ++i)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

static int flag(int argc, char **argv, const char *name) {
  for (int i = 2; i < argc; ++i)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (argc < 2 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "bench") != 0)) {
    if (g_rank == 0) fprintf(stderr, "usage: mpirun -np N fz_mpi check|bench --out DIR [options] (see fz_mpi.c)\n");
    MPI_Finalize();
    return 2;
  }
  const char *out = option(argc, argv, "--out", NULL);
  if (!out) die("--out DIR is required");
  mkdir(out, 0755);
  const char *data_dir = option(argc, argv, "--data", getenv("FZ_DATA") ? getenv("FZ_DATA") : "../shared/data");
  const char *json = option(argc, argv, "--json", NULL);
  bind_plugin();
  int pass;
  if (strcmp(argv[1], "check") == 0) {
    pass = run_check(out, data_dir, json);
  } else {
    char presets[1024];
    snprintf(presets, sizeof presets, "%s", option(argc, argv, "--presets", "none,lossless,pfpl,fzgpu,cusz,cuszhi-tp,cuszhi-cr"));
    const char *mode = option(argc, argv, "--mode", "noa");
    if (mode_id(mode) < 0) die("--mode is abs, noa or rel");
    const double mib_per_rank = atof(option(argc, argv, "--mib-per-rank", "0"));
    const double total_mib = atof(option(argc, argv, "--total-mib", "0"));
    if ((mib_per_rank > 0) == (total_mib > 0)) die("give one of --mib-per-rank M (weak) and --total-mib M (strong)");
    pass = run_bench(out, data_dir, presets, mode, atof(option(argc, argv, "--bound", "1e-3")), mib_per_rank,
                     total_mib, atof(option(argc, argv, "--chunk-mib", "4")), atoi(option(argc, argv, "--reps", "1")),
                     !flag(argc, argv, "--no-verify"), !flag(argc, argv, "--no-first-write"), json);
  }
  MPI_Finalize();
  return pass ? 0 : 1;
}
