// What the SPLINE CUDA encoder, tuner and decoder share on the device: one
// thread block per tile, its (B+1)^rank working buffer in shared memory, and
// the walk over one level's passes (spline.hpp). Within a pass every point
// reads only points of the 2u-grid along the pass axis (i +- u, i +- 3u with
// i an odd multiple of u), which the pass never writes, so the block computes
// a pass's points in any order and gets the CPU's values (tile_cpu.hpp walks
// them in C order); a barrier separates the passes. The per-point arithmetic
// is spline_rules.hpp's, shared with the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/words_cuda.cuh"
#include "lorenzo/lorenzo_rules.hpp"
#include "spline/spline_rules.hpp"

namespace fz::spline::cuda::detail {

using namespace rules;  // the per-element rules and the tile geometry the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

constexpr unsigned kTileThreads = 256;
constexpr size_t kAlign = 256;

template <typename T>
using Bits = typename lorenzo::rules::Traits<T>::U;

inline size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// The working buffer's bytes: the dynamic shared memory of a tile kernel
// (at most 17^3 doubles, 39304 bytes: below the 48 KiB every launch may ask for).
template <typename T>
inline size_t tile_shared_bytes(unsigned rank) {
  return tile_buffer_size(rank) * sizeof(T);
}

// dims as a Grid; false where the CPU throws UsageError, or where the grid is
// too large for one launch of a block per tile.
inline bool device_grid_of(const std::vector<size_t>& dims, Grid& grid) {
  if (grid_of(dims, grid) != GridCheck::kOk) return false;
  return grid.tile_count <= 0x7FFFFFFFu;
}

template <typename T>
__device__ __forceinline__ T load_value(const uint8_t* bytes, size_t g) {
  const Bits<T> bits = load_word<Bits<T>>(bytes + g * sizeof(T));
  T x;
  memcpy(&x, &bits, sizeof(T));
  return x;
}

// Copies one element's W bytes (any alignment on both sides).
template <typename T>
__device__ __forceinline__ void copy_value(const uint8_t* from, uint8_t* to) {
  store_word<Bits<T>>(to, load_word<Bits<T>>(from));
}

template <typename T>
__device__ __forceinline__ T* tile_buffer() {
  extern __shared__ double shared_words[];  // double: aligned for both widths
  return reinterpret_cast<T*>(shared_words);
}

// The tile's corners inside the chunk (its anchors, tile_cpu.hpp's
// for_each_corner) from `values` (the input, or the decoder's scattered
// output): what predictions read, 0 where not finite. Ends with a barrier.
template <typename T>
__device__ void load_corners(const Grid& grid, const TileFrame& f, const uint8_t* values, T* buffer) {
  const unsigned c = threadIdx.x;
  if (c < 8) {
    const size_t z = ((c >> 2) & 1) * grid.tile, y = ((c >> 1) & 1) * grid.tile, x = (c & 1) * grid.tile;
    if (z < f.extent[0] && y < f.extent[1] && x < f.extent[2])
      buffer[f.slot(z, y, x)] = prediction_value(load_value<T>(values, global_index(grid, f, z, y, x)));
  }
  __syncthreads();
}

// The level of unit 2^level with `flags` (tile_cpu.hpp's run_level): for
// every point of every pass, visit(slot pointer, prediction, local z, y, x),
// which must set the slot to what later predictions read. The threads share
// each pass's points; a barrier ends each pass. Every thread of the block
// must call it (the pass structure is uniform over the block).
template <typename T, typename Visit>
__device__ void run_level_block(const Grid& grid, const TileFrame& f, T* buffer, unsigned level, uint8_t flags,
                                Visit&& visit) {
  const size_t u = size_t{1} << level;
  const bool reverse = (flags & kFlagReverse) != 0;
  const unsigned interpolation = interpolation_of(flags);
  for (int j = 0; j < 3; ++j) {
    const Pass pass = pass_of(f, u, reverse, j);
    if (pass.empty) continue;
    // At most B + 1 = 257 positions per axis: 32-bit arithmetic below.
    unsigned count[3], start[3], step[3];
    for (int k = 0; k < 3; ++k) {
      start[k] = static_cast<unsigned>(pass.start[k]);
      step[k] = static_cast<unsigned>(pass.step[k]);
      const unsigned extent = static_cast<unsigned>(f.extent[k]);
      count[k] = extent > start[k] ? (extent - 1 - start[k]) / step[k] + 1 : 0;
    }
    const unsigned points = count[0] * count[1] * count[2];
    const int axis = pass.axis;
    const ptrdiff_t stride = static_cast<ptrdiff_t>(u * f.stride[axis]);
    const size_t n = grid.n[axis], origin = f.origin[axis];
    for (unsigned t = threadIdx.x; t < points; t += blockDim.x) {
      size_t local[3];
      unsigned rest = t;
      for (int k = 2; k >= 0; --k) {
        local[k] = start[k] + (rest % count[k]) * step[k];
        rest /= count[k];
      }
      T* at = buffer + f.slot(local[0], local[1], local[2]);
      const size_t i = local[axis];
      const T p = predict_along(at, stride, i, u, grid.tile, origin + i, n, interpolation);
      visit(at, p, local[0], local[1], local[2]);
    }
    __syncthreads();
  }
}

// Whether element g (C order) is an anchor: every coordinate a multiple of B.
__device__ __forceinline__ bool is_anchor_index(const Grid& grid, size_t g) {
  const size_t x = g % grid.n[2];
  const size_t rest = g / grid.n[2];
  return grid.is_anchor(rest / grid.n[1], rest % grid.n[1], x);
}

__device__ __forceinline__ uint32_t code_at(const uint8_t* codes, unsigned code_bytes, size_t g) {
  return code_bytes == 1 ? codes[g] : load_word<uint16_t>(codes + 2 * g);
}

// Anchor a (anchor-grid C order) as an element index.
__device__ __forceinline__ size_t anchor_index(const Grid& grid, size_t a) {
  const size_t ax = a % grid.tiles[2];
  const size_t rest = a / grid.tiles[2];
  const size_t ay = rest % grid.tiles[1], az = rest / grid.tiles[1];
  return ((az * grid.tile) * grid.n[1] + ay * grid.tile) * grid.n[2] + ax * grid.tile;
}

}  // namespace fz::spline::cuda::detail
