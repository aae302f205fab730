/* fz_mpi: the plugin's own C interface (filter/reader_api.cpp), found through
 * dlopen in HDF5_PLUGIN_PATH as HDF5 will find it: the device each rank's
 * filter uses (printed per rank, and in the JSON report) and the seconds the
 * filter spent, which the benchmark subtracts from HDF5's. */
#include "fz_mpi_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*device_in_use_fn)(char *, size_t);
typedef void (*filter_totals_fn)(double *, double *, unsigned long long *, unsigned long long *);
static device_in_use_fn g_device_in_use;
static filter_totals_fn g_filter_totals;

/* The plugin HDF5 will load: the first HDF5_PLUGIN_PATH folder holding it.
 * dlopen gives this process's one copy, the one HDF5 loads later. */
void bind_plugin(void) {
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

double filter_seconds(int decompress) {
  double c = 0, d = 0;
  g_filter_totals(&c, &d, NULL, NULL);
  return decompress ? d : c;
}

/* Every rank says, in rank order, which device the filter uses for it. */
void print_devices(FILE *json, int *first) {
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
