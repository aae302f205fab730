// Device functions and kernels of the LORENZO CUDA decoder over the outlier
// stream: the header and the records validated (checks and status bits: those
// of lorenzo_cuda.hpp, each where the CPU decoder throws), the stored deltas
// placed over their elements, values converted, and the specials patched.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/one_block_scan_cuda.cuh"
#include "lorenzo/common_cuda.cuh"
#include "lorenzo/lorenzo_cuda.hpp"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

struct OutlierLayout {
  uint32_t ok;
  uint64_t count, deltas, raws;
  size_t kind_at, delta_at, raw_at;
};

// The outlier stream's header as a layout; a bad one sets `bad` and counts
// nothing (ok = 0, no records).
static __device__ OutlierLayout read_outlier_header(const uint8_t* o, size_t size, size_t n, unsigned width,
                                                   uint32_t& bad) {
  OutlierLayout l{};
  bad = 0;
  if (size < kHeaderBytes) {
    bad = kOutliersTruncated;
  } else {
    l.count = load_word<uint64_t>(o);
    l.deltas = load_word<uint64_t>(o + 8);
    l.raws = load_word<uint64_t>(o + 16);
    if (!(l.count <= n && l.deltas <= l.count && l.raws <= l.count)) {
      bad = kCountsOutOfRange;
    } else {
      l.kind_at = kHeaderBytes + l.count * index_width_of(n);
      l.delta_at = l.kind_at + l.count;
      l.raw_at = l.delta_at + l.deltas * width;
      if (size != l.raw_at + l.raws * width) bad = kOutlierSizeMismatch;
    }
  }
  l.ok = bad == 0;
  if (bad) l.count = l.deltas = l.raws = 0;
  return l;
}

static __global__ void check_header(const uint8_t* o, size_t size, size_t n, unsigned width, OutlierLayout* layout,
                             uint32_t* status) {
  uint32_t bad = 0;
  const OutlierLayout l = read_outlier_header(o, size, n, width, bad);
  if (bad) atomicOr(status, bad);
  *layout = l;
}

__device__ inline uint64_t index_at(const uint8_t* o, size_t index_width, uint64_t r) {
  return index_width == 4 ? load_word<uint32_t>(o + kHeaderBytes + 4 * r)
                          : load_word<uint64_t>(o + kHeaderBytes + 8 * r);
}

// Record r (< l.count): its flags, and the checks it fails.
static __device__ uint32_t check_record(const uint8_t* o, size_t n, size_t r, const OutlierLayout& l, bool has_fill,
                                 uint64_t& has_delta, uint64_t& is_raw) {
  const size_t iw = index_width_of(n);
  const uint64_t index = index_at(o, iw, r);
  uint32_t bad = 0;
  if (!(index < n && (r == 0 || index > index_at(o, iw, r - 1)))) bad |= kIndicesNotIncreasing;
  const uint8_t kind = o[l.kind_at + r];
  if (!(kind != 0 && kind <= 7)) bad |= kBadKind;
  if ((kind & kValueMask) == kValueFill && !has_fill) bad |= kFillWithoutFillValue;
  has_delta = (kind & kHasDelta) != 0;
  is_raw = (kind & kValueMask) == kValueRaw;
  return bad;
}

// Flags for records [0, capacity): 0 beyond the header's count.
static __global__ void __launch_bounds__(kThreads)
    check_records(const uint8_t* o, size_t n, size_t capacity, bool has_fill, const OutlierLayout* layout,
                  uint64_t* delta_flag, uint64_t* raw_flag, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const OutlierLayout l = *layout;
  uint64_t has_delta = 0, is_raw = 0;
  if (r < l.count) {
    const uint32_t bad = check_record(o, n, r, l, has_fill, has_delta, is_raw);
    if (bad) atomicOr(status, bad);
  }
  delta_flag[r] = has_delta;
  raw_flag[r] = is_raw;
}

static __global__ void check_counts(size_t capacity, const uint64_t* delta_flag, const uint64_t* raw_flag,
                             const uint64_t* delta_rank, const uint64_t* raw_rank, OutlierLayout* layout,
                             uint32_t* status) {
  OutlierLayout l = *layout;
  if (!l.ok) return;
  uint64_t a = 0, w = 0;
  if (capacity > 0) {
    a = delta_rank[capacity - 1] + delta_flag[capacity - 1];
    w = raw_rank[capacity - 1] + raw_flag[capacity - 1];
  }
  if (a != l.deltas || w != l.raws) {
    atomicOr(status, kKindCountMismatch);
    layout->ok = 0;
  }
}

// check_header, check_records, the two rank scans and check_counts in one
// block, for outlier streams of at most kOneBlockScanItems records (a small
// chunk's: one launch where there were six, about 4 us of host time each),
// with the same layout, flags, ranks and status; the status word is set here
// (the general path clears it first).
// (The body is a device function so that decode_small runs it too, with
// kPer records per thread: fewer when there are fewer records, so that the
// work spreads over the whole block instead of a few threads' serial loops.)
template <unsigned kPer = cuda_detail::kOneBlockScanPerThread>
__device__ void check_outliers_in_one_block(const uint8_t* o, size_t size, size_t n, unsigned width, size_t capacity,
                                            bool has_fill, OutlierLayout* layout, uint64_t* delta_flag,
                                            uint64_t* raw_flag, uint64_t* delta_rank, uint64_t* raw_rank,
                                            uint32_t* status) {
  static_assert(kPer * cuda_detail::kOneBlockScanThreads <= cuda_detail::kOneBlockScanItems, "one block's records");
  using Scan = cub::BlockScan<uint64_t, cuda_detail::kOneBlockScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ OutlierLayout shared_layout;
  __shared__ uint32_t flags;
  if (threadIdx.x == 0) {
    uint32_t bad = 0;
    shared_layout = read_outlier_header(o, size, n, width, bad);
    flags = bad;
  }
  __syncthreads();
  const OutlierLayout l = shared_layout;
  const size_t first = static_cast<size_t>(threadIdx.x) * kPer;
  uint64_t deltas[kPer], raws[kPer];
  uint64_t my_deltas = 0, my_raws = 0;
  uint32_t bad = 0;
#pragma unroll
  for (unsigned j = 0; j < kPer; ++j) {
    const size_t r = first + j;
    uint64_t has_delta = 0, is_raw = 0;
    if (r < capacity && r < l.count) bad |= check_record(o, n, r, l, has_fill, has_delta, is_raw);
    if (r < capacity) {
      delta_flag[r] = has_delta;
      raw_flag[r] = is_raw;
    }
    deltas[j] = has_delta;
    raws[j] = is_raw;
    my_deltas += has_delta;
    my_raws += is_raw;
  }
  if (bad) atomicOr(&flags, bad);
  uint64_t delta_before = 0, all_deltas = 0, raw_before = 0, all_raws = 0;
  Scan(temp).ExclusiveSum(my_deltas, delta_before, all_deltas);
  __syncthreads();
  Scan(temp).ExclusiveSum(my_raws, raw_before, all_raws);
#pragma unroll
  for (unsigned j = 0; j < kPer; ++j) {
    const size_t r = first + j;
    if (r < capacity) {
      delta_rank[r] = delta_before;
      raw_rank[r] = raw_before;
    }
    delta_before += deltas[j];
    raw_before += raws[j];
  }
  __syncthreads();  // every flag is in
  if (threadIdx.x == 0) {
    OutlierLayout out = l;
    uint32_t all = flags;
    if (out.ok && (all_deltas != out.deltas || all_raws != out.raws)) {  // as check_counts
      all |= kKindCountMismatch;
      out.ok = 0;
    }
    *layout = out;
    *status = all;
  }
}

static __global__ void __launch_bounds__(cuda_detail::kOneBlockScanThreads)
    check_small_outliers(const uint8_t* o, size_t size, size_t n, unsigned width, size_t capacity, bool has_fill,
                         OutlierLayout* layout, uint64_t* delta_flag, uint64_t* raw_flag, uint64_t* delta_rank,
                         uint64_t* raw_rank, uint32_t* status) {
  check_outliers_in_one_block<>(o, size, n, width, capacity, has_fill, layout, delta_flag, raw_flag, delta_rank,
                                raw_rank, status);
}

// Element i's delta from its code; a code outside the radius sets `bad`.
template <typename U>
__device__ __forceinline__ U delta_of_code(const uint8_t* codes, size_t i, U code_limit, uint32_t& bad) {
  const U code = load_word<uint16_t>(codes + 2 * i);
  if (!(code < code_limit)) bad |= kCodeOutOfRadius;
  return unzigzag(code);
}

// only_with_deltas: nothing to do unless the (valid) outlier stream stores
// deltas (the row kernel reads the codes itself otherwise). Grid-stride, so
// that skipping costs one small launch.
template <typename U>
__global__ void __launch_bounds__(kThreads)
    unpack_codes(const uint8_t* codes, size_t n, U code_limit, U* d, uint32_t* status, const OutlierLayout* layout,
                 bool only_with_deltas) {
  if (only_with_deltas && !(layout->ok && layout->deltas > 0)) return;
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  uint32_t bad = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    d[i] = delta_of_code(codes, i, code_limit, bad);
  if (bad) atomicOr(status, bad);
}

// Record r's stored delta written over its element's delta in d; returns
// the checks it fails.
template <typename U>
__device__ uint32_t place_delta(const uint8_t* o, const uint8_t* codes, size_t n, size_t r, U code_limit,
                                const OutlierLayout& l, const uint64_t* delta_rank, U* d) {
  if (!l.ok || r >= l.count) return 0;
  const uint8_t kind = o[l.kind_at + r];
  if (!(kind & kHasDelta)) return 0;
  const uint64_t index = index_at(o, index_width_of(n), r);
  const uint64_t slot = delta_rank[r];
  if (index >= n || slot >= l.deltas) return 0;  // reported by check_records / check_counts
  uint32_t bad = 0;
  if (load_word<uint16_t>(codes + 2 * index) != 0) bad |= kNonzeroCodeAtOutlier;
  const U stored = load_word<U>(o + l.delta_at + sizeof(U) * slot);
  if (zigzag(stored) < code_limit) bad |= kStoredDeltaFits;
  d[index] = stored;
  return bad;
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    place_deltas(const uint8_t* o, const uint8_t* codes, size_t n, size_t capacity, U code_limit,
                 const OutlierLayout* layout, const uint64_t* delta_rank, U* d, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const uint32_t bad = place_delta(o, codes, n, r, code_limit, *layout, delta_rank, d);
  if (bad) atomicOr(status, bad);
}

// Element i of the chunk from its prefix sum p: x' = (T)p * eb2, the CPU's
// arithmetic; false when p is outside [-PMAX, PMAX] (a malformed stream).
template <typename T>
__device__ __forceinline__ bool store_value(typename Traits<T>::U p, T eb2, uint8_t* out, size_t i) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  const T x = static_cast<T>(static_cast<I>(p)) * eb2;
  U bits;
  memcpy(&bits, &x, sizeof(T));
  store_word<U>(out + sizeof(T) * i, bits);
  return static_cast<U>(p + kPMax) <= static_cast<U>(2 * kPMax);
}

// Record r's special value (raw bits, the fill value or -0) written over its
// element, which must have decoded to +0; returns the checks it fails.
template <typename U>
__device__ uint32_t patch_special(const uint8_t* o, size_t n, size_t r, U fill_bits, const OutlierLayout& l,
                                  const uint64_t* raw_rank, uint8_t* out) {
  if (!l.ok || r >= l.count) return 0;
  const uint8_t value = o[l.kind_at + r] & kValueMask;
  if (value == kValueQuantized) return 0;
  const uint64_t index = index_at(o, index_width_of(n), r);
  if (index >= n) return 0;  // reported by check_records
  const uint32_t bad = load_word<U>(out + sizeof(U) * index) != 0 ? kSpecialNotZero : 0;
  U bits;
  if (value == kValueRaw) {
    const uint64_t slot = raw_rank[r];
    if (slot >= l.raws) return bad;  // reported by check_counts
    bits = load_word<U>(o + l.raw_at + sizeof(U) * slot);
  } else {
    bits = value == kValueFill ? fill_bits : static_cast<U>(U{1} << (8 * sizeof(U) - 1));
  }
  store_word<U>(out + sizeof(U) * index, bits);
  return bad;
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    patch_specials(const uint8_t* o, size_t n, size_t capacity, U fill_bits, const OutlierLayout* layout,
                   const uint64_t* raw_rank, uint8_t* out, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const uint32_t bad = patch_special(o, n, r, fill_bits, *layout, raw_rank, out);
  if (bad) atomicOr(status, bad);
}

}  // namespace fz::lorenzo::cuda::detail
