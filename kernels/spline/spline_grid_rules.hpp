// The spline stage's geometry (spline.hpp states the format), shared by the
// CPU (tile_cpu.hpp) and the GPU (tiles_cuda.cuh): tile size and level count
// per rank, the level flags, the chunk's tile and anchor grids, one tile's
// frame and working buffer, and the three passes of a level. Split from
// spline_rules.hpp (which includes it) because the geometry is what every
// other rule is written against; it knows nothing of codes or values.
// Host and device code (common/host_device.hpp), except grid_of; nothing
// here allocates or throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/host_device.hpp"

namespace fz::spline::rules {

// Tile edge B per rank (spline.hpp): 16 in 3-D, 64 in 2-D, 256 in 1-D, and
// the level count L = log2(B): units B/2 .. 1.
FZ_HOST_DEVICE constexpr size_t tile_size(unsigned rank) { return rank == 3 ? 16 : rank == 2 ? 64 : 256; }
FZ_HOST_DEVICE constexpr unsigned level_count(unsigned rank) { return rank == 3 ? 4 : rank == 2 ? 6 : 8; }
constexpr unsigned kMaxLevels = 8;

// The largest radius code_bytes can carry: codes run up to 2 * radius - 1.
FZ_HOST_DEVICE constexpr uint32_t max_radius(unsigned code_bytes) { return code_bytes == 1 ? 128 : 32768; }

// Level flags (spline.hpp): bit 0 reverse (axes fastest to slowest); bits
// 1-2 the interpolation: 0 not-a-knot cubic (-3, 23, 23, -3) / 40, 1 natural
// cubic (-1, 9, 9, -1) / 16, 2 linear (b + c) / 2; 3 and bits 3-7 are malformed.
constexpr uint8_t kFlagReverse = 1;
enum Interpolation : unsigned { kNotAKnotCubic = 0, kNaturalCubic = 1, kLinear = 2 };
FZ_HOST_DEVICE constexpr unsigned interpolation_of(uint8_t flags) { return (flags >> 1) & 3u; }
FZ_HOST_DEVICE constexpr bool flags_are_valid(uint8_t flags) { return flags < 8 && interpolation_of(flags) != 3; }

// The chunk as three axes, slowest first: a rank-r chunk gets 3 - r leading
// axes of extent 1 (one tile of one point each, which no pass ever visits).
struct Grid {
  unsigned rank = 1;
  size_t tile = 256;        // B
  size_t n[3] = {1, 1, 1};  // extents
  size_t tiles[3] = {0, 0, 0};  // ceil(n / B) per axis; also the anchor grid's extents
  size_t elements = 0;
  size_t tile_count = 0;  // also the anchor count

  // True at the points whose every coordinate is a multiple of B.
  FZ_HOST_DEVICE bool is_anchor(size_t z, size_t y, size_t x) const {
    return z % tile == 0 && y % tile == 0 && x % tile == 0;
  }
};

enum class GridCheck { kOk, kBadRank, kTooManyElements };

// dims (1 to 3 extents, slowest first) as a Grid; an extent of 0 gives no
// elements and no tiles. Bounded so that N * 16 never overflows.
inline GridCheck grid_of(const std::vector<size_t>& dims, Grid& g) {
  if (dims.empty() || dims.size() > 3) return GridCheck::kBadRank;
  g = Grid{};
  g.rank = static_cast<unsigned>(dims.size());
  g.tile = tile_size(g.rank);
  for (size_t k = 0; k < dims.size(); ++k) g.n[3 - dims.size() + k] = dims[k];
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t elements = 1;
  for (size_t e : g.n) {
    if (e != 0 && elements > kMaxElements / e) return GridCheck::kTooManyElements;
    elements *= e;
  }
  g.elements = elements;
  g.tile_count = 1;
  for (int k = 0; k < 3; ++k) {
    g.tiles[k] = (g.n[k] + g.tile - 1) / g.tile;
    g.tile_count *= g.tiles[k];
  }
  return GridCheck::kOk;
}

// One tile (spline.hpp): where it lies in the chunk and the slots of its
// private working buffer of (B+1)^rank values. Host and device: the CPU's
// tiles (tile_cpu.hpp) and the GPU's thread blocks use the same geometry.
struct TileFrame {
  size_t origin[3] = {0, 0, 0};  // global coordinates of local 0
  size_t extent[3] = {1, 1, 1};  // local points the tile computes: min(B + 1, n - origin)
  size_t stride[3] = {0, 0, 1};  // working-buffer strides (B + 1 per real axis, 1 per padded one)
  size_t buffer_size = 1;

  FZ_HOST_DEVICE TileFrame(const Grid& grid, size_t tile_index) {
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

  FZ_HOST_DEVICE size_t slot(size_t z, size_t y, size_t x) const {
    return z * stride[0] + y * stride[1] + x * stride[2];
  }
};

// (B+1)^rank: every tile's working buffer has this many slots.
FZ_HOST_DEVICE constexpr size_t tile_buffer_size(unsigned rank) {
  return rank == 3 ? 17 * 17 * 17 : rank == 2 ? 65 * 65 : 257;
}

// True where the tile owns the point (writes its code / output): local < B
// on every axis; the points at local B are the next tile's.
FZ_HOST_DEVICE inline bool owns(const Grid& grid, size_t z, size_t y, size_t x) {
  return z < grid.tile && y < grid.tile && x < grid.tile;
}

FZ_HOST_DEVICE inline size_t global_index(const Grid& grid, const TileFrame& f, size_t z, size_t y, size_t x) {
  return ((f.origin[0] + z) * grid.n[1] + f.origin[1] + y) * grid.n[2] + f.origin[2] + x;
}

// Pass j (0..2) of the level of unit u (spline.hpp): along axis `axis`, that
// axis at odd multiples of u, the axes before it in the pass order on the
// u-grid, those after it on the 2u-grid; local coordinates start[k],
// start[k] + step[k], ... below the tile's extent. `empty` when the axis has
// no odd multiple of u inside the tile (also every padded axis).
struct Pass {
  int axis;
  bool empty;
  size_t start[3];
  size_t step[3];
};
FZ_HOST_DEVICE inline Pass pass_of(const TileFrame& f, size_t u, bool reverse, int j) {
  Pass p;
  p.axis = reverse ? 2 - j : j;
  p.empty = f.extent[p.axis] <= u;
  for (int k = 0; k < 3; ++k) {
    const bool before = reverse ? k > p.axis : k < p.axis;
    p.start[k] = k == p.axis ? u : 0;
    p.step[k] = k == p.axis || !before ? 2 * u : u;
  }
  return p;
}

}  // namespace fz::spline::rules
