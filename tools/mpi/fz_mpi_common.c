/* What every file of fz_mpi shares at run time: the rank and the size of
 * MPI_COMM_WORLD, and the two ways out (die, xmalloc). Kept apart from main
 * (fz_mpi.c) so that the check, the benchmark and their helpers call down to
 * it and nothing calls back up into main's file. */
#include "fz_mpi_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int g_rank, g_size;

void die(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fz_mpi (rank %d): ", g_rank);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}
