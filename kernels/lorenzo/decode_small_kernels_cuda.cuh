// The LORENZO CUDA decoder for small chunks: the whole decode in one launch
// of one block.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "common/one_block_scan_cuda.cuh"
#include "lorenzo/axis_sums_cuda.cuh"
#include "lorenzo/common_cuda.cuh"
#include "lorenzo/outliers_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

//
// A chunk of at most kSmallElements elements (16 KiB of float32) decodes in
// one launch where the general path takes seven to ten, about 4 us of host
// time each on the H100 machine: most of a small chunk's decode there. The
// steps and checks are the general path's, in the same order; the deltas live
// in shared memory. Each axis's inclusive sums are a segmented block scan over
// the elements in that axis's order (its lines back to back), so every shape
// runs in parallel, whatever its longest axis.
constexpr size_t kSmallElements = cuda_detail::kOneBlockScanItems;
constexpr unsigned kSmallThreads = cuda_detail::kOneBlockScanThreads;
// Chunks of at most kSmallerElements take 4 elements (and records) per
// thread instead of 16: the whole block works on a 4 KiB chunk. (On the H100
// machine, at its idle clock, 16 per thread took 31 us of GPU time for a
// 4 KiB chunk, most of the chunk's decode.)
constexpr size_t kSmallerElements = size_t{kSmallThreads} * 4;

// A running sum that restarts at a line's first element: (start, sum) pairs
// combine associatively, which lets a block scan carry sums across threads.
template <typename U>
struct LineSum {
  U sum;
  uint32_t starts;  // a line begins within (1) or not (0)
};
template <typename U>
struct CombineLineSums {
  __device__ LineSum<U> operator()(const LineSum<U>& a, const LineSum<U>& b) const {
    return b.starts ? b : LineSum<U>{static_cast<U>(a.sum + b.sum), a.starts};
  }
};

// Inclusive sums of v (the chunk's n elements, x fastest) along `axis`.
template <unsigned kPer, typename U>
__device__ void small_axis_sums(U* v, const Shape& s, int axis,
                                typename cub::BlockScan<LineSum<U>, kSmallThreads>::TempStorage& temp) {
  const unsigned n = static_cast<unsigned>(s.n);
  const unsigned length = static_cast<unsigned>(axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz);
  const AxisOrder element{s, axis};  // position in the axis's order -> element index
  const unsigned first = threadIdx.x * kPer;
  U sums[kPer];
  LineSum<U> mine{0, 0};
#pragma unroll
  for (unsigned k = 0; k < kPer; ++k) {
    const unsigned j = first + k;
    const U x = j < n ? v[element(j)] : U{0};
    const bool starts = j < n && j % length == 0;
    mine = starts ? LineSum<U>{x, 1} : LineSum<U>{static_cast<U>(mine.sum + x), mine.starts};
    sums[k] = mine.sum;
  }
  LineSum<U> before{0, 0};
  cub::BlockScan<LineSum<U>, kSmallThreads>(temp).ExclusiveScan(mine, before, LineSum<U>{0, 0},
                                                                  CombineLineSums<U>());
  // Every thread has read its elements (the scan synchronises): write back,
  // adding what the line carried in until the thread's first line start.
  bool carried = true;
#pragma unroll
  for (unsigned k = 0; k < kPer; ++k) {
    const unsigned j = first + k;
    if (j >= n) break;
    if (j % length == 0) carried = false;
    v[element(j)] = carried ? static_cast<U>(sums[k] + before.sum) : sums[k];
  }
  __syncthreads();  // before the next axis reads, and before temp is reused
}

template <typename T, unsigned kPer>
__global__ void __launch_bounds__(kSmallThreads)
    decode_small(const uint8_t* codes, const uint8_t* o, size_t outliers_size, Shape s, size_t capacity,
                 bool has_fill, typename Traits<T>::U code_limit, T eb2, typename Traits<T>::U fill_bits,
                 OutlierLayout* layout, uint64_t* delta_flag, uint64_t* raw_flag, uint64_t* delta_rank,
                 uint64_t* raw_rank, uint8_t* out, uint32_t* status) {
  using U = typename Traits<T>::U;
  __shared__ U v[kSmallElements];
  __shared__ typename cub::BlockScan<LineSum<U>, kSmallThreads>::TempStorage temp;
  check_outliers_in_one_block<kPer>(o, outliers_size, s.n, sizeof(T), capacity, has_fill, layout, delta_flag,
                                    raw_flag, delta_rank, raw_rank, status);
  __syncthreads();  // the layout, the ranks and the status word are written
  const OutlierLayout l = *layout;
  const unsigned n = static_cast<unsigned>(s.n);
  uint32_t bad = 0;
  for (unsigned i = threadIdx.x; i < n; i += kSmallThreads) v[i] = delta_of_code(codes, i, code_limit, bad);
  __syncthreads();
  for (size_t r = threadIdx.x; r < capacity; r += kSmallThreads)  // place_deltas
    bad |= place_delta(o, codes, s.n, r, code_limit, l, delta_rank, v);
  __syncthreads();
  for (int axis = 0; axis < 3; ++axis) {
    const size_t length = axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz;
    if (length > 1) small_axis_sums<kPer>(v, s, axis, temp);
  }
  for (unsigned i = threadIdx.x; i < n; i += kSmallThreads)  // convert
    if (!store_value<T>(v[i], eb2, out, i)) bad |= kValueOutOfRange;
  __syncthreads();  // patch_special reads elements other threads wrote
  for (size_t r = threadIdx.x; r < capacity; r += kSmallThreads)  // patch_specials
    bad |= patch_special(o, s.n, r, fill_bits, l, raw_rank, out);
  if (bad) atomicOr(status, bad);
}

}  // namespace fz::lorenzo::cuda::detail
