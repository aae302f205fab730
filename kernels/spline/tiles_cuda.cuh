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

#include "common/dynamic_shared_cuda.cuh"
#include "common/words_cuda.cuh"
#include "lorenzo/lorenzo_rules.hpp"
#include "spline/spline_rules.hpp"

namespace fz::spline::cuda::detail {

using namespace rules;  // the per-element rules and the tile geometry the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

constexpr unsigned kTileThreads = 256;
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

// Resident blocks per multiprocessor the tile kernels are built for (a
// register cap): the passes leave most threads idle at the coarse levels and
// wait at barriers, so other blocks fill the gaps. As many as shared memory
// holds: float32 tiles eight (the encoder: 32 registers, with a spill of 8
// bytes; at 36 registers only seven blocks resided and encode_tiles took
// 2.05 ms instead of 1.97 on a 512 MiB chunk, H100), float64 four; the
// decoder's own count is in decode_kernels_cuda.cuh. The tuner runs at most kMaxSampleTiles blocks, two per
// multiprocessor of an H100, so its cap only has to let it keep its
// registers: four (float32: 64 registers; at 48 it spilled), float64 two.
template <typename T>
constexpr unsigned kTileBlocks = sizeof(T) == 4 ? 8 : 4;
template <typename T>
constexpr unsigned kTuneBlocks = sizeof(T) == 4 ? 4 : 2;
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
// for_each_corner) from `anchors` (the coarse levels' values,
// coarse_cuda.cuh) when given, else from `values` (the decoder's scattered
// output): what predictions read, 0 where not finite. Ends with a barrier.
template <typename T>
__device__ void load_corners(const Grid& grid, const TileFrame& f, const uint8_t* values, T* buffer,
                             const T* anchors = nullptr) {
  const unsigned c = threadIdx.x;
  if (c < 8) {
    const size_t z = ((c >> 2) & 1) * grid.tile, y = ((c >> 1) & 1) * grid.tile, x = (c & 1) * grid.tile;
    if (z < f.extent[0] && y < f.extent[1] && x < f.extent[2])
      buffer[f.slot(z, y, x)] = anchors != nullptr
                                    ? anchors[corner_anchor(grid, f, z, y, x)]
                                    : prediction_value(load_value<T>(values, global_index(grid, f, z, y, x)));
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
  unsigned rank;  // the axes 3 - rank .. 2 are the chunk's; the others have extent 1
};

__device__ __forceinline__ TileGeometry geometry_of(const Grid& grid, const TileFrame& f) {
  TileGeometry t;
  for (int k = 0; k < 3; ++k) {
    t.extent[k] = static_cast<unsigned>(f.extent[k]);
    t.stride[k] = static_cast<unsigned>(f.stride[k]);
  }
  t.tile = static_cast<unsigned>(grid.tile);
  t.rank = grid.rank;
  return t;
}

// floor(p / d) for p < 2^13, 1 <= d < 2^9, with magic = magic_of(d).
__host__ __device__ __forceinline__ unsigned magic_of(unsigned d) { return d <= 1 ? 0u : 0xFFFFFFFFu / d + 1; }
__device__ __forceinline__ unsigned divide(unsigned p, unsigned d, unsigned magic) {
  return d <= 1 ? p : __umulhi(p, magic);
}

// a[k] by selects (a dynamic index would put the array in local memory).
__device__ __forceinline__ unsigned pick(const unsigned (&a)[3], int k) { return k == 0 ? a[0] : k == 1 ? a[1] : a[2]; }

// One pass of a level: its axis and how its points are numbered. Pass j
// (0 .. rank - 1) of a level runs along axis 3 - rank + j, or 2 - j when the
// level's flags say reverse: the order of rules::pass_of, whose passes along
// the axes of extent 1 are empty. The points form a count[0] x count[1] x
// count[2] box: along the pass axis u, 3u, 5u, ..., along an axis an earlier
// pass of the level has filled every u, along the others every 2u.
struct PassPlan {
  unsigned points;  // count[0] * count[1] * count[2]; 0: the tile's extent along the axis is at most u
  unsigned count1, count2;
  unsigned magic1, magic2;  // magic_of(count1), magic_of(count2)
  unsigned axis;
  unsigned shifts;  // bit k: axis k steps 2u (shift level + 1), else u
};

__device__ __forceinline__ PassPlan plan_pass(const TileGeometry& t, unsigned level, bool reverse, unsigned j) {
  const unsigned u = 1u << level;
  const int axis = reverse ? 2 - static_cast<int>(j) : static_cast<int>(3 - t.rank + j);
  PassPlan plan{};
  plan.axis = static_cast<unsigned>(axis);
  if (pick(t.extent, axis) <= u) return plan;
  unsigned count[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    const bool before = reverse ? k > axis : k < axis;
    const unsigned start = k == axis ? u : 0;
    const bool wide = k == axis || !before;  // step 2u
    count[k] = t.extent[k] > start ? ((t.extent[k] - 1 - start) >> (level + (wide ? 1 : 0))) + 1 : 0;
    plan.shifts |= (wide ? 1u : 0u) << k;
  }
  plan.points = count[0] * count[1] * count[2];
  plan.count1 = count[1];
  plan.count2 = count[2];
  plan.magic1 = magic_of(count[1]);
  plan.magic2 = magic_of(count[2]);
  return plan;
}

// The points of one pass: visit(slot, prediction, local z, y, x) for each
// (it must set buffer[slot] to what later predictions read); a barrier
// ends the pass unless it is empty (uniform over the block).
template <typename T, typename Visit>
__device__ __forceinline__ void walk_pass(const TileGeometry& t, T* buffer, unsigned level, unsigned interpolation,
                                          const PassPlan& plan, Visit&& visit) {
  if (plan.points == 0) return;
  const unsigned u = 1u << level;
  const int axis = static_cast<int>(plan.axis);
  unsigned start[3], shift[3];
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    start[k] = k == axis ? u : 0;
    shift[k] = level + ((plan.shifts >> k) & 1u);
  }
  const unsigned stride_along = u * pick(t.stride, axis);
  const unsigned extent_along = pick(t.extent, axis);
  for (unsigned p = threadIdx.x; p < plan.points; p += blockDim.x) {
    const unsigned q2 = divide(p, plan.count2, plan.magic2);
    const unsigned q1 = divide(q2, plan.count1, plan.magic1);
    const unsigned z = start[0] + (q1 << shift[0]);
    const unsigned y = start[1] + ((q2 - q1 * plan.count1) << shift[1]);
    const unsigned x = start[2] + ((p - q2 * plan.count2) << shift[2]);
    const unsigned slot = z * t.stride[0] + y * t.stride[1] + x * t.stride[2];
    const unsigned i = axis == 0 ? z : axis == 1 ? y : x;
    const T prediction = predict_along(buffer + slot, static_cast<int>(stride_along), i, u, t.tile, i,
                                       extent_along, interpolation);
    visit(slot, prediction, z, y, x);
  }
  __syncthreads();
}

// Every pass of every level of a tile, planned once per warp: lane
// level * rank + j holds pass j of the level (at most 4 * 3, 6 * 2 or 8 * 1
// lanes), and each pass is read from its lane with shuffles. Planning a pass
// takes two integer divisions and a hundred-odd instructions, which every
// warp of the block would otherwise repeat at each pass: a sixth of
// encode_tiles' instructions (ncu, H100, float32 512^3). flags_of(level)
// gives the flags each level is walked with.
struct LevelPlans {
  // This lane's pass, packed into four registers (every field is below
  // 2^16, axis and shifts below 8): points | axis << 16 | shifts << 24,
  // count1 | count2 << 16, magic1, magic2. Empty past the last pass.
  uint32_t head = 0, counts = 0, magic1 = 0, magic2 = 0;

  template <typename FlagsOf>
  __device__ __forceinline__ LevelPlans(const TileGeometry& t, FlagsOf&& flags_of) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned level = lane / t.rank;
    if (level >= level_count(t.rank)) return;
    const PassPlan p = plan_pass(t, level, (flags_of(level) & kFlagReverse) != 0, lane - level * t.rank);
    head = p.points | p.axis << 16 | p.shifts << 24;
    counts = p.count1 | p.count2 << 16;
    magic1 = p.magic1;
    magic2 = p.magic2;
  }

  __device__ __forceinline__ PassPlan pass(unsigned level, unsigned j, unsigned rank) const {
    const int lane = static_cast<int>(level * rank + j);
    const uint32_t h = __shfl_sync(0xFFFFFFFFu, head, lane);
    const uint32_t c = __shfl_sync(0xFFFFFFFFu, counts, lane);
    PassPlan p;
    p.points = h & 0xFFFFu;
    p.axis = (h >> 16) & 0xFFu;
    p.shifts = h >> 24;
    p.count1 = c & 0xFFFFu;
    p.count2 = c >> 16;
    p.magic1 = __shfl_sync(0xFFFFFFFFu, magic1, lane);
    p.magic2 = __shfl_sync(0xFFFFFFFFu, magic2, lane);
    return p;
  }
};

// The level of unit 2^level with `flags` (those the plans were made with):
// visit(slot, prediction, local z, y, x) for every point of every pass; it
// must set buffer[slot] to what later predictions read. A barrier ends each
// pass; every thread of the block must call it, each warp whole (the
// shuffles).
template <typename T, typename Visit>
__device__ __forceinline__ void walk_level(const TileGeometry& t, T* buffer, unsigned level, uint8_t flags,
                                           const LevelPlans& plans, Visit&& visit) {
  const unsigned interpolation = interpolation_of(flags);
#pragma unroll 1
  for (unsigned j = 0; j < t.rank; ++j)
    walk_pass(t, buffer, level, interpolation, plans.pass(level, j, t.rank), visit);
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
template <bool kAligned, typename T>
__device__ __forceinline__ void load_region_points(const Grid& grid, const TileFrame& f, const TileGeometry& t,
                                                   const uint8_t* values, T* buffer, T* copy, const T* anchors) {
  const uint8_t* base = values + global_index(grid, f, 0, 0, 0) * sizeof(T);
  const size_t plane = grid.n[1] * grid.n[2], row = grid.n[2];
  const unsigned corner_mask = t.tile - 1;
  for_each_region_point(t, [&](unsigned slot, unsigned z, unsigned y, unsigned x) {
    const size_t i = z * plane + y * row + x;
    T v;
    if constexpr (kAligned) v = reinterpret_cast<const T*>(base)[i];
    else v = load_value<T>(base, i);
    if (((z | y | x) & corner_mask) == 0)  // a corner: the anchor as predictions read it
      v = anchors != nullptr ? anchors[corner_anchor(grid, f, z, y, x)] : prediction_value(v);
    buffer[slot] = v;
    if (copy) copy[slot] = v;
  });
}

// load_region_points, with plain loads when the chunk is aligned to its
// element width, as it is on every path the engine takes (the per-load
// alignment test and byte loads cost a tenth of the encoder's loading).
// The corners from `anchors` (the coarse levels' values, coarse_cuda.cuh)
// when given, else the input's values as predictions read them.
template <typename T>
__device__ __forceinline__ void load_region(const Grid& grid, const TileFrame& f, const TileGeometry& t,
                                            const uint8_t* values, T* buffer, T* copy = nullptr,
                                            const T* anchors = nullptr) {
  if ((reinterpret_cast<uintptr_t>(values) & (sizeof(T) - 1)) == 0)
    load_region_points<true>(grid, f, t, values, buffer, copy, anchors);
  else
    load_region_points<false>(grid, f, t, values, buffer, copy, anchors);
}

// Dynamic shared memory above the default 48 KiB needs the kernel's consent
// (given so that threads launching at once cannot undo each other's).
template <typename Kernel>
inline cudaError_t allow_shared(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024 - 1024) return cudaSuccess;
  return cuda_common::allow_dynamic_shared_memory(kernel, bytes);
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
