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
// Resident blocks per multiprocessor the tile kernels are built for (a
// register cap): the passes leave most threads idle at the coarse levels and
// wait at barriers, so other blocks fill the gaps. As many as shared memory
// holds: float32 tiles six (encode, decode), five with the tuner's two
// buffers; float64 four and two.
// The sum of v over the warp's 32 lanes (all active): one instruction on
// sm_80 and later, a butterfly of shuffles on older GPUs (the build's
// architecture list reaches sm_75).
__device__ __forceinline__ uint32_t warp_sum(uint32_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(0xFFFFFFFFu, v);
#else
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
#endif
}

template <typename T>
constexpr unsigned kTileBlocks = sizeof(T) == 4 ? 6 : 4;
template <typename T>
constexpr unsigned kTuneBlocks = sizeof(T) == 4 ? 5 : 2;
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

// ---- the fast walk (encode, tuning, decode) ---------------------------------
//
// The passes and points of tile_cpu.hpp's run_level (spline.hpp), in 32-bit
// local arithmetic:
// a point's place in the pass comes from two multiply-high divisions by the
// pass's per-axis counts (exact: fewer than 2^13 points per pass, counts below
// 2^9), and the prediction is rules::predict_along told the point's local
// index as its global one and the tile's extent along the axis as the extent:
// with extent = min(B + 1, n - origin), i + u < extent exactly when g + u < n,
// and i + 3u < extent exactly when i + 3u <= B and g + 3u < n (i is an odd
// multiple of u below B + 1, so i + u <= B), so the arithmetic is the CPU's.

// The tile's extents and slot strides in 32 bits (each at most 257, 65^2, 17^3).
struct TileGeometry {
  unsigned extent[3];
  unsigned stride[3];
  unsigned tile;  // B
};

__device__ __forceinline__ TileGeometry geometry_of(const Grid& grid, const TileFrame& f) {
  TileGeometry t;
  for (int k = 0; k < 3; ++k) {
    t.extent[k] = static_cast<unsigned>(f.extent[k]);
    t.stride[k] = static_cast<unsigned>(f.stride[k]);
  }
  t.tile = static_cast<unsigned>(grid.tile);
  return t;
}

// floor(p / d) for p < 2^13, 1 <= d < 2^9, with magic = magic_of(d).
__host__ __device__ __forceinline__ unsigned magic_of(unsigned d) { return d <= 1 ? 0u : 0xFFFFFFFFu / d + 1; }
__device__ __forceinline__ unsigned divide(unsigned p, unsigned d, unsigned magic) {
  return d <= 1 ? p : __umulhi(p, magic);
}

// a[k] by selects (a dynamic index would put the array in local memory).
__device__ __forceinline__ unsigned pick(const unsigned (&a)[3], int k) { return k == 0 ? a[0] : k == 1 ? a[1] : a[2]; }

// The level of unit 2^level with `flags`: visit(slot, prediction, local z,
// y, x) for every point of every pass; it must set buffer[slot] to what
// later predictions read. A barrier ends each pass; every thread of the
// block must call it.
template <typename T, typename Visit>
__device__ __forceinline__ void walk_level(const TileGeometry& t, T* buffer, unsigned level, uint8_t flags,
                                           Visit&& visit) {
  const unsigned u = 1u << level;
  const bool reverse = (flags & kFlagReverse) != 0;
  const unsigned interpolation = interpolation_of(flags);
#pragma unroll 1
  for (int j = 0; j < 3; ++j) {
    const int axis = reverse ? 2 - j : j;
    if (pick(t.extent, axis) <= u) continue;  // uniform over the block
    unsigned count[3], start[3], shift[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      const bool before = reverse ? k > axis : k < axis;
      start[k] = k == axis ? u : 0;
      shift[k] = k == axis || !before ? level + 1 : level;  // step = 2u or u
      count[k] = t.extent[k] > start[k] ? ((t.extent[k] - 1 - start[k]) >> shift[k]) + 1 : 0;
    }
    const unsigned points = count[0] * count[1] * count[2];
    const unsigned magic2 = magic_of(count[2]), magic1 = magic_of(count[1]);
    const unsigned stride_along = u * pick(t.stride, axis);
    const unsigned extent_along = pick(t.extent, axis);
    for (unsigned p = threadIdx.x; p < points; p += blockDim.x) {
      const unsigned q2 = divide(p, count[2], magic2);
      const unsigned q1 = divide(q2, count[1], magic1);
      const unsigned z = start[0] + (q1 << shift[0]);
      const unsigned y = start[1] + ((q2 - q1 * count[1]) << shift[1]);
      const unsigned x = start[2] + ((p - q2 * count[2]) << shift[2]);
      const unsigned slot = z * t.stride[0] + y * t.stride[1] + x * t.stride[2];
      const unsigned i = axis == 0 ? z : axis == 1 ? y : x;
      const T prediction = predict_along(buffer + slot, static_cast<ptrdiff_t>(stride_along), i, u, t.tile, i,
                                         extent_along, interpolation);
      visit(slot, prediction, z, y, x);
    }
    __syncthreads();
  }
}

// Calls visit(slot, local z, y, x) for every point of the tile inside the
// chunk (local 0 .. extent - 1 per axis), consecutive threads on consecutive
// x. (One point at a time: the tile kernels are bound by their instruction
// count, not by the latency of these loads, which other blocks hide; batching
// the loads measured slower, by the instructions it adds.)
template <typename Visit>
__device__ __forceinline__ void for_each_region_point(const TileGeometry& t, Visit&& visit) {
  const unsigned row = t.extent[2];
  const unsigned total = t.extent[0] * t.extent[1] * row;
  const unsigned magic_row = magic_of(row), magic_y = magic_of(t.extent[1]);
  for (unsigned k = threadIdx.x; k < total; k += blockDim.x) {
    const unsigned r = divide(k, row, magic_row);
    const unsigned z = divide(r, t.extent[1], magic_y);
    const unsigned y = r - z * t.extent[1];
    const unsigned x = k - r * row;
    visit(z * t.stride[0] + y * t.stride[1] + x * t.stride[2], z, y, x);
  }
}

// Calls visit(local z, y, x, i) for every point the tile owns inside the chunk
// (local below min(B, extent) per axis), i = (z * B + y) * B + x.
template <typename Visit>
__device__ __forceinline__ void for_each_owned_point(const TileGeometry& t, Visit&& visit) {
  unsigned owned[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) owned[k] = t.extent[k] < t.tile ? t.extent[k] : t.tile;
  const unsigned row = owned[2];
  const unsigned total = owned[0] * owned[1] * row;
  const unsigned magic_row = magic_of(row), magic_y = magic_of(owned[1]);
  for (unsigned k = threadIdx.x; k < total; k += blockDim.x) {
    const unsigned r = divide(k, row, magic_row);
    const unsigned z = divide(r, owned[1], magic_y);
    const unsigned y = r - z * owned[1];
    const unsigned x = k - r * row;
    visit(z, y, x, (z * t.tile + y) * t.tile + x);
  }
}

// The tile's points inside the chunk from `values` (the input) into
// buffer: the corners (anchors) as predictions read them (0 where not
// finite), every other point as its raw value, which the walk reads once as
// the point's x before it overwrites the slot with x' (a point is computed
// once, and no prediction reads a point before it is computed).
template <typename T>
__device__ __forceinline__ void load_region(const Grid& grid, const TileFrame& f, const TileGeometry& t,
                                            const uint8_t* values, T* buffer, T* copy = nullptr) {
  const uint8_t* base = values + global_index(grid, f, 0, 0, 0) * sizeof(T);
  const size_t plane = grid.n[1] * grid.n[2], row = grid.n[2];
  const unsigned corner_mask = t.tile - 1;
  for_each_region_point(t, [&](unsigned slot, unsigned z, unsigned y, unsigned x) {
    T v = load_value<T>(base, z * plane + y * row + x);
    if (((z | y | x) & corner_mask) == 0) v = prediction_value(v);
    buffer[slot] = v;
    if (copy) copy[slot] = v;
  });
}

// Dynamic shared memory above the default 48 KiB needs the kernel's consent.
template <typename Kernel>
inline cudaError_t allow_shared(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024 - 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

// Whether element g (C order) is an anchor: every coordinate a multiple of B.
__device__ __forceinline__ bool is_anchor_index(const Grid& grid, size_t g) {
  const size_t x = g % grid.n[2];
  const size_t rest = g / grid.n[2];
  return grid.is_anchor(rest / grid.n[1], rest % grid.n[1], x);
}


// Anchor a (anchor-grid C order) as an element index.
__device__ __forceinline__ size_t anchor_index(const Grid& grid, size_t a) {
  const size_t ax = a % grid.tiles[2];
  const size_t rest = a / grid.tiles[2];
  const size_t ay = rest % grid.tiles[1], az = rest / grid.tiles[1];
  return ((az * grid.tile) * grid.n[1] + ay * grid.tile) * grid.n[2] + ax * grid.tile;
}

}  // namespace fz::spline::cuda::detail
