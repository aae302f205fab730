/* fz_mpi bench's measurements beside HDF5's own time: the memory a phase
 * costs each rank (page faults, resident memory above its start), the file
 * system alone (the stored bytes through plain MPI-IO) and the untimed
 * warm-up of a preset on one chunk. */
#include "fz_mpi_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long kib = 0;
  const size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      kib = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return kib;
}

static long minor_faults(void) {
  struct rusage usage;
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_minflt : 0;
}

MemoryMark memory_mark(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) {
    fputs("5", f);  /* resets VmHWM to the present resident set */
    fclose(f);
  }
  MemoryMark mark = {minor_faults(), status_kib("VmRSS")};
  return mark;
}

/* {faults, MiB above the start} since each rank's `mark`, the largest
 * rank's each (collective) */
void memory_since(MemoryMark mark, double out[2]) {
  const long peak = status_kib("VmHWM");
  out[0] = (double)(minor_faults() - mark.faults);
  out[1] = peak > mark.start_kib ? (peak - mark.start_kib) / 1024.0 : 0;
  MPI_Allreduce(MPI_IN_PLACE, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

/* The file system alone: every rank writes, then reads, `bytes` at its own
 * offset with plain collective MPI-IO (no HDF5, no filter), in 1 MiB units.
 * Slowest rank's seconds. The benchmark passes a file's stored size split
 * over the ranks, so this is the cost of the bytes the filter leaves. */
void raw_io(const char *path, char *buffer, size_t bytes, double *write_s, double *read_s) {
  const size_t unit = (size_t)1 << 20, units = bytes / unit;
  MPI_Datatype block;
  MPI_Type_contiguous((int)unit, MPI_BYTE, &block);
  MPI_Type_commit(&block);
  MPI_File fh;
  double mine[2];
  MPI_Barrier(MPI_COMM_WORLD);
  double start = now();
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    die("MPI_File_open %s failed", path);
  MPI_File_write_at_all(fh, (MPI_Offset)(units * unit) * g_rank, buffer, (int)units, block, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  mine[0] = now() - start;
  MPI_Barrier(MPI_COMM_WORLD);
  start = now();
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    die("MPI_File_open %s failed", path);
  MPI_File_read_at_all(fh, (MPI_Offset)(units * unit) * g_rank, buffer, (int)units, block, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  mine[1] = now() - start;
  MPI_Allreduce(MPI_IN_PLACE, mine, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  *write_s = mine[0];
  *read_s = mine[1];
  MPI_Type_free(&block);
  if (g_rank == 0) remove(path);
}

/* Each rank writes and reads one chunk with the preset in a file of its own
 * in memory (HDF5's core driver), untimed: the first use of a preset loads its
 * GPU kernels and, for the first preset, starts CUDA, which would otherwise
 * count in the first timed write. */
void warm_up(const Shape *s, hid_t dcpl, const void *rows) {
  Shape one = *s;
  one.dims[0] = s->chunks[0];
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  CHECK_H5(H5Pset_fapl_core(fapl, 1 << 20, 0));
  char name[64];
  snprintf(name, sizeof name, "fz_mpi_warm_up_%d.h5", g_rank);
  hid_t file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  hid_t space = H5Screate_simple(one.rank_dims, one.dims, NULL);
  hid_t dataset = H5Dcreate2(file, "x", one.type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dataset < 0) die("cannot create the warm-up dataset (is the filter in HDF5_PLUGIN_PATH?)");
  CHECK_H5(H5Dwrite(dataset, one.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows));
  CHECK_H5(H5Dclose(dataset));
  dataset = H5Dopen2(file, "x", H5P_DEFAULT);
  void *back = xmalloc(one.dims[0] * row_elements(&one) * one.element);
  CHECK_H5(H5Dread(dataset, one.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, back));
  free(back);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
  H5Pclose(fapl);
}
