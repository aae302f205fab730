/* fz_mpi's shared declarations: the program is fz_mpi.c (usage, options,
 * main) with the check (fz_mpi_check.c, fz_mpi_rules.c), the benchmark
 * (fz_mpi_bench.c, fz_mpi_measure.c), the plugin's C interface
 * (fz_mpi_plugin.c), the HDF5 helpers both use (fz_mpi_hdf5.c) and the
 * rank, die and xmalloc (fz_mpi_common.c), the error check
 * (fz_mpi_errors.c).
 * Included first by each of them: it asks for the GNU declarations
 * (strdup, strtok_r, getrusage, dlopen) before any system header. */
#ifndef FZ_MPI_COMMON_H
#define FZ_MPI_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <hdf5.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define FILTER_ID 32850

/* this process's rank and the number of ranks, set first thing in main */
extern int g_rank, g_size;

/* Prints the message with the rank and ends every rank (MPI_Abort, exit 2). */
void die(const char *format, ...) __attribute__((noreturn));

#define CHECK_H5(call)                                                 \
  do {                                                                 \
    if ((call) < 0) die("%s failed (line %d)", #call, __LINE__);       \
  } while (0)

void *xmalloc(size_t bytes);

static inline double now(void) { return MPI_Wtime(); }

/* ---- the plugin (fz_mpi_plugin.c) ---- */

void bind_plugin(void);
double filter_seconds(int decompress);
void print_devices(FILE *json, int *first);

/* ---- presets, fields and HDF5 (fz_mpi_hdf5.c) ---- */

typedef struct {
  int rank_dims;
  hsize_t dims[3], chunks[3];
  hid_t type;  /* H5T_NATIVE_FLOAT or H5T_NATIVE_DOUBLE */
  size_t element;
} Shape;

/* The seconds of a write's phases. */
typedef struct {
  double create_s, write_s, close_s;  /* H5Fcreate + H5Dcreate, H5Dwrite, H5Dclose + H5Fclose */
} WritePhases;

int preset_id(const char *name);
int mode_id(const char *name);
void *load_field(const char *dir, const char *name, size_t bytes);
hid_t mpio_fapl(void);
hid_t collective_dxpl(void);
void row_spaces(hid_t dataset, int rank_dims, const hsize_t *dims, hsize_t first, hsize_t count, hid_t *file_space,
                hid_t *memory_space);
hsize_t row_elements(const Shape *s);
hid_t filtered_dcpl(const Shape *s, int preset, int mode, double bound);
void write_dataset_timed(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows, hsize_t first,
                         hsize_t count, WritePhases *phases);
void write_dataset(const char *path, hid_t fapl, const Shape *s, hid_t dcpl, const void *rows, hsize_t first,
                   hsize_t count);
void read_rows(const char *path, hid_t fapl, const Shape *s, void *rows, hsize_t first, hsize_t count);
double stored_bytes(const char *path);
long compare_frames(const char *path, const char *reference, int check_filter, hsize_t stride, hsize_t offset,
                    hsize_t *chunks_seen);

/* ---- check (fz_mpi_check.c, fz_mpi_rules.c) ---- */

/* Element i of a float32 or float64 field, as a double (fz_mpi_errors.c). */
double value_at(const void *data, int is_double, size_t i);
/* Elements outside the bound (fz_mpi_errors.c). */
long violations(const Shape *s, const void *original, const void *decoded, const char *mode, double bound);
int check_rules(const char *out, const char *data_dir, FILE *json);
int run_check(const char *out, const char *data_dir, const char *json_path);

/* ---- bench (fz_mpi_bench.c, fz_mpi_measure.c) ---- */

/* Memory a rank's write or read costs, beyond the slabs it already holds:
 * the minor page faults it took (each is a page the kernel had to find and
 * zero, seconds per GiB on the GPU machines) and how far its resident set
 * rose above where it started (Linux's peak, VmHWM, reset through
 * /proc/self/clear_refs before the phase; 0 where /proc lacks it). */
typedef struct {
  long faults;
  long start_kib;
} MemoryMark;

MemoryMark memory_mark(void);
void memory_since(MemoryMark mark, double out[2]);
void raw_io(const char *path, char *buffer, size_t bytes, double *write_s, double *read_s);
void warm_up(const Shape *s, hid_t dcpl, const void *rows);
int run_bench(const char *out, const char *data_dir, char *preset_list, const char *mode, double bound,
              double mib_per_rank, double total_mib, double chunk_mib, int reps, int verify, int first_write,
              const char *json_path);

#endif
