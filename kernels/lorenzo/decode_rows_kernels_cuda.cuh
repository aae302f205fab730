// The LORENZO CUDA decoder's kernels for chunks of short rows (at most
// kMaxRowLength elements): the inverse Lorenzo operator as three passes.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lorenzo/common_cuda.cuh"
#include "lorenzo/outliers_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

//
// The inverse of the Lorenzo predictor is an inclusive prefix sum along x,
// y and z. plane_sums: one warp per (plane, segment of `rows` rows) sums
// each row along x (lane l holds x = l + 32j: coalesced loads, a warp scan
// per 32 elements) and keeps running column sums down the segment; it writes
// those partial sums and each segment's column totals. segment_offsets turns
// the totals into what the segments above add (an exclusive sum per plane and
// x); depth_sums walks z per (y, x), adding both, and converts to values.
// Three passes over the data instead of seven. (When the planes have few
// columns, the depth is walked in segments: two more passes, see
// depth_segment_totals.)

template <typename U>
__device__ __forceinline__ U warp_inclusive_sum(U v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const U other = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += other;
  }
  return v;
}

// Deltas come from the codes, or (when the outlier stream stores deltas)
// from `deltas`, which unpack_codes and place_deltas filled. `deltas` and
// `sums` may be the same array (decoding in the output): a warp reads each
// row of its segment before it writes that row's sums, and no other warp
// touches the segment. The next row is
// loaded while this one is summed, and the row's K warp scans are independent
// (their carries are added afterwards), so neither memory nor shuffle latency
// serialises a warp.
template <typename U, unsigned K>
__global__ void __launch_bounds__(kThreads)
    plane_sums(const uint16_t* __restrict__ codes, const U* deltas, const OutlierLayout* layout, Shape s,
               size_t rows, size_t segments, U code_limit, U* sums, U* __restrict__ totals, uint32_t* status) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t task = static_cast<size_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (task >= s.nz * segments) return;  // the whole warp
  const size_t z = task / segments, segment = task % segments;
  const size_t y0 = segment * rows, y1 = y0 + rows < s.ny ? y0 + rows : s.ny;
  const bool stored = layout->ok && layout->deltas > 0;
  bool bad = false;
  // Raw words of a row (codes or deltas; x clamped into the row, so every
  // load is unconditional and all K are in flight together) ...
  auto load_row = [&](size_t y, U (&v)[K]) {
    const size_t row = (z * s.ny + y) * s.nx;
    if (stored) {
#pragma unroll
      for (unsigned j = 0; j < K; ++j) v[j] = deltas[row + (lane + 32 * j < s.nx ? lane + 32 * j : s.nx - 1)];
    } else {
#pragma unroll
      for (unsigned j = 0; j < K; ++j) v[j] = codes[row + (lane + 32 * j < s.nx ? lane + 32 * j : s.nx - 1)];
    }
  };
  // ... turned into deltas only when the next row's loads are on their way.
  auto deltas_of = [&](U (&v)[K]) {
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const bool inside = lane + 32 * j < s.nx;
      U d = v[j];
      if (!stored) {
        bad |= inside && !(d < code_limit);
        d = unzigzag(d);
      }
      v[j] = inside ? d : U{0};
    }
  };
  U column[K], v[K];
#pragma unroll
  for (unsigned j = 0; j < K; ++j) column[j] = 0;
  load_row(y0, v);
  for (size_t y = y0; y < y1; ++y) {
    U next[K];
    if (y + 1 < y1) load_row(y + 1, next);  // uniform
    deltas_of(v);
#pragma unroll
    for (unsigned j = 0; j < K; ++j) v[j] = warp_inclusive_sum(v[j], lane);
    U carry = 0;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const U total = __shfl_sync(0xFFFFFFFFu, v[j], 31);
      column[j] += v[j] + carry;
      carry += total;
    }
    const size_t row = (z * s.ny + y) * s.nx;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const size_t x = lane + 32 * j;
      if (x < s.nx) sums[row + x] = column[j];
      v[j] = next[j];
    }
  }
  U* total = totals + (z * segments + segment) * s.nx;
#pragma unroll
  for (unsigned j = 0; j < K; ++j) {
    const size_t x = lane + 32 * j;
    if (x < s.nx) total[x] = column[j];
  }
  if (__any_sync(0xFFFFFFFFu, bad) && lane == 0) atomicOr(status, kCodeOutOfRadius);
}

// totals[z][k][x] becomes the sum of totals[z][0..k-1][x]; eight loads in
// flight at a time.
template <typename U>
__global__ void __launch_bounds__(kThreads) segment_offsets(U* totals, Shape s, size_t segments) {
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= s.nz * s.nx) return;
  U* at = totals + (c / s.nx) * segments * s.nx + c % s.nx;
  U acc = 0;
  for (size_t k = 0; k < segments; k += 8, at += 8 * s.nx) {
    U t[8];
#pragma unroll
    for (unsigned q = 0; q < 8; ++q) t[q] = k + q < segments ? at[q * s.nx] : U{0};
#pragma unroll
    for (unsigned q = 0; q < 8; ++q) {
      if (k + q < segments) at[q * s.nx] = acc;
      acc += t[q];
    }
  }
}

// The planes' 2-D sums: element (z, c) of the plane, c = y * nx + x.
template <typename U>
struct PlaneSums {
  const U* sums;     // plane_sums' partial sums
  const U* offsets;  // segment_offsets' carries
  size_t plane, nx, rows, offset_stride;
  __device__ const U* offset_of(size_t c) const { return offsets + (c / nx / rows) * nx + c % nx; }
};

// Walks z over planes [z0, z1) of column c, from `acc` (the sum of the
// planes before z0); calls emit(z, acc) after each plane, four planes'
// loads in flight at a time.
template <typename U, typename Emit>
__device__ __forceinline__ U walk_depth(const PlaneSums<U>& p, size_t c, size_t z0, size_t z1, U acc, Emit&& emit) {
  const U* offset = p.offset_of(c);
  size_t z = z0;
  for (; z + 4 <= z1; z += 4) {
    U a[4], b[4];
#pragma unroll
    for (unsigned q = 0; q < 4; ++q) {
      a[q] = p.sums[(z + q) * p.plane + c];
      b[q] = offset[(z + q) * p.offset_stride];
    }
#pragma unroll
    for (unsigned q = 0; q < 4; ++q) {
      acc += a[q] + b[q];
      emit(z + q, acc);
    }
  }
  for (; z < z1; ++z) {
    acc += p.sums[z * p.plane + c] + offset[z * p.offset_stride];
    emit(z, acc);
  }
  return acc;
}

// Thread t's part of the depth walk: column c over planes [z0, z1) of depth
// segment k (t = k * plane + c); none past the last segment.
struct DepthPart {
  size_t c, z0, z1;
  __device__ DepthPart(size_t t, size_t plane, size_t nz, size_t length)
      : c(t % plane), z0(t / plane * length), z1(z0 + length < nz ? z0 + length : nz) {}
};

// Thread (k, c): the z sums of column c over depth segment k (planes
// [k * length, (k + 1) * length)), from depth_carries[k][c] (the segments
// above; none when there is one segment), converted to values.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    depth_sums(PlaneSums<typename Traits<T>::U> p, size_t nz, size_t length, size_t depth_segments,
               const typename Traits<T>::U* depth_carries, T eb2, uint8_t* out, uint32_t* status) {
  using U = typename Traits<T>::U;
  const size_t t = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= depth_segments * p.plane) return;
  const DepthPart part(t, p.plane, nz, length);
  bool bad = false;
  walk_depth(p, part.c, part.z0, part.z1, depth_carries ? depth_carries[t] : U{0},
             [&](size_t z, U acc) { bad |= !store_value<T>(acc, eb2, out, z * p.plane + part.c); });
  if (bad) atomicOr(status, kValueOutOfRange);
}

// For chunks of few, deep columns (h5py's (n, 64, 64) chunks: 4096 columns
// of 1024 planes), one thread per column leaves most of the GPU idle: 206 us
// for a 16 MiB chunk under ncu, the rest of its decode 80. The depth is then
// cut into segments: each segment's column totals, their exclusive sums down
// the segments, and the walks from those carries (depth_sums).
template <typename U>
__global__ void __launch_bounds__(kThreads)
    depth_segment_totals(PlaneSums<U> p, size_t nz, size_t length, size_t depth_segments, U* totals) {
  const size_t t = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= depth_segments * p.plane) return;
  const DepthPart part(t, p.plane, nz, length);
  totals[t] = walk_depth(p, part.c, part.z0, part.z1, U{0}, [](size_t, U) {});
}

template <typename U>
__global__ void __launch_bounds__(kThreads) depth_segment_carries(U* totals, size_t plane, size_t depth_segments) {
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= plane) return;
  U acc = 0;
  for (size_t k = 0; k < depth_segments; ++k) {
    const U t = totals[k * plane + c];
    totals[k * plane + c] = acc;
    acc += t;
  }
}
}  // namespace fz::lorenzo::cuda::detail
