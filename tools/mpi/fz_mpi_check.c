/* fz_mpi check: every preset and mode written collectively by the ranks
 * (rows split unevenly), compared with one process's file frame for frame,
 * read back, and checked against the bound; then the rules parallel HDF5
 * sets (fz_mpi_rules.c). The report goes to stdout and, from rank 0, to
 * --json. */
#include "fz_mpi_common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *preset;
  const char *mode;
  double bound;  /* < 0: lossless */
  int field;     /* 0 wmag91 float32, 1 pressure float64 */
} Case;

/* One case: collective write with uneven rows, one-process reference,
 * collective read, frames, values, bounds. Returns 1 when it passes. */
static int check_case(const Case *c, const char *out, const char *data_dir, FILE *json, int index) {
  Shape s;
  void *field;
  double lo = DBL_MAX, hi = -DBL_MAX;
  if (c->field == 0) {
    s = (Shape){3, {91, 91, 91}, {10, 40, 91}, H5T_NATIVE_FLOAT, 4};
    field = load_field(data_dir, "wmag91.float", 91 * 91 * 91 * 4);
  } else {
    s = (Shape){2, {384, 384, 0}, {50, 384, 0}, H5T_NATIVE_DOUBLE, 8};
    field = load_field(data_dir, "pressure.384_384.f64", 384 * 384 * 8);
  }
  const size_t n = (size_t)s.dims[0] * row_elements(&s);
  for (size_t i = 0; i < n; ++i) {
    const double v = value_at(field, s.element == 8, i);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  /* abs bounds are given relative to the field's range, as the Python check does */
  const double bound = c->bound < 0 ? -1 : (strcmp(c->mode, "abs") == 0 ? c->bound * (hi - lo) : c->bound);
  /* Uneven rows: rank r gets rows [rows*r^2/size^2 ...), so no split is even. */
  const hsize_t rows = s.dims[0];
  const hsize_t first = rows * (hsize_t)g_rank * (hsize_t)(g_rank + 1) / ((hsize_t)g_size * (g_size + 1));
  const hsize_t last = rows * (hsize_t)(g_rank + 1) * (hsize_t)(g_rank + 2) / ((hsize_t)g_size * (g_size + 1));
  const size_t row_bytes = row_elements(&s) * s.element;
  char par[4096], ser[4096];
  snprintf(par, sizeof par, "%s/check-par-%d-%d.h5", out, g_size, index);
  snprintf(ser, sizeof ser, "%s/check-ser-%d-%d.h5", out, g_size, index);
  hid_t dcpl = filtered_dcpl(&s, preset_id(c->preset), mode_id(c->mode), bound);
  hid_t fapl = mpio_fapl();
  write_dataset(par, fapl, &s, dcpl, (char *)field + first * row_bytes, first, last - first);
  if (g_rank == 0) write_dataset(ser, H5P_DEFAULT, &s, dcpl, field, 0, rows);
  MPI_Barrier(MPI_COMM_WORLD);
  /* each rank: its rows, read collectively, against the one-process file's */
  void *mine = xmalloc((last - first) * row_bytes + 1), *reference = xmalloc((last - first) * row_bytes + 1);
  read_rows(par, fapl, &s, mine, first, last - first);
  read_rows(ser, H5P_DEFAULT, &s, reference, first, last - first);
  int read_equal = memcmp(mine, reference, (last - first) * row_bytes) == 0, all_reads_equal = 0;
  MPI_Reduce(&read_equal, &all_reads_equal, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  int pass = 1;
  if (g_rank == 0) {
    hsize_t chunks = 0;
    long differ = compare_frames(par, ser, 1, 1, 0, &chunks);
    hsize_t reference_chunks = 0;
    {
      hid_t file = H5Fopen(ser, H5F_ACC_RDONLY, H5P_DEFAULT), dataset = H5Dopen2(file, "x", H5P_DEFAULT);
      hid_t space = H5Dget_space(dataset);
      H5Dget_num_chunks(dataset, space, &reference_chunks);
      H5Sclose(space);
      H5Dclose(dataset);
      H5Fclose(file);
    }
    if (reference_chunks != chunks) differ = -1;
    void *decoded = xmalloc(n * s.element);
    read_rows(par, H5P_DEFAULT, &s, decoded, 0, rows);
    const long bad = violations(&s, field, decoded, c->mode, bound);
    hsize_t expected = 1;
    for (int d = 0; d < s.rank_dims; ++d) expected *= (s.dims[d] + s.chunks[d] - 1) / s.chunks[d];
    const double ratio = (double)(n * s.element) / stored_bytes(par);
    pass = differ == 0 && all_reads_equal && bad == 0 && chunks == expected && ratio > 1.2;
    printf("%-10s %-4s %-9.3g %-7s chunks %3llu/%-3llu frames %-5s reads %-5s violations %ld ratio %6.2f  %s\n",
           c->preset, c->mode, c->bound, s.element == 8 ? "float64" : "float32", (unsigned long long)chunks,
           (unsigned long long)expected, differ == 0 ? "equal" : "DIFF", all_reads_equal ? "equal" : "DIFF", bad,
           ratio, pass ? "ok" : "FAILED");
    if (json)
      fprintf(json,
              "%s{\"preset\": \"%s\", \"mode\": \"%s\", \"bound\": %.17g, \"dtype\": \"%s\", \"chunks\": %llu, "
              "\"expected_chunks\": %llu, \"frames_equal\": %s, \"reads_equal\": %s, \"violations\": %ld, "
              "\"ratio\": %.4f}",
              index ? ", " : "", c->preset, c->mode, c->bound, s.element == 8 ? "float64" : "float32",
              (unsigned long long)chunks, (unsigned long long)expected, differ == 0 ? "true" : "false",
              all_reads_equal ? "true" : "false", bad, ratio);
    free(decoded);
    remove(par);
    remove(ser);
  }
  MPI_Bcast(&pass, 1, MPI_INT, 0, MPI_COMM_WORLD);
  H5Pclose(fapl);
  H5Pclose(dcpl);
  free(mine);
  free(reference);
  free(field);
  return pass;
}

int run_check(const char *out, const char *data_dir, const char *json_path) {
  static const Case cases[] = {
      {"lossless", "abs", -1, 0},        {"pfpl", "noa", 1e-3, 0},      {"pfpl", "abs", 1e-2, 0},
      {"fzgpu", "noa", 1e-3, 0},         {"fzgpu", "abs", 1e-2, 0},     {"cusz", "noa", 1e-3, 0},
      {"cusz", "abs", 1e-2, 0},          {"cuszhi-tp", "noa", 1e-3, 0}, {"cuszhi-tp", "abs", 1e-2, 0},
      {"cuszhi-cr", "noa", 1e-3, 0},     {"cuszhi-cr", "abs", 1e-2, 0}, {"pfpl", "rel", 1e-3, 0},
      {"fzgpu", "noa", 1e-4, 1},         {"cuszhi-cr", "noa", 1e-4, 1},
  };
  FILE *json = NULL;
  int first = 1;
  if (g_rank == 0 && json_path && !(json = fopen(json_path, "w"))) die("cannot write %s", json_path);
  if (json) fprintf(json, "{\"ranks\": %d, ", g_size);
  print_devices(json, &first);
  if (json) fprintf(json, ", \"results\": [");
  int pass = 1;
  const int count = (int)(sizeof cases / sizeof cases[0]);
  for (int i = 0; i < count; ++i) pass &= check_case(&cases[i], out, data_dir, json, i);
  if (json) fprintf(json, "], ");
  pass &= check_rules(out, data_dir, json);
  if (g_rank == 0) {
    printf("check with %d ranks: %s\n", g_size, pass ? "passed" : "FAILED");
    if (json) {
      fprintf(json, ", \"passed\": %s}\n", pass ? "true" : "false");
      fclose(json);
    }
  }
  return pass;
}
