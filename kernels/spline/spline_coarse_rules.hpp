// The spline stage's coarse levels (spline.hpp, "Coarse levels"): the anchor
// grid, predicted and quantized by global interpolation levels from one
// stored root point instead of being stored raw. The geometry and the
// prediction of a coarse point are here so that the CPU (coarse_cpu.cpp) and
// the GPU (coarse_cuda.cuh) visit the same points in the same passes and
// predict them bit for bit alike; the quantization is every point's
// (spline_quantize_rules.hpp). Host and device code; nothing here allocates
// or throws.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.hpp"
#include "spline/spline_grid_rules.hpp"
#include "spline/spline_predict_rules.hpp"

namespace fz::spline::rules {

// The anchor grid: anchor (a0, a1, a2) is the point (a0 B, a1 B, a2 B), for
// a_k < A_k = grid.tiles[k] = ceil(n_k / B) (the multiples of B below n_k),
// index (a0 A1 + a1) A2 + a2: tile t's anchor is anchor t. Coarse level m
// has unit v = 2^m anchors (u = B v points), level number l = L + m with
// L = level_count(rank) (its step is step_l by the usual rule). C, the
// count of coarse levels, is the smallest with 2^C >= max A_k (0 for a
// chunk of one anchor, or none): the 2^C-grid then holds only the root.
FZ_HOST_DEVICE inline unsigned coarse_level_count(const Grid& grid) {
  size_t top = 0;
  for (int k = 0; k < 3; ++k) top = grid.tiles[k] > top ? grid.tiles[k] : top;
  unsigned c = 0;
  while (c < 63 && (size_t{1} << c) < top) ++c;
  return c;
}

// The levels the side stream lists: L, plus C with coarse levels.
FZ_HOST_DEVICE inline unsigned side_level_count(const Grid& grid, bool coarse) {
  return level_count(grid.rank) + (coarse ? coarse_level_count(grid) : 0);
}
// The most levels a side stream lists (L <= 8, C <= 63).
constexpr unsigned kMaxSideLevels = kMaxLevels + 63;

// The anchor values the side stream holds: every anchor (v1), or only the
// root (coarse levels); none in a chunk without elements.
FZ_HOST_DEVICE inline size_t stored_anchor_count(const Grid& grid, bool coarse) {
  return coarse && grid.tile_count > 0 ? 1 : grid.tile_count;
}

// The anchor of a tile's corner at local (z, y, x) (each 0 or B).
FZ_HOST_DEVICE inline size_t corner_anchor(const Grid& grid, const TileFrame& f, size_t z, size_t y, size_t x) {
  const size_t a0 = (f.origin[0] + z) / grid.tile, a1 = (f.origin[1] + y) / grid.tile;
  const size_t a2 = (f.origin[2] + x) / grid.tile;
  return (a0 * grid.tiles[1] + a1) * grid.tiles[2] + a2;
}

// Pass j (0..2) of coarse level m: always the flags-0 order (axes slowest to
// fastest, not-a-knot cubic: no tuning at the coarse levels). Along axis j,
// that axis at odd multiples of v, the axes before it on the v-grid, those
// after it on the 2v-grid (as a tile level's pass, on anchor indices):
// count[k] anchors per axis from start[k], step[k] apart; `points` in all.
struct CoarsePass {
  int axis;
  size_t v;
  size_t start[3];
  size_t step[3];
  size_t count[3];
  size_t points;
};
FZ_HOST_DEVICE inline CoarsePass coarse_pass_of(const Grid& grid, unsigned m, int j) {
  CoarsePass p;
  p.axis = j;
  p.v = size_t{1} << m;
  p.points = 1;
  for (int k = 0; k < 3; ++k) {
    p.start[k] = k == j ? p.v : 0;
    p.step[k] = k < j ? p.v : 2 * p.v;
    const size_t extent = grid.tiles[k];
    p.count[k] = extent > p.start[k] ? (extent - 1 - p.start[k]) / p.step[k] + 1 : 0;
    p.points *= p.count[k];
  }
  return p;
}

// Point i (< points, x fastest) of a pass: its anchor coordinates.
FZ_HOST_DEVICE inline void coarse_point(const CoarsePass& p, size_t i, size_t (&a)[3]) {
  for (int k = 2; k >= 0; --k) {
    a[k] = p.start[k] + (i % p.count[k]) * p.step[k];
    i /= p.count[k];
  }
}

// The anchor index of anchor coordinates, and the global index of its point.
FZ_HOST_DEVICE inline size_t anchor_of(const Grid& grid, const size_t (&a)[3]) {
  return (a[0] * grid.tiles[1] + a[1]) * grid.tiles[2] + a[2];
}
FZ_HOST_DEVICE inline size_t anchor_element(const Grid& grid, const size_t (&a)[3]) {
  return ((a[0] * grid.tile) * grid.n[1] + a[1] * grid.tile) * grid.n[2] + a[2] * grid.tile;
}

// The prediction of anchor a (its index `at` in `values`, the anchor grid in
// C order, what predictions read) along the pass axis: the tile levels'
// table on anchor indices, with hasA = a >= 3v, hasC = a + v < A, hasD =
// a + 3v < A (spline.hpp: g - 3u >= 0, g + u < n, g + 3u < n; no tile
// condition: stencil_of with a tile bound it never reaches).
template <typename T>
FZ_HOST_DEVICE inline T coarse_predict(const T* values, const Grid& grid, const CoarsePass& p, const size_t (&a)[3],
                                       size_t at) {
  const size_t i = a[p.axis], extent = grid.tiles[p.axis];
  const ptrdiff_t along = static_cast<ptrdiff_t>(
      p.v * (p.axis == 0 ? grid.tiles[1] * grid.tiles[2] : p.axis == 1 ? grid.tiles[2] : size_t{1}));
  return predict_with(stencil_of<size_t>(i, p.v, i + 3 * p.v, i, extent, kNotAKnotCubic), values + at, along);
}

}  // namespace fz::spline::rules
