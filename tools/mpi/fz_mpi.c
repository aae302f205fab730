/* H5Z-FZ under parallel HDF5: a check and a scaling benchmark, in C against
 * HDF5's public API and MPI only (the filter is found through
 * HDF5_PLUGIN_PATH, as any application finds it). Built by tools/mpi/build.sh
 * against Debian's parallel HDF5 (libhdf5-openmpi-dev) and Open MPI.
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
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define FILTER_ID 32850

static int g_rank, g_size;

static void die(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fz_mpi (rank %d): ", g_rank);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

#define CHECK_H5(call)                                                 \
  do {                                                                 \
    if ((call) < 0) die("%s failed (line %d)", #call, __LINE__);       \
  } while (0)

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

static double now(void) { return MPI_Wtime(); }

/* ---- the plugin's own C interface (filter/reader_api.cpp) ---- */

typedef int (*device_in_use_fn)(char *, size_t);
typedef void (*filter_totals_fn)(double *, double *, unsigned long long *, unsigned long long *);
static device_in_use_fn g_device_in_use;
static filter_totals_fn g_filter_totals;

/* The plugin HDF5 will load: the first HDF5_PLUGIN_PATH folder holding it.
 * dlopen gives this process's one copy, the one HDF5 loads later. */
static void bind_plugin(void) {
  const char *path = getenv("HDF5_PLUGIN_PATH");
  if (!path || !*path) die("HDF5_PLUGIN_PATH is not set: it must name the folder of libH5Zfz.so");
  char *copy = strdup(path), *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char file[4096];
    snprintf(file, sizeof file, "%s/libH5Zfz.so", dir);
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) continue;
    g_device_in_use = (device_in_use_fn)dlsym(handle, "h5z_fz_device_in_use");
    g_filter_totals = (filter_totals_fn)dlsym(handle, "h5z_fz_filter_totals");
    break;
  }
  free(copy);
  if (!g_device_in_use || !g_filter_totals)
    die("no libH5Zfz.so with h5z_fz_device_in_use in HDF5_PLUGIN_PATH=%s (an older plugin?)", path);
}

static double filter_seconds(int decompress) {
  double c = 0, d = 0;
  g_filter_totals(&c, &d, NULL, NULL);
  return decompress ? d : c;
}

/* Memory a rank's write or read costs, beyond the slabs it already holds:
 * the minor page faults it took (each is a page the kernel had to find and
 * zero, seconds per GiB on the GPU machines) and how far its resident set
 * rose above where it started (Linux's peak, VmHWM, reset through
 * /proc/self/clear_refs before the phase; 0 where /proc lacks it). */
typedef struct {
  long faults;
  long start_kib;
} MemoryMark;

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

static MemoryMark memory_mark(void) {
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
static void memory_since(MemoryMark mark, double out[2]) {
  const long peak = status_kib("VmHWM");
  out[0] = (double)(minor_faults() - mark.faults);
  out[1] = peak > mark.start_kib ? (peak - mark.start_kib) / 1024.0 : 0;
  MPI_Allreduce(MPI_IN_PLACE, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

/* Every rank says, in rank order, which device the filter uses for it. */
static void print_devices(FILE *json, int *first) {
  char words[512];
  g_device_in_use(words, sizeof words);
  char host[256] = "";
  int host_len = 0;
  MPI_Get_processor_name(host, &host_len);
  for (int r = 0; r < g_size; ++r) {
    if (r == g_rank) {
      printf("rank %d of %d on %s: filter device %s\n", g_rank, g_size, host, words);
      fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  char *all = g_rank == 0 ? xmalloc((size_t)g_size * sizeof words) : NULL;
  MPI_Gather(words, sizeof words, MPI_CHAR, all, sizeof words, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (g_rank == 0 && json) {
    fprintf(json, "%s\"devices\": [", *first ? "" : ", ");
    for (int r = 0; r < g_size; ++r) {
      fputc('"', json);
      for (const char *c = all + (size_t)r * sizeof words; *c; ++c) fputc(*c == '"' ? '\'' : *c, json);
      fprintf(json, "\"%s", r + 1 < g_size ? ", " : "]");
    }
    *first = 0;
  }
  free(all);
}

/* ---- presets and cd_values (the filter's stored form, docs/FORMAT.md) ---- */

static int preset_id(const char *name) {
  static const char *names[] = {"default", "lossless", "pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"};
  for (int i = 0; i < 7; ++i)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

static int mode_id(const char *name) {
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

static void *load_field(const char *dir, const char *name, size_t bytes) {
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

static hid_t mpio_fapl(void) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  CHECK_H5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
  return fapl;
}

static hid_t collective_dxpl(void) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  CHECK_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE));
  return dxpl;
}

/* Rows [first, first + count) of a dataset shaped `dims`, in file and memory. */
static void row_spaces(hid_t dataset, int rank_dims, const hsize_t *dims, hsize_t first, hsize_t count,
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

typedef struct {
  int rank_dims;
  hsize_t dims[3], chunks[3];
  hid_t type;  /* H5T_NATIVE_FLOAT or H5T_NATIVE_DOUBLE */
  size_t element;
} Shape;

static hsize_t row_elements(const Shape *s) {
  hsize_t n = 1;
  for (int d = 1; d < s->rank_dims; ++d) n *= s->dims[d];
  return n;
}

static hid_t filtered_dcpl(const Shape *s, int preset, int mode, double bound) {
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
 * `data` (a one-process file, fapl H5P_DEFAULT). */
typedef struct {
  double create_s, write_s, close_s;  /* H5Fcreate + H5Dcreate, H5Dwrite, H5Dclose + H5Fclose */
} WritePhases;

static void write_dataset_timed(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows,
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

static void write_dataset(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows, hsize_t first,
                          hsize_t count) {
  write_dataset_timed(path, fapl, s, dcpl, rows, first, count, NULL);
}

static void read_rows(const char *path, hid_t fapl, const Shape *s, void *rows, hsize_t first, hsize_t count) {
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
static double stored_bytes(const char *path) {
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
static long compare_frames(const char *path, const char *reference, int check_filter, hsize_t stride, hsize_t offset,
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

/* ---- check ---- */

typedef struct {
  const char *preset;
  const char *mode;
  double bound;  /* < 0: lossless */
  int field;     /* 0 wmag91 float32, 1 pressure float64 */
} Case;

static double value_at(const void *data, int is_double, size_t i) {
  return is_double ? ((const double *)data)[i] : (double)((const float *)data)[i];
}

/* Elements outside the bound (the NOA range taken per chunk, as the filter
 * does), or differing at all for lossless. */
static long violations(const Shape *s, const void *original, const void *decoded, const char *mode, double bound) {
  const int is_double = s->element == 8;
  size_t n = 1, grid[3] = {1, 1, 1}, cells = 1;
  for (int d = 0; d < s->rank_dims; ++d) {
    n *= s->dims[d];
    grid[d] = (s->dims[d] + s->chunks[d] - 1) / s->chunks[d];
    cells *= grid[d];
  }
  double *lo = xmalloc(cells * sizeof(double)), *hi = xmalloc(cells * sizeof(double));
  for (size_t c = 0; c < cells; ++c) lo[c] = DBL_MAX, hi[c] = -DBL_MAX;
  size_t *cell_of = xmalloc(n * sizeof(size_t));
  for (size_t i = 0; i < n; ++i) {
    size_t rest = i, cell = 0, scale = 1;
    for (int d = s->rank_dims - 1; d >= 0; --d) {
      const size_t coordinate = rest % s->dims[d];
      rest /= s->dims[d];
      cell += scale * (coordinate / s->chunks[d]);
      scale *= grid[d];
    }
    cell_of[i] = cell;
    const double v = value_at(original, is_double, i);
    if (v < lo[cell]) lo[cell] = v;
    if (v > hi[cell]) hi[cell] = v;
  }
  long bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const double o = value_at(original, is_double, i), e = fabs(o - value_at(decoded, is_double, i));
    double allowed;
    if (bound < 0) allowed = 0;
    else if (strcmp(mode, "abs") == 0) allowed = bound;
    else if (strcmp(mode, "rel") == 0) allowed = bound * fabs(o);
    else allowed = bound * (hi[cell_of[i]] - lo[cell_of[i]]);
    if (!(e <= allowed)) ++bad;
  }
  free(lo);
  free(hi);
  free(cell_of);
  return bad;
}

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

/* The rules parallel HDF5 sets, tried: every allocation time and fill time
 * with a collective write, and an independent write. Prints what HDF5 says;
 * returns 1 when the outcome is the documented one (README.md, "Parallel
 * HDF5"): collective writes work under every combination, an independent
 * write is refused, and nothing is stored unfiltered. */
static int check_rules(const char *out, const char *data_dir, FILE *json) {
  Shape s = {3, {91, 91, 91}, {10, 40, 91}, H5T_NATIVE_FLOAT, 4};
  float *field = load_field(data_dir, "wmag91.float", 91 * 91 * 91 * 4);
  const hsize_t first = 91 * (hsize_t)g_rank / g_size, last = 91 * (hsize_t)(g_rank + 1) / g_size;
  const size_t row_bytes = row_elements(&s) * 4;
  static const H5D_alloc_time_t allocs[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY, H5D_ALLOC_TIME_INCR,
                                            H5D_ALLOC_TIME_LATE};
  static const char *alloc_names[] = {"default", "early", "incr", "late"};
  static const H5D_fill_time_t fills[] = {H5D_FILL_TIME_IFSET, H5D_FILL_TIME_ALLOC, H5D_FILL_TIME_NEVER};
  static const char *fill_names[] = {"ifset", "alloc", "never"};
  char path[4096];
  snprintf(path, sizeof path, "%s/rules-%d.h5", out, g_size);
  int pass = 1, first_row = 1;
  hid_t fapl = mpio_fapl();
  if (g_rank == 0) printf("allocation / fill time, collective write of fzgpu noa 1e-3:\n");
  if (g_rank == 0 && json) fprintf(json, "\"rules\": [");
  for (int a = 0; a < 4; ++a) {
    for (int f = 0; f < 3; ++f) {
      hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
      CHECK_H5(H5Pset_alloc_time(dcpl, allocs[a]));
      CHECK_H5(H5Pset_fill_time(dcpl, fills[f]));
      int ok = 1;
      H5E_BEGIN_TRY {
        hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        hid_t space = H5Screate_simple(3, s.dims, NULL);
        hid_t dataset = file < 0 ? -1 : H5Dcreate2(file, "x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        hid_t file_space = -1, memory_space = -1, dxpl = collective_dxpl();
        if (dataset >= 0) {
          row_spaces(dataset, 3, s.dims, first, last - first, &file_space, &memory_space);
          ok = H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl, (char *)field + first * row_bytes) >= 0;
          H5Sclose(file_space);
          H5Sclose(memory_space);
          ok = H5Dclose(dataset) >= 0 && ok;
        } else {
          ok = 0;
        }
        H5Pclose(dxpl);
        H5Sclose(space);
        if (file >= 0) ok = H5Fclose(file) >= 0 && ok;
      }
      H5E_END_TRY;
      int all_ok = 0;
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
      long differ = 0;
      if (g_rank == 0 && all_ok) {
        /* what was stored decodes within the bound, and is filtered */
        float *back = xmalloc(91 * 91 * 91 * 4);
        read_rows(path, H5P_DEFAULT, &s, back, 0, 91);
        differ = violations(&s, field, back, "noa", 1e-3);
        hsize_t chunks = 0;
        hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT), space = H5Dget_space(dataset);
        H5Dget_num_chunks(dataset, space, &chunks);
        for (hsize_t i = 0; i < chunks; ++i) {
          hsize_t offset[3];
          unsigned mask = 0;
          haddr_t addr;
          hsize_t size;
          H5Dget_chunk_info(dataset, space, i, offset, &mask, &addr, &size);
          if (mask != 0) ++differ;  /* a chunk stored without the filter */
        }
        H5Sclose(space);
        H5Dclose(dataset);
        H5Fclose(file);
        free(back);
      }
      if (g_rank == 0) {
        printf("  alloc %-7s fill %-5s  %s\n", alloc_names[a], fill_names[f],
               !all_ok ? "refused by HDF5" : differ ? "WRONG DATA" : "works");
        if (json)
          fprintf(json, "%s{\"alloc\": \"%s\", \"fill\": \"%s\", \"works\": %s, \"bad\": %ld}", first_row ? "" : ", ",
                  alloc_names[a], fill_names[f], all_ok ? "true" : "false", differ);
        first_row = 0;
      }
      /* Every combination is expected to work; wrong data never. */
      if (!all_ok || differ) pass = 0;
      H5Pclose(dcpl);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  /* An independent write of a filtered dataset: HDF5 refuses it, and says so. */
  int refused = 0;
  {
    hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(3, s.dims, NULL);
    hid_t dataset = H5Dcreate2(file, "x", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    hid_t file_space, memory_space, dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK_H5(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT));
    row_spaces(dataset, 3, s.dims, first, last - first, &file_space, &memory_space);
    H5E_BEGIN_TRY { refused = H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl,
                                       (char *)field + first * row_bytes) < 0; }
    H5E_END_TRY;
    H5Pclose(dxpl);
    H5Sclose(file_space);
    H5Sclose(memory_space);
    H5E_BEGIN_TRY { H5Dclose(dataset); H5Sclose(space); H5Fclose(file); }
    H5E_END_TRY;
    H5Pclose(dcpl);
  }
  int all_refused = 0;
  MPI_Allreduce(&refused, &all_refused, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (g_rank == 0) {
    printf("  independent write of a filtered dataset: %s\n", all_refused ? "refused by HDF5" : "ACCEPTED");
    if (json) fprintf(json, "], \"independent_write_refused\": %s", all_refused ? "true" : "false");
  }
  if (!all_refused) pass = 0;
  /* A second collective write over part of the rows (a checkpoint updated in
   * place): HDF5 decodes the chunks the band cuts, merges and encodes them
   * again. The file must equal one process doing the same two writes. */
  {
    const hsize_t band_first = 23, band_rows = 41;  /* cuts chunks 2 and 6 of 10 rows */
    const hsize_t mine_first = band_first + band_rows * (hsize_t)g_rank / g_size;
    const hsize_t mine_last = band_first + band_rows * (hsize_t)(g_rank + 1) / g_size;
    float *update = xmalloc(91 * 91 * 91 * 4);
    for (size_t i = 0; i < (size_t)91 * 91 * 91; ++i) update[i] = 2.0f * field[(i + 7919) % ((size_t)91 * 91 * 91)];
    char serial[4096];
    snprintf(serial, sizeof serial, "%s/rules-one-%d.h5", out, g_size);
    hid_t dcpl = filtered_dcpl(&s, 3, 1, 1e-3);
    write_dataset(path, fapl, &s, dcpl, (char *)field + first * row_bytes, first, last - first);
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, fapl);
    hid_t dataset = H5Dopen2(file, "x", H5P_DEFAULT);
    hid_t file_space, memory_space, dxpl = collective_dxpl();
    row_spaces(dataset, 3, s.dims, mine_first, mine_last - mine_first, &file_space, &memory_space);
    CHECK_H5(H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, dxpl, (char *)update + mine_first * row_bytes));
    H5Pclose(dxpl);
    H5Sclose(file_space);
    H5Sclose(memory_space);
    H5Dclose(dataset);
    H5Fclose(file);
    long differ = 0;
    if (g_rank == 0) {
      write_dataset(serial, H5P_DEFAULT, &s, dcpl, field, 0, 91);
      file = H5Fopen(serial, H5F_ACC_RDWR, H5P_DEFAULT);
      dataset = H5Dopen2(file, "x", H5P_DEFAULT);
      row_spaces(dataset, 3, s.dims, band_first, band_rows, &file_space, &memory_space);
      CHECK_H5(H5Dwrite(dataset, H5T_NATIVE_FLOAT, memory_space, file_space, H5P_DEFAULT,
                        (char *)update + band_first * row_bytes));
      H5Sclose(file_space);
      H5Sclose(memory_space);
      H5Dclose(dataset);
      H5Fclose(file);
      hsize_t chunks = 0;
      differ = compare_frames(path, serial, 1, 1, 0, &chunks);
      printf("  a second collective write over rows %llu-%llu (chunks re-encoded): %s\n",
             (unsigned long long)band_first, (unsigned long long)(band_first + band_rows - 1),
             differ == 0 ? "frames equal one process" : "FRAMES DIFFER");
      if (json) fprintf(json, ", \"overwrite_frames_equal\": %s", differ == 0 ? "true" : "false");
      remove(serial);
      remove(path);
    }
    MPI_Bcast(&differ, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (differ != 0) pass = 0;
    H5Pclose(dcpl);
    free(update);
  }
  H5Pclose(fapl);
  free(field);
  return pass;
}

static int run_check(const char *out, const char *data_dir, const char *json_path) {
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

/* ---- bench ---- */

/* The file system alone: every rank writes, then reads, `bytes` at its own
 * offset with plain collective MPI-IO (no HDF5, no filter), in 1 MiB units.
 * Slowest rank's seconds. The benchmark passes a file's stored size split
 * over the ranks, so this is the cost of the bytes the filter leaves. */
static void raw_io(const char *path, char *buffer, size_t bytes, double *write_s, double *read_s) {
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
static void warm_up(const Shape *s, hid_t dcpl, const void *rows) {
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

typedef struct {
  double write_s, read_s, compress_s, decompress_s;  /* slowest rank's */
  WritePhases phases;                                /* of the best write, slowest rank's each */
  double write_memory[2], read_memory[2];            /* memory_since: largest rank's each */
} Timing;

static void split_commas(char *list, char **items, int *count, int capacity) {
  *count = 0;
  char *save = NULL;
  for (char *item = strtok_r(list, ",", &save); item && *count < capacity; item = strtok_r(NULL, ",", &save))
    items[(*count)++] = item;
}

static int run_bench(const char *out, const char *data_dir, char *preset_list, const char *mode, double bound,
                     double mib_per_rank, double total_mib, double chunk_mib, int reps, int verify,
                     int first_write, const char *json_path) {
  float *field = load_field(data_dir, "wmag91.float", 91 * 91 * 91 * 4);
  Shape s = {3, {0, 91, 91}, {0, 91, 91}, H5T_NATIVE_FLOAT, 4};
  const size_t row_bytes = 91 * 91 * 4;
  hsize_t chunk_rows = (hsize_t)(chunk_mib * 1048576.0 / row_bytes + 0.5);
  if (chunk_rows < 1) chunk_rows = 1;
  s.chunks[0] = chunk_rows;
  /* Whole chunks per rank; strong scaling: the same chunks split over the ranks
   * (the total rounded to a multiple of 4 chunks, so 1, 2 and 4 ranks share it). */
  hsize_t chunks_per_rank;
  const char *scaling = total_mib > 0 ? "strong" : "weak";
  if (total_mib > 0) {
    hsize_t total_chunks = (hsize_t)(total_mib * 1048576.0 / (chunk_rows * row_bytes) + 0.5);
    total_chunks = (total_chunks + 3) / 4 * 4;
    if (total_chunks % (hsize_t)g_size) die("--total-mib: %llu chunks do not split over %d ranks",
                                            (unsigned long long)total_chunks, g_size);
    chunks_per_rank = total_chunks / g_size;
  } else {
    chunks_per_rank = (hsize_t)(mib_per_rank * 1048576.0 / (chunk_rows * row_bytes) + 0.5);
  }
  if (chunks_per_rank < 1) chunks_per_rank = 1;
  const hsize_t rows_per_rank = chunks_per_rank * chunk_rows, first = rows_per_rank * g_rank;
  s.dims[0] = rows_per_rank * g_size;
  const size_t slab_bytes = rows_per_rank * row_bytes;
  /* Row r holds the field's plane r mod 91: real values, and chunks that repeat
   * only every 91 chunks, so one period written by one process is a reference
   * for every chunk. */
  char *slab = xmalloc(slab_bytes), *back = xmalloc(slab_bytes);
  /* Touched before any timing: otherwise the first preset's read pays for
   * faulting in its whole destination (seconds per GiB on the GPU machines'
   * sandbox), and only that preset. */
  memset(back, 0, slab_bytes);
  for (hsize_t r = 0; r < rows_per_rank; ++r) memcpy(slab + r * row_bytes, field + ((first + r) % 91) * 91 * 91, row_bytes);
  FILE *json = NULL;
  int first_key = 1;
  if (g_rank == 0 && json_path && !(json = fopen(json_path, "w"))) die("cannot write %s", json_path);
  if (json) fprintf(json, "{\"ranks\": %d, \"scaling\": \"%s\", ", g_size, scaling);
  print_devices(json, &first_key);
  if (json) fprintf(json, ", ");
  char *presets[16];
  static char phase_lines[4096], memory_lines[4096];
  phase_lines[0] = memory_lines[0] = '\0';
  int count = 0, pass = 1;
  split_commas(preset_list, presets, &count, 16);
  char path[4096], reference[4096];
  snprintf(path, sizeof path, "%s/bench-%d.h5", out, g_size);
  snprintf(reference, sizeof reference, "%s/bench-reference-%d.h5", out, g_size);
  char raw_path[4096];
  snprintf(raw_path, sizeof raw_path, "%s/bench-raw-%d.bin", out, g_size);
  hid_t fapl = mpio_fapl();
  /* The untimed first write (see the top of this file). Measured on 2 x H200,
   * 8 GiB from one rank: without it the first two filtered presets wrote in
   * 10.3-10.7 s and the next three in 4.9-6.3 s, HDF5's own share 2.6-2.8x. */
  double first_write_s = 0;
  for (int p = 0; p < count && first_write; ++p) {
    if (strcmp(presets[p], "none") == 0) continue;
    const int preset = preset_id(presets[p]);
    if (preset < 0) die("unknown preset %s", presets[p]);
    hid_t dcpl = filtered_dcpl(&s, preset, mode_id(mode), bound);
    warm_up(&s, dcpl, slab);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now();
    write_dataset(path, fapl, &s, dcpl, slab, first, rows_per_rank);
    read_rows(path, fapl, &s, back, first, rows_per_rank);
    first_write_s = now() - start;
    MPI_Allreduce(MPI_IN_PLACE, &first_write_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
      remove(path);
      printf("untimed first write and read of the whole slab (%s): %.3f s\n", presets[p], first_write_s);
    }
    H5Pclose(dcpl);
    MPI_Barrier(MPI_COMM_WORLD);
    break;
  }
  if (g_rank == 0)
    printf("\n%s scaling, %d rank(s), %.1f MiB per rank (%.1f MiB in all), chunks %llu x 91 x 91 (%.2f MiB), %s %g\n"
           "%-10s %5s %7s | %8s %8s %9s %8s %8s | %8s %8s %9s %8s %8s | %s\n",
           scaling, g_size, slab_bytes / 1048576.0, g_size * slab_bytes / 1048576.0, (unsigned long long)chunk_rows,
           chunk_rows * row_bytes / 1048576.0, mode, bound, "preset", "ranks", "ratio", "write s", "GB/s", "GB/s/rank",
           "filter s", "rest s", "read s", "GB/s", "GB/s/rank", "filter s", "rest s", "frames");
  if (json) fprintf(json, "\"first_write_s\": %.6f, ", first_write_s);
  /* glibc's allocator settings and the filter's frame buffers as this rank
   * sees them (the memory A/Bs of tools/mpi/multi_gpu_run.sh are only A/Bs
   * if they reach the ranks) */
  const char *settings[][2] = {{"glibc_tunables", "GLIBC_TUNABLES"}, {"frame_buffers", "H5Z_FZ_FRAME_BUFFERS"}};
  for (int i = 0; json && i < 2; ++i) {
    const char *value = getenv(settings[i][1]);
    fprintf(json, "\"%s\": \"", settings[i][0]);
    for (const char *c = value ? value : ""; *c; ++c)
      if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, json);
    fprintf(json, "\", ");
  }
  if (json) fprintf(json, "\"results\": [");
  for (int p = 0; p < count; ++p) {
    const int preset = strcmp(presets[p], "none") == 0 ? -1 : preset_id(presets[p]);
    if (preset < 0 && strcmp(presets[p], "none") != 0) die("unknown preset %s", presets[p]);
    hid_t dcpl = filtered_dcpl(&s, preset, mode_id(mode), bound);
    if (preset >= 0) warm_up(&s, dcpl, slab);
    Timing best = {1e300, 1e300, 0, 0, {0, 0, 0}, {0, 0}, {0, 0}};
    for (int rep = 0; rep < reps; ++rep) {
      Timing t;
      double c0 = filter_seconds(0), d0 = filter_seconds(1);
      MemoryMark mark = memory_mark();
      MPI_Barrier(MPI_COMM_WORLD);
      double start = now();
      WritePhases phases;
      write_dataset_timed(path, fapl, &s, dcpl, slab, first, rows_per_rank, &phases);
      double mine = now() - start, compress = filter_seconds(0) - c0;
      memory_since(mark, t.write_memory);
      MPI_Allreduce(MPI_IN_PLACE, &phases, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t.phases = phases;
      mark = memory_mark();
      MPI_Barrier(MPI_COMM_WORLD);
      start = now();
      read_rows(path, fapl, &s, back, first, rows_per_rank);
      double mine_read = now() - start, decompress = filter_seconds(1) - d0;
      memory_since(mark, t.read_memory);
      MPI_Allreduce(&mine, &t.write_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&mine_read, &t.read_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&compress, &t.compress_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(&decompress, &t.decompress_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (t.write_s < best.write_s) {
        best.write_s = t.write_s, best.compress_s = t.compress_s, best.phases = t.phases;
        memcpy(best.write_memory, t.write_memory, sizeof t.write_memory);
      }
      if (t.read_s < best.read_s) {
        best.read_s = t.read_s, best.decompress_s = t.decompress_s;
        memcpy(best.read_memory, t.read_memory, sizeof t.read_memory);
      }
    }
    /* The file system's share, measured after the checks below (its read
     * lands in `back`): the stored bytes, split over the ranks, through plain
     * MPI-IO. */
    double stored = 0, raw_write_s = 0, raw_read_s = 0;
    if (g_rank == 0) stored = stored_bytes(path);
    MPI_Bcast(&stored, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* Checks: the values read back are the one-process file's (lossless: the
     * input), and every chunk is the one-process frame. */
    long differ = 0;
    int values_equal = 1;
    if (preset < 0 || preset <= 1) {
      values_equal = memcmp(back, slab, slab_bytes) == 0;
    } else if (verify) {
      const hsize_t period_chunks = 91;  /* chunk c holds the planes of chunk c mod 91 */
      Shape ref = s;
      ref.dims[0] = period_chunks * chunk_rows;
      if (g_rank == 0) {
        char *rows = xmalloc(ref.dims[0] * row_bytes);
        for (hsize_t r = 0; r < ref.dims[0]; ++r) memcpy(rows + r * row_bytes, field + (r % 91) * 91 * 91, row_bytes);
        hid_t ref_dcpl = filtered_dcpl(&ref, preset, mode_id(mode), bound);
        write_dataset(reference, H5P_DEFAULT, &ref, ref_dcpl, rows, 0, ref.dims[0]);
        H5Pclose(ref_dcpl);
        free(rows);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      hsize_t seen = 0;
      differ = compare_frames(path, reference, g_rank == 0, (hsize_t)g_size, (hsize_t)g_rank, &seen);
      if (seen != chunks_per_rank * g_size) differ = -1;
      /* this rank's decoded rows against the reference's decoded chunks; the
       * reference period is read once (91 chunks, 364 MiB at 4 MiB chunks),
       * not once for each of this rank's chunks */
      char *ref_rows = xmalloc(ref.dims[0] * row_bytes);
      read_rows(reference, H5P_DEFAULT, &ref, ref_rows, 0, ref.dims[0]);
      for (hsize_t c = 0; c < chunks_per_rank && values_equal; ++c) {
        const hsize_t global_chunk = first / chunk_rows + c;
        values_equal = memcmp(back + c * chunk_rows * row_bytes,
                              ref_rows + (global_chunk % period_chunks) * chunk_rows * row_bytes,
                              chunk_rows * row_bytes) == 0;
      }
      free(ref_rows);
    }
    /* differ < 0: the chunk counts or the filter do not match at all */
    long frames_bad = differ != 0, any_frames_bad = 0;
    int all_equal = 0;
    MPI_Allreduce(&frames_bad, &any_frames_bad, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&values_equal, &all_equal, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    const int checked = preset > 1 && verify;
    const int ok = all_equal && (!checked || !any_frames_bad);
    pass &= ok;
    {
      size_t share = (size_t)(stored / g_size);
      if (share > slab_bytes) share = slab_bytes;
      raw_io(raw_path, back, share, &raw_write_s, &raw_read_s);
    }
    if (g_rank == 0) {
      const double total = (double)g_size * slab_bytes, ratio = total / stored_bytes(path);
      const char *verdict = !ok ? "DIFFER" : checked ? "equal" : preset <= 1 ? "lossless" : "unchecked";
      snprintf(phase_lines + strlen(phase_lines), sizeof phase_lines - strlen(phase_lines),
               "%-10s %5d | %8.3f %10.3f %8.3f | %8.3f %8.3f %8.3f | %8.3f %8.3f %8.3f\n", presets[p], g_size,
               best.phases.create_s, best.phases.write_s, best.phases.close_s, best.compress_s, raw_write_s,
               best.write_s, best.decompress_s, raw_read_s, best.read_s);
      snprintf(memory_lines + strlen(memory_lines), sizeof memory_lines - strlen(memory_lines),
               "%-10s %5d | %10.0f %10.0f | %10.0f %10.0f\n", presets[p], g_size, best.write_memory[0] / 1000,
               best.write_memory[1], best.read_memory[0] / 1000, best.read_memory[1]);
      printf("%-10s %5d %7.2f | %8.3f %8.2f %9.2f %8.3f %8.3f | %8.3f %8.2f %9.2f %8.3f %8.3f | %s\n", presets[p],
             g_size, ratio, best.write_s, total / best.write_s / 1e9, slab_bytes / best.write_s / 1e9, best.compress_s,
             best.write_s - best.compress_s, best.read_s, total / best.read_s / 1e9, slab_bytes / best.read_s / 1e9,
             best.decompress_s, best.read_s - best.decompress_s, verdict);
      fflush(stdout);
      if (json)
        fprintf(json,
                "%s{\"preset\": \"%s\", \"ranks\": %d, \"bytes_per_rank\": %zu, \"ratio\": %.4f, \"write_s\": %.6f, "
                "\"read_s\": %.6f, \"compress_s\": %.6f, \"decompress_s\": %.6f, \"write_gbs\": %.4f, "
                "\"read_gbs\": %.4f, \"create_s\": %.6f, \"h5dwrite_s\": %.6f, \"close_s\": %.6f, "
                "\"fs_write_s\": %.6f, \"fs_read_s\": %.6f, \"write_faults\": %.0f, \"write_rss_mib\": %.1f, "
                "\"read_faults\": %.0f, \"read_rss_mib\": %.1f, \"checked\": %s, \"equal\": %s}",
                p ? ", " : "", presets[p], g_size, slab_bytes, ratio, best.write_s, best.read_s, best.compress_s,
                best.decompress_s, total / best.write_s / 1e9, total / best.read_s / 1e9, best.phases.create_s,
                best.phases.write_s, best.phases.close_s, raw_write_s, raw_read_s, best.write_memory[0],
                best.write_memory[1], best.read_memory[0], best.read_memory[1], checked ? "true" : "false",
                ok ? "true" : "false");
      remove(path);
      remove(reference);
    }
    H5Pclose(dcpl);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (g_rank == 0)
    printf("where the time goes (slowest rank each, s): H5Fcreate+H5Dcreate, H5Dwrite, H5Dclose+H5Fclose; the\n"
           "filter's share, the file system's (the stored bytes through plain MPI-IO) and the whole write; the same\n"
           "for the read\n%-10s %5s | %8s %10s %8s | %8s %8s %8s | %8s %8s %8s\n%s",
           "preset", "ranks", "create", "H5Dwrite", "close", "filter", "fs", "write", "filter", "fs", "read",
           phase_lines);
  if (g_rank == 0)
    printf("memory (the largest rank each): thousands of minor page faults and MiB of resident memory above the\n"
           "rank's start (its slabs), during the write and during the read\n%-10s %5s | %10s %10s | %10s %10s\n%s",
           "preset", "ranks", "w faults k", "w MiB", "r faults k", "r MiB", memory_lines);
  if (json) {
    fprintf(json, "], \"passed\": %s}\n", pass ? "true" : "false");
    fclose(json);
  }
  H5Pclose(fapl);
  free(slab);
  free(back);
  free(field);
  return pass;
}

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
