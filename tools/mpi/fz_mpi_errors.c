/* The element-by-element error check that the check (fz_mpi_check.c) and
 * the parallel-HDF5 rules (fz_mpi_rules.c) both run on what they read back:
 * a file of its own, below both, so neither calls into the other. */
#include "fz_mpi_common.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double value_at(const void *data, int is_double, size_t i) {
  return is_double ? ((const double *)data)[i] : (double)((const float *)data)[i];
}

/* Elements outside the bound (the NOA range taken per chunk, as the filter
 * does), or differing at all for lossless. */
long violations(const Shape *s, const void *original, const void *decoded, const char *mode, double bound) {
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
