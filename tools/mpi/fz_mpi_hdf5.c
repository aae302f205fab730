/* fz_mpi's HDF5 helpers, shared by the check and the benchmark: the presets
 * as cd_values, the fields from --data, the MPI-IO file access and the
 * collective transfer, writes and reads of a band of rows, and the
 * frame-for-frame comparison of two files' chunks. */
#include "fz_mpi_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- presets and cd_values (the filter's stored form, docs/FORMAT.md) ---- */

int preset_id(const char *name) {
  static const char *names[] = {"default", "lossless", "pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"};
  for (int i = 0; i < 7; ++i)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

int mode_id(const char *name) {
  if (strcmp(name, "abs") == 0) return 0;
  if (strcmp(name, "noa") == 0) return 1;
  if (strcmp(name, "rel") == 0) return 2;
  return -1;
}

/* (preset, mode, bound low 32 bits, bound high 32 bits), or (preset) lossless. */
static size_t make_cd(int preset, int mode, double bound, unsigned cd[4]) {
  cd[0] = (unsigned)preset;
  if (preset <= 1) return 1;
  uint64_t bits;
  memcpy(&bits, &bound, sizeof bits);
  cd[1] = (unsigned)mode;
  cd[2] = (unsigned)(bits & 0xffffffffu);
  cd[3] = (unsigned)(bits >> 32);
  return 4;
}

/* ---- the fields ---- */

void *load_field(const char *dir, const char *name, size_t bytes) {
  char file[4096];
  snprintf(file, sizeof file, "%s/%s", dir, name);
  FILE *in = fopen(file, "rb");
  if (!in) die("cannot open %s: %s (give --data or FZ_DATA)", file, strerror(errno));
  void *data = xmalloc(bytes);
  if (fread(data, 1, bytes, in) != bytes) die("%s is shorter than %zu bytes", file, bytes);
  fclose(in);
  return data;
}

/* ---- HDF5 helpers ---- */

hid_t mpio_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  CHECK_H5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
  return fapl;
}

hid_t collective_dxpl(void) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  CHECK_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
  return dxpl;
}

/* Rows [first, first + count) of a dataset shaped `dims`, in file and memory. */
void row_spaces(hid_t dataset, int rank_dims, const hsize_t *dims, hsize_t first, hsize_t count,
                hid_t *file_space, hid_t *memory_space) {
  hsize_t start[8] = {0}, extent[8];
  for (int d = 0; d < rank_dims; ++d) extent[d] = dims[d];
  start[0] = first;
  extent[0] = count;
  *file_space = H5Dget_space(dataset);
  if (count == 0) {
    CHECK_H5(H5Sselect_none(*file_space));
    hsize_t one = 1;
    *memory_space = H5Screate_simple(1, &one, NULL);
    CHECK_H5(H5Sselect_none(*memory_space));
  } else {
    CHECK_H5(H5Sselect_hyperslab(*file_space, H5S_SELECT_SET, start, NULL, extent, NULL));
    *memory_space = H5Screate_simple(rank_dims, extent, NULL);
  }
}

hsize_t row_elements(const Shape *s) {
  hsize_t n = 1;
  for (int d = 1; d < s->rank_dims; ++d) n *= s->dims[d];
  return n;
}

hid_t filtered_dcpl(const Shape *s, int preset, int mode, double bound) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  CHECK_H5(H5Pset_chunk(dcpl, s->rank_dims, s->chunks));
  if (preset >= 0) {
    unsigned cd[4];
    const size_t n = make_cd(preset, mode, bound, cd);
    CHECK_H5(H5Pset_filter(dcpl, FILTER_ID, H5Z_FLAG_MANDATORY, n, cd));
  }
  return dcpl;
}

/* Writes rows [first, first + count) collectively (a parallel file) or all of
 * `data` (a one-process file, fapl H5P_DEFAULT); `phases`, when given, gets
 * the seconds of each phase (WritePhases). */
void write_dataset_timed(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows,
                         hsize_t first, hsize_t count, WritePhases *phases) {
  double t0 = now();
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (file < 0) die("cannot create %s", path);
  hid_t space = H5Screate_simple(s->rank_dims, s->dims, NULL);
  hid_t dataset = H5Dcreate2(file, "x", s->type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dataset < 0) die("cannot create the dataset in %s (is the filter in HDF5_PLUGIN_PATH?)", path);
  hid_t file_space, memory_space, dxpl = fapl == H5P_DEFAULT ? H5Pcreate(H5P_DATASET_XFER) : collective_dxpl();
  row_spaces(dataset, s->rank_dims, s->dims, first, count, &file_space, &memory_space);
  double t1 = now();
  if (H5Dwrite(dataset, s->type, memory_space, file_space, dxpl, rows) < 0) die("writing %s failed", path);
  double t2 = now();
  H5Pclose(dxpl);
  H5Sclose(file_space);
  H5Sclose(memory_space);
  H5Sclose(space);
  CHECK_H5(H5Dclose(dataset));
  CHECK_H5(H5Fclose(file));
  if (phases) *phases = (WritePhases){t1 - t0, t2 - t1, now() - t2};
}

void write_dataset(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows, hsize_t first,
                   hsize_t count) {
  write_dataset_timed(path, fapl, s, dcpl, rows, first, count, NULL);
}

void read_rows(const char *path, hid_t fapl, const Shape *s, void *rows, hsize_t first, hsize_t count) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  if (file < 0) die("cannot open %s", path);
  hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT);
  hid_t file_space, memory_space, dxpl = fapl == H5P_DEFAULT ? H5Pcreate(H5P_DATASET_XFER) : collective_dxpl();
  row_spaces(dataset, s->rank_dims, s->dims, first, count, &file_space, &memory_space);
  if (H5Dread(dataset, s->type, memory_space, file_space, dxpl, rows) < 0) die("reading %s failed", path);
  H5Pclose(dxpl);
  H5Sclose(file_space);
  H5Sclose(memory_space);
  CHECK_H5(H5Dclose(dataset));
  CHECK_H5(H5Fclose(file));
}

/* Stored bytes of dataset "x" (one process, no MPI driver). */
double stored_bytes(const char *path) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT);
  const double bytes = (double)H5Dget_storage_size(dataset);
  H5Dclose(dataset);
  H5Fclose(file);
  return bytes;
}

/* The filter's stored cd_values in two files are equal. */
static int same_filter(hid_t a, hid_t b) {
  hid_t pa = H5Dget_create_plist(a), pb = H5Dget_create_plist(b);
  unsigned ca[64], cb[64], fa = 0, fb = 0;
  size_t na = 64, nb = 64;
  const int ok = H5Pget_filter_by_id2(pa, FILTER_ID, &fa, &na, ca, 0, NULL, NULL) >= 0 &&
                 H5Pget_filter_by_id2(pb, FILTER_ID, &fb, &nb, cb, 0, NULL, NULL) >= 0 && na == nb &&
                 memcmp(ca, cb, na * sizeof(unsigned)) == 0;
  H5Pclose(pa);
  H5Pclose(pb);
  return ok;
}

/* Compares the stored chunks of `path` with those of `reference`, frame for
 * frame. The chunk at row offset y of `path` is compared with the one at
 * y mod (reference's rows) of `reference` (the benchmark's reference holds
 * one period of its rows; elsewhere the files have the same shape); only
 * chunks i with i mod stride == offset are read (ranks share the work).
 * Returns the chunks that differ, or -1 when the filters differ. */
long compare_frames(const char *path, const char *reference, int check_filter, hsize_t stride, hsize_t offset,
                    hsize_t *chunks_seen) {
  hid_t fa = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(reference, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fa < 0 || fb < 0) die("cannot open %s or %s", path, reference);
  hid_t da = H5Dopen2(fa, "x", H5P_DEFAULT), db = H5Dopen2(fb, "x", H5P_DEFAULT);
  /* HDF5 1.10 takes no H5S_ALL here: the datasets' own spaces */
  hid_t sa = H5Dget_space(da), sb = H5Dget_space(db);
  hsize_t na = 0, reference_dims[3] = {0};
  CHECK_H5(H5Dget_num_chunks(da, sa, &na));
  H5Sget_simple_extent_dims(sb, reference_dims, NULL);
  long differ = 0;
  if (check_filter && !same_filter(da, db)) differ = -1;
  *chunks_seen = na;
  size_t capacity = 0;
  unsigned char *frame_a = NULL, *frame_b = NULL;
  for (hsize_t i = offset; differ >= 0 && i < na; i += stride) {
    hsize_t off_a[3] = {0}, off_b[3] = {0};
    unsigned mask_a = 0;
    uint32_t mask_b = 0;
    haddr_t addr;
    hsize_t size_a = 0, size_b = 0;
    CHECK_H5(H5Dget_chunk_info(da, sa, i, off_a, &mask_a, &addr, &size_a));
    memcpy(off_b, off_a, sizeof off_b);
    off_b[0] = off_a[0] % reference_dims[0];
    if (H5Dget_chunk_storage_size(db, off_b, &size_b) < 0 || size_b == 0) {
      ++differ;  /* no such chunk in the reference */
      continue;
    }
    if (size_a != size_b) {
      ++differ;
      continue;
    }
    if (size_a > capacity) {
      capacity = size_a;
      free(frame_a);
      free(frame_b);
      frame_a = xmalloc(capacity);
      frame_b = xmalloc(capacity);
    }
    CHECK_H5(H5Dread_chunk(da, H5P_DEFAULT, off_a, &mask_a, frame_a));
    CHECK_H5(H5Dread_chunk(db, H5P_DEFAULT, off_b, &mask_b, frame_b));
    if (mask_a != mask_b || memcmp(frame_a, frame_b, size_a) != 0) ++differ;
  }
  free(frame_a);
  free(frame_b);
  H5Sclose(sa);
  H5Sclose(sb);
  H5Dclose(da);
  H5Dclose(db);
  H5Fclose(fa);
  H5Fclose(fb);
  return differ;
}
