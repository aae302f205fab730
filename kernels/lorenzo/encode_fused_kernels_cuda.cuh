// The LORENZO CUDA encoder's one-pass front (encode_cuda.cu launches it; the
// schedule: lorenzo_cuda.hpp): the elements are read once, classified once,
// and their codes written once, with no prequantized array in between.
// Internal to the LORENZO CUDA sources: included by one translation unit.
//
// With r(z, y, x) = p(z, y, x) - p(z-1, y, x) and t = r(y, x) - r(y-1, x)
// (neighbours outside the data 0), the Lorenzo delta is t(x) - t(x-1). A block
// of kFusedWarps warps walks a segment of planes: warp w holds row
// y = first row - 1 + w of each plane (warp 0 the row above the block's first,
// whose p only its neighbour reads), lane l the K consecutive elements from
// x = l K. Shared memory holds the p of the block's rows in this plane and
// the one before: t = p(z, y) - p(z-1, y) - p(z, y-1) + p(z-1, y-1), all but
// p(z, y-1) read before the plane's one barrier, which makes the row above's
// p of this plane visible. t(x-1) is the lane's own but for its first
// element, which comes from the lane before (a shuffle).
// Records are rare: their per-tile counts take one atomic per tile and warp
// step (order-free integer sums, as the two-pass path), and their positions a
// bit each in `record_bits`, so that place_records computes only
// theirs again from the input.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lorenzo/common_cuda.cuh"
#include "lorenzo/encode_elements_cuda.cuh"
#include "lorenzo/encode_kernels_cuda.cuh"
#include "lorenzo/lanes_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;

// 32 lanes a row: the row kernel's layout with each lane's elements side by side.
constexpr unsigned kFusedWarps = 9;  // 8 rows of codes and the row above them
constexpr unsigned kFusedRows = kFusedWarps - 1;
constexpr unsigned kFusedThreads = kFusedWarps * 32;
// Blocks to aim for: several waves over every SM, each block still walking
// several planes (its first plane is read twice: the one before, then its own).
constexpr size_t kFusedBlocks = 2048;
constexpr size_t kFusedMinDepth = 4;

// Whether the one-pass front encodes this shape (common_cuda.cuh's lane rows).
inline bool fused_front(const Shape& s, unsigned width) {
  return s.n > 0 && s.nx >= kLaneRowsMin && s.nx <= lane_rows_max(width);
}

struct FusedGrid {
  size_t y_blocks, depth, segments;
};

inline FusedGrid fused_grid(const Shape& s) {
  FusedGrid f;
  f.y_blocks = (s.ny + kFusedRows - 1) / kFusedRows;
  const DepthSplit d =
      split_depth(s.nz, f.y_blocks, kFusedBlocks, (s.nz + kFusedMinDepth - 1) / kFusedMinDepth);
  f.depth = d.depth;
  f.segments = d.segments;
  return f;
}

// classify for the elements classify_common leaves (specials, ties near the
// bound): out of line, so that the common path keeps its registers.
template <typename T>
__device__ __noinline__ uint8_t classify_rest(Quantizer<T> quantizer, typename Traits<T>::U bits,
                                              typename Traits<T>::I* p) {
  typename Traits<T>::I q;
  const uint8_t kind = quantizer.classify(bits, q);
  *p = q;
  return kind;
}

// p of the lane's K elements of one row (as U, in `p`); returns their value
// kinds, 2 bits each (0 unless some element is special).
template <typename T, unsigned K>
__device__ __forceinline__ uint64_t prequantize_lane(const Quantizer<T>& quantizer, const uint8_t* row, unsigned x0,
                                                     unsigned nx, bool vectors, typename Traits<T>::U (&p)[K]) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  uint32_t rest = 0;
  load_lane<U, K>(row, x0, nx, vectors, p);
#pragma unroll
  for (unsigned j = 0; j < K; ++j) {
    I q;
    if (!quantizer.classify_common(p[j], q)) rest |= 1u << j;
    p[j] = static_cast<U>(q);
  }
  uint64_t value_kinds = 0;
  if (rest != 0) {  // rare: those elements again, from the cache
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      if ((rest >> j) & 1u) {
        I q;
        const uint8_t kind = classify_rest<T>(quantizer, load_word<U>(row + sizeof(U) * min(x0 + j, nx - 1)), &q);
        p[j] = static_cast<U>(q);
        value_kinds |= static_cast<uint64_t>(kind) << (2 * j);
      }
    }
  }
  return value_kinds;
}

// The records among a lane's K elements of a row (t in `t`, the t before
// them in `left`): their per-tile counts, one atomic per tile and warp, and
// their bits. Called by the whole warp when any lane has a record.
template <typename U, unsigned K>
__device__ __forceinline__ void count_lane_records(const U (&t)[K], U left, uint64_t value_kinds, U code_limit,
                                                size_t row_first, unsigned x0, unsigned nx, unsigned lane,
                                                unsigned long long* tile_counts, uint32_t* record_bits) {
  // A row spans at most two tiles (rows <= 512 elements, tiles 2048).
  const size_t first_tile = row_first / kTile;
  unsigned long long counts[2] = {0, 0};
  uint32_t records = 0;  // a bit an element
#pragma unroll
  for (unsigned j = 0; j < K; ++j) {
    const U zz = zigzag(static_cast<U>(t[j] - (j == 0 ? left : t[j - 1])));
    const uint8_t kind = static_cast<uint8_t>((zz < code_limit ? 0 : kHasDelta) | ((value_kinds >> (2 * j)) & 3u));
    if (kind != 0 && x0 + j < nx) {
      records |= 1u << j;
      counts[(row_first + x0 + j) / kTile - first_tile] += packed_counts(true, kind);
    }
  }
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    counts[0] += __shfl_down_sync(0xFFFFFFFFu, counts[0], offset);
    counts[1] += __shfl_down_sync(0xFFFFFFFFu, counts[1], offset);
  }
  if (lane == 0) {
    if (counts[0]) atomicAdd(&tile_counts[first_tile], counts[0]);
    if (counts[1]) atomicAdd(&tile_counts[first_tile + 1], counts[1]);
  }
  if (records != 0) {
    const size_t first = row_first + x0;
    const uint64_t bits = static_cast<uint64_t>(records) << (first & 31u);
    atomicOr(&record_bits[first >> 5], static_cast<uint32_t>(bits));
    if (bits >> 32) atomicOr(&record_bits[(first >> 5) + 1], static_cast<uint32_t>(bits >> 32));
  }
}

template <typename T, unsigned K>
__global__ void __launch_bounds__(kFusedThreads, 3)
    fused_codes(const uint8_t* __restrict__ in, Shape s, FusedGrid f, Quantizer<T> quantizer,
                typename Traits<T>::U code_limit, bool vector_loads, bool vector_stores, uint8_t* __restrict__ codes,
                unsigned long long* __restrict__ tile_counts, uint32_t* __restrict__ record_bits) {
  using U = typename Traits<T>::U;
  static_assert(K <= 16, "a lane's records are bits of 32, shifted within 64");
  // p of the block's rows in this plane and the one before ([j][lane]: no
  // bank conflicts); rows outside the data stay 0.
  __shared__ U planes[2][kFusedWarps][K][32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const size_t y_block = blockIdx.x % f.y_blocks, segment = blockIdx.x / f.y_blocks;
  const size_t z0 = segment * f.depth, z1 = z0 + f.depth < s.nz ? z0 + f.depth : s.nz;
  const long long y = static_cast<long long>(y_block * kFusedRows) + static_cast<long long>(warp) - 1;
  const bool has_row = y >= 0 && y < static_cast<long long>(s.ny);
  const bool codes_row = warp > 0 && has_row;
  const unsigned nx = static_cast<unsigned>(s.nx), x0 = lane * K;
  auto row_of = [&](size_t z) { return in + (z * s.ny + static_cast<size_t>(y)) * s.nx * sizeof(T); };

  {  // the plane before the segment's first into buffer 1 (0 before the data)
    U p[K];
#pragma unroll
    for (unsigned j = 0; j < K; ++j) p[j] = 0;
    if (has_row && z0 > 0) prequantize_lane<T, K>(quantizer, row_of(z0 - 1), x0, nx, vector_loads, p);
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      planes[1][warp][j][lane] = p[j];
      if (!has_row) planes[0][warp][j][lane] = 0;
    }
  }
  __syncthreads();
  for (size_t z = z0; z < z1; ++z) {
    const unsigned now = static_cast<unsigned>(z - z0) & 1u, before = now ^ 1u;
    // t = p(z, y) - p(z-1, y) - p(z, y-1) + p(z-1, y-1): all but p(z, y-1)
    // before the barrier, which makes this plane's p of every row visible.
    // (The row above's p of the plane before was written before the last
    // barrier and is overwritten only after the next.)
    U t[K];
    uint64_t value_kinds = 0;  // 2 bits an element
    if (has_row) {
      value_kinds = prequantize_lane<T, K>(quantizer, row_of(z), x0, nx, vector_loads, t);
#pragma unroll
      for (unsigned j = 0; j < K; ++j) {
        planes[now][warp][j][lane] = t[j];
        if (codes_row) t[j] = static_cast<U>(t[j] - planes[before][warp][j][lane] + planes[before][warp - 1][j][lane]);
      }
    }
    __syncthreads();
    if (!codes_row) continue;  // the barrier above is every thread's, each plane
#pragma unroll
    for (unsigned j = 0; j < K; ++j) t[j] = static_cast<U>(t[j] - planes[now][warp - 1][j][lane]);
    U left = __shfl_up_sync(0xFFFFFFFFu, t[K - 1], 1);
    if (lane == 0) left = 0;
    const size_t row_first = (z * s.ny + static_cast<size_t>(y)) * s.nx;
    uint16_t code[K];
    bool unfit = false;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const U zz = zigzag(static_cast<U>(t[j] - (j == 0 ? left : t[j - 1])));
      unfit |= !(zz < code_limit);
      code[j] = zz < code_limit ? static_cast<uint16_t>(zz) : uint16_t{0};
    }
    store_lane<uint16_t, K>(codes + 2 * row_first, x0, nx, vector_stores, code);
    if (__any_sync(0xFFFFFFFFu, unfit || value_kinds != 0))
      count_lane_records<U, K>(t, left, value_kinds, code_limit, row_first, x0, nx, lane, tile_counts, record_bits);
  }
}

// p of element k from the input (classify: 0 for every special value).
template <typename T>
struct PFromValues {
  const uint8_t* in;
  Quantizer<T> quantizer;
  __device__ __forceinline__ typename Traits<T>::U operator()(size_t k) const {
    typename Traits<T>::I q;
    quantizer.classify_fast(load_word<typename Traits<T>::U>(in + sizeof(T) * k), q);
    return static_cast<typename Traits<T>::U>(q);
  }
};

// Where the one-pass front's records come from (place_records): only the
// elements whose bit is set, each computed again from the input (its own p
// and its neighbours').
template <typename T>
struct RecordsFromValues {
  using U = typename Traits<T>::U;
  PFromValues<T> p;
  const uint32_t* record_bits;
  __device__ ElementInfo<U> operator()(const Grid& g, size_t i, U code_limit) const {
    ElementInfo<U> e{};
    if (!((record_bits[i >> 5] >> (i & 31u)) & 1u)) return e;
    size_t x, y, z;
    coordinates(g, i, x, y, z);
    const size_t sy = g.s.nx, sz = g.s.nx * g.s.ny;
    const bool left = x > 0, up = y > 0, back = z > 0;
    typename Traits<T>::I own;
    const uint8_t value_kind = p.quantizer.classify_fast(load_word<U>(p.in + sizeof(T) * i), own);
    U d = static_cast<U>(own);
    if (left) d -= p(i - 1);
    if (up) d -= p(i - sy);
    if (left && up) d += p(i - sy - 1);
    if (back) {
      d -= p(i - sz);
      if (left) d += p(i - sz - 1);
      if (up) d += p(i - sz - sy);
      if (left && up) d -= p(i - sz - sy - 1);
    }
    e.delta = d;
    e.kind = static_cast<uint8_t>((zigzag(d) < code_limit ? 0 : kHasDelta) | value_kind);
    e.record = e.kind != 0;
    return e;
  }
};

}  // namespace fz::lorenzo::cuda::detail
