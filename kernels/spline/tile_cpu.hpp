// One tile of the spline stage on the CPU (spline.hpp): where it lies in the
// chunk, its private working buffer of (B+1)^rank values, and the walk over
// the points of one level, pass by pass in the order spline.hpp gives, in
// rows of points with one stencil each. The encoder, the tuner and the
// decoder all run their levels through run_level, so they visit the same
// points with the same predictions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

// The tile geometry is shared with the GPU (spline_grid_rules.hpp).
using rules::TileFrame;

// The points the tile owns per axis (spline.hpp): local 0 .. min(B, extent) - 1.
inline size_t owned_extent(const rules::Grid& grid, const TileFrame& f, int axis) {
  return f.extent[axis] < grid.tile ? f.extent[axis] : grid.tile;
}

// Calls visit(slot, local z, y, x) for the tile's corners (local 0 or B on
// every axis) inside the chunk: its anchors.
template <typename Visit>
void for_each_corner(const rules::Grid& grid, const TileFrame& f, Visit&& visit) {
  for (size_t z = 0; z < f.extent[0]; z += grid.tile)
    for (size_t y = 0; y < f.extent[1]; y += grid.tile)
      for (size_t x = 0; x < f.extent[2]; x += grid.tile) visit(f.slot(z, y, x), z, y, x);
}

// The most points in a row (below): 128 in 1-D (the odd indices of 257),
// 65 in 2-D, 17 in 3-D.
constexpr size_t kMaxRowPoints = 128;

// One row of a pass: `count` points with stencil S, the first at slot
// `first`, each `step` slots after the one before, their neighbours along
// the pass axis `along` slots apart.
template <unsigned S>
struct Row {
  size_t first;
  size_t step;
  size_t count;
  ptrdiff_t along;

  size_t slot(size_t k) const { return first + k * step; }
  // The prediction of point k from `buffer` (spline_predict_rules.hpp).
  template <typename T>
  T predict(const T* buffer, size_t k) const {
    return rules::predict_stencil<S>(buffer + slot(k), along);
  }
};

namespace walk {

// Positions along one axis of a pass: `count` of them, the first `offset`
// slots from the buffer's start, each `step` slots after the one before.
struct Line {
  size_t offset;
  size_t step;
  size_t count;
};

inline Line line_of(size_t start, size_t step, size_t end, size_t stride) {
  return {start * stride, step * stride, end > start ? (end - 1 - start) / step + 1 : 0};
}

// The points of one pass with stencil S: a run of indices along the pass
// axis and the two other axes, as rows along the longest of the three (so
// a 1-D tile's rows follow the pass axis, a 3-D tile's the x or y axis).
template <unsigned S, typename VisitRow>
void sweep(ptrdiff_t along, const Line (&lines)[3], VisitRow& visit_row) {
  int r = 2;
  for (int k = 1; k >= 0; --k)
    if (lines[k].count > lines[r].count) r = k;
  const Line& outer = lines[r == 0 ? 1 : 0];
  const Line& inner = lines[r == 2 ? 1 : 2];
  for (size_t j = 0; j < outer.count; ++j)
    for (size_t k = 0; k < inner.count; ++k) {
      const size_t first = lines[r].offset + outer.offset + j * outer.step + inner.offset + k * inner.step;
      visit_row(Row<S>{first, lines[r].step, lines[r].count, along});
    }
}

}  // namespace walk

// The level of unit 2^level with `flags` (spline.hpp). Pass j runs along axis
// order[j]: that axis at odd multiples of u, the axes before it in the order
// on the u-grid, those after it on the 2u-grid. Within a pass a point reads
// only points of the 2u-grid along the pass axis, which the pass never
// writes, so the pass visits its points in any order and gets the same
// values (the GPU relies on this too, tiles_cuda.cuh): here the indices
// along the pass axis in runs of one stencil, each run in rows of points
// (Row). A stencil is found from the local index and the tile's extent
// along the axis (extent = min(B + 1, n - origin)), which decide exactly as
// the global index and n do (tiles_cuda.cuh says why). visit_row(row) is
// called for every row (a generic callable: the stencil is the row's type),
// and pass_end() after each pass: by then every point must have its slot set
// to what later predictions read (visit_row may leave that to pass_end). A
// run of the level writes only the level's points, each before anything
// reads it, so a level may run again on the same buffer (another flags
// choice) without a restore in between.
template <typename VisitRow, typename PassEnd>
void run_level(const rules::Grid& grid, const TileFrame& f, unsigned level, uint8_t flags, VisitRow&& visit_row,
               PassEnd&& pass_end) {
  const size_t u = size_t{1} << level;
  const bool reverse = (flags & rules::kFlagReverse) != 0;
  const unsigned interpolation = rules::interpolation_of(flags);
  for (int j = 0; j < 3; ++j) {
    const rules::Pass pass = rules::pass_of(f, u, reverse, j);
    if (pass.empty) continue;
    const int a = pass.axis;
    walk::Line lines[3];
    for (int k = 0; k < 3; ++k)
      if (k != a) lines[k] = walk::line_of(pass.start[k], pass.step[k], f.extent[k], f.stride[k]);
    const ptrdiff_t along = static_cast<ptrdiff_t>(u * f.stride[a]);
    const size_t extent = f.extent[a];
    for (size_t first = u; first < extent;) {
      const rules::Stencil s = rules::stencil_of<size_t>(first, u, grid.tile, first, extent, interpolation);
      size_t last = first + 2 * u;
      while (last < extent && rules::stencil_of<size_t>(last, u, grid.tile, last, extent, interpolation) == s) last += 2 * u;
      lines[a] = walk::line_of(first, 2 * u, last, f.stride[a]);
      switch (s) {
        case rules::kStencilB: walk::sweep<rules::kStencilB>(along, lines, visit_row); break;
        case rules::kStencilBC: walk::sweep<rules::kStencilBC>(along, lines, visit_row); break;
        case rules::kStencilNotAKnot: walk::sweep<rules::kStencilNotAKnot>(along, lines, visit_row); break;
        case rules::kStencilNatural: walk::sweep<rules::kStencilNatural>(along, lines, visit_row); break;
        case rules::kStencilABC: walk::sweep<rules::kStencilABC>(along, lines, visit_row); break;
        case rules::kStencilBCD: walk::sweep<rules::kStencilBCD>(along, lines, visit_row); break;
      }
      first = last;
    }
    pass_end();
  }
}

}  // namespace fz::spline::detail
