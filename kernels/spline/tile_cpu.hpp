// One tile of the spline stage on the CPU (spline.hpp): where it lies in the
// chunk, its private working buffer of (B+1)^rank values, and the walk over
// the points of one level, pass by pass, in the order spline.hpp gives. The
// encoder, the tuner and the decoder all run their levels through run_level,
// so they visit the same points with the same predictions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

struct TileFrame {
  size_t origin[3] = {0, 0, 0};  // global coordinates of local 0
  size_t extent[3] = {1, 1, 1};  // local points the tile computes: min(B + 1, n - origin)
  size_t stride[3] = {0, 0, 1};  // working-buffer strides (B + 1 per real axis, 1 per padded one)
  size_t buffer_size = 1;

  TileFrame(const rules::Grid& grid, size_t tile_index) {
    size_t rest = tile_index;
    size_t span[3];
    for (int k = 2; k >= 0; --k) {
      const size_t t = rest % grid.tiles[k];
      rest /= grid.tiles[k];
      origin[k] = t * grid.tile;
      const size_t left = grid.n[k] - origin[k];
      extent[k] = left < grid.tile + 1 ? left : grid.tile + 1;
      span[k] = k >= 3 - static_cast<int>(grid.rank) ? grid.tile + 1 : 1;
    }
    stride[2] = 1;
    stride[1] = span[2];
    stride[0] = span[2] * span[1];
    buffer_size = stride[0] * span[0];
  }

  size_t slot(size_t z, size_t y, size_t x) const { return z * stride[0] + y * stride[1] + x * stride[2]; }
};

// Calls visit(slot, local coordinates) for the tile's anchors: its corners
// (local 0 or B on every axis) inside the chunk.
template <typename Visit>
void for_each_corner(const rules::Grid& grid, const TileFrame& f, Visit&& visit) {
  for (size_t z = 0; z < f.extent[0]; z += grid.tile)
    for (size_t y = 0; y < f.extent[1]; y += grid.tile)
      for (size_t x = 0; x < f.extent[2]; x += grid.tile) visit(f.slot(z, y, x), z, y, x);
}

// The level of unit u with `flags`: its passes in order, each over its points
// (spline.hpp). Pass j runs along axis order[j]: that axis at odd multiples
// of u, the axes before it in the order on the u-grid, those after it on the
// 2u-grid. For every point, visit(slot pointer, prediction, local z, y, x)
// is called once the prediction from the already known points is made; it
// must set the slot to what later predictions read.
template <typename T, typename Visit>
void run_level(const rules::Grid& grid, const TileFrame& f, T* buffer, size_t u, uint8_t flags, Visit&& visit) {
  const bool reverse = (flags & rules::kFlagReverse) != 0;
  const bool natural = (flags & rules::kFlagNatural) != 0;
  for (int j = 0; j < 3; ++j) {
    const int axis = reverse ? 2 - j : j;
    if (f.extent[axis] <= u) continue;  // no odd multiple of u inside: also every padded axis
    size_t start[3], step[3];
    for (int k = 0; k < 3; ++k) {
      const bool before = reverse ? k > axis : k < axis;
      start[k] = k == axis ? u : 0;
      step[k] = k == axis || !before ? 2 * u : u;
    }
    const ptrdiff_t stride = static_cast<ptrdiff_t>(u * f.stride[axis]);
    const size_t n = grid.n[axis], origin = f.origin[axis];
    size_t local[3];
    for (local[0] = start[0]; local[0] < f.extent[0]; local[0] += step[0]) {
      for (local[1] = start[1]; local[1] < f.extent[1]; local[1] += step[1]) {
        for (local[2] = start[2]; local[2] < f.extent[2]; local[2] += step[2]) {
          T* at = buffer + f.slot(local[0], local[1], local[2]);
          const size_t i = local[axis];
          const T p = rules::predict_along(at, stride, i, u, grid.tile, origin + i, n, natural);
          visit(at, p, local[0], local[1], local[2]);
        }
      }
    }
  }
}

// True where the tile owns the point (writes its code / output): local < B
// on every axis; the points at local B are the next tile's.
inline bool owns(const rules::Grid& grid, size_t z, size_t y, size_t x) {
  return z < grid.tile && y < grid.tile && x < grid.tile;
}

inline size_t global_index(const rules::Grid& grid, const TileFrame& f, size_t z, size_t y, size_t x) {
  return ((f.origin[0] + z) * grid.n[1] + f.origin[1] + y) * grid.n[2] + f.origin[2] + x;
}

}  // namespace fz::spline::detail
