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

// The tile geometry is shared with the GPU (spline_rules.hpp).
using rules::global_index;
using rules::owns;
using rules::TileFrame;

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
  const unsigned interpolation = rules::interpolation_of(flags);
  for (int j = 0; j < 3; ++j) {
    const rules::Pass pass = rules::pass_of(f, u, reverse, j);
    if (pass.empty) continue;
    const int axis = pass.axis;
    const size_t* start = pass.start;
    const size_t* step = pass.step;
    const ptrdiff_t stride = static_cast<ptrdiff_t>(u * f.stride[axis]);
    const size_t n = grid.n[axis], origin = f.origin[axis];
    size_t local[3];
    for (local[0] = start[0]; local[0] < f.extent[0]; local[0] += step[0]) {
      for (local[1] = start[1]; local[1] < f.extent[1]; local[1] += step[1]) {
        for (local[2] = start[2]; local[2] < f.extent[2]; local[2] += step[2]) {
          T* at = buffer + f.slot(local[0], local[1], local[2]);
          const size_t i = local[axis];
          const T p = rules::predict_along(at, stride, i, u, grid.tile, origin + i, n, interpolation);
          visit(at, p, local[0], local[1], local[2]);
        }
      }
    }
  }
}

}  // namespace fz::spline::detail
