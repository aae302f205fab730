// The code groups on the GPU (spline.hpp, spline_code_rules.hpp): the tile kernels
// write each code straight to its place in its group stream and read it from
// there, with the closed forms the CPU uses (groups_cpu.cpp: code_row and
// code_place from a point's global coordinates), so the bytes match and no
// pass over element-order codes is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spline/spline_rules.hpp"
#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

struct GroupStreams {
  uint8_t* at[kCodeGroups];
};
struct ConstGroupStreams {
  const uint8_t* at[kCodeGroups];
};

__device__ __forceinline__ void store_code_word(uint8_t* at, unsigned code_bytes, uint32_t code) {
  if (code_bytes == 1) *at = static_cast<uint8_t>(code);
  else store_word<uint16_t>(at, static_cast<uint16_t>(code));
}

// The byte address of the code at global (z, y, x) in its group stream.
template <typename Streams>
__device__ __forceinline__ auto code_address(const Grid& grid, const CodeGroups& groups, const Streams& streams,
                                             unsigned code_bytes, size_t z, size_t y, size_t x) {
  const CodeRow r = code_row(grid, groups, z, y);
  size_t offset;
  const unsigned g = code_place(r, x, offset);
  return streams.at[g] + offset * code_bytes;
}

// The places of a tile's codes, row by row. code_row and code_place of a
// global point cost some forty 64-bit operations; a tile computes each of its
// region rows' CodeRow once (RowPlaces, in shared memory) with the tile's x
// origin folded in, after which a point's place is a few 32-bit operations on
// its local x. The tile's origin is a multiple of B, hence of 4, so local and
// global coordinates agree modulo 4, and with x = ox + lx:
//   (x + 1) / 2 = ox / 2 + (lx + 1) / 2,  (x + 3) / 4 = ox / 4 + (lx + 3) / 4,
// so code_place's offsets are
//   row class 0:            group 0, base0 + ox + lx
//   lx odd:                 group 0, base0 + ox - ox / 2 + lx / 2
//   class 4, lx % 4 == 0:   group 2, base2 + ox / 4 + lx / 4
//   class 4, lx % 4 == 2:   group 1, base1 + ox / 2 - ox / 4 + lx / 4
//   class 2, lx even:       group 1, base1 + ox / 2 + lx / 2
// (each the same size_t value code_place gives).
struct RowPlaces {
  size_t at[kCodeGroups];  // per group, the offset that the local x term is added to
};

// Region rows (local z, y; row z * extent[1] + y), at most 17 * 17.
// (At most 17 * 17 * 24 bytes: the kernels keep them in their working buffer
// while it is free, which is larger for every rank.)
__device__ __forceinline__ unsigned region_rows(const TileGeometry& t) { return t.extent[0] * t.extent[1]; }

// Fills rows[0, region_rows); the caller synchronises before reading them.
__device__ __forceinline__ void fill_row_places(const Grid& grid, const CodeGroups& groups, const TileFrame& f,
                                                const TileGeometry& t, RowPlaces* rows) {
  const size_t ox = f.origin[2];
  const unsigned count = region_rows(t);
  for (unsigned r = threadIdx.x; r < count; r += blockDim.x) {
    const unsigned z = r / t.extent[1], y = r - z * t.extent[1];
    const CodeRow c = code_row(grid, groups, f.origin[0] + z, f.origin[1] + y);
    RowPlaces p;
    if (c.row_class == 0) {
      p.at[0] = c.base[0] + ox;
      p.at[1] = p.at[2] = 0;  // not used
    } else {
      p.at[0] = c.base[0] + ox - ox / 2;
      p.at[1] = c.base[1] + ox / 2 - (c.row_class == 4 ? ox / 4 : 0);
      p.at[2] = c.base[2] + ox / 4;
    }
    rows[r] = p;
  }
}

// The byte address of the code at local (z, y, x) of the tile whose rows are `rows`.
template <typename Streams>
__device__ __forceinline__ auto row_code_address(const TileGeometry& t, const RowPlaces* rows, const Streams& streams,
                                                 unsigned code_bytes, unsigned z, unsigned y, unsigned x) {
  const RowPlaces& p = rows[z * t.extent[1] + y];
  const unsigned row_class = (z & 3) == 0 && (y & 3) == 0 ? 4 : (z & 1) == 0 && (y & 1) == 0 ? 2 : 0;
  unsigned g;
  size_t offset;
  if (row_class == 0) {
    g = 0;
    offset = p.at[0] + x;
  } else if (x & 1) {
    g = 0;
    offset = p.at[0] + (x >> 1);
  } else if (row_class == 4 && (x & 3) == 0) {
    g = 2;
    offset = p.at[2] + (x >> 2);
  } else {
    g = 1;
    offset = p.at[1] + (row_class == 4 ? x >> 2 : x >> 1);
  }
  return streams.at[g] + offset * code_bytes;
}

}  // namespace fz::spline::cuda::detail
