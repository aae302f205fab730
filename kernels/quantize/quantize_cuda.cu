// CUDA implementation of the direct quantizer (stream format: quantize.hpp),
// host interface in quantize/quantize_cuda.hpp.
//
// Every element is coded on its own by exactly the CPU reference's rule
// (encode_abs_element / encode_rel_block of encode_cpu.cpp), so a code never
// depends on the thread that made it. Exactness: the build has -fmad=false,
// and the arithmetic that must be one IEEE rounding is written with the _rn
// intrinsics anyway (no contraction can change it); std::round is CUDA's
// round()/roundf(), exact and half away from zero; the only fused operation is
// the explicit fma() of the REL tie test, as on the CPU.
//
// Grid: one thread block per 16 KiB block of the input (4096 float32 or 2048
// float64 elements), the CPU's block grid. Encoding writes the codes and each
// block's outlier count; an exclusive scan of the counts gives each block's
// first outlier; blocks with outliers then rank their zero codes in element
// order (a block-wide scan) and copy the raw bits. Decoding mirrors it: values
// and per-block zero counts first, the scan, then the outliers placed over the
// zero codes (only when their total matches the outlier stream).
// The per-element rules: elements_cuda.cuh and quantize_rules.hpp.
#include "quantize/quantize_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/blocks.hpp"
#include "common/one_block_scan_cuda.cuh"
#include "common/words_cuda.cuh"
#include "quantize/quantize_plan.hpp"
#include "quantize/elements_cuda.cuh"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize::cuda {
namespace {

using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

using namespace device;  // the element rules (elements_cuda.cuh)

// ---- encode ----------------------------------------------------------------

template <typename T, bool kRel>
__global__ void __launch_bounds__(kThreads)
    encode_codes(const uint8_t* __restrict__ in, uint64_t n, uint8_t* __restrict__ codes, uint64_t* counts,
                 DevicePlan<T> plan, bool aligned) {
  using U = UintOf<T>;
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const unsigned len = block_elements(n, kBlockElements<T>);
  const size_t base = static_cast<size_t>(blockIdx.x) * kBlockBytes;
  unsigned zeros = 0;
  auto code_one = [&](unsigned i) {
    const U bits = load_word<U>(in + base + static_cast<size_t>(i) * sizeof(T));
    const U code = kRel ? encode_rel_element<T>(bits, plan) : encode_abs_element<T>(bits, plan);
    store_word<U>(codes + base + static_cast<size_t>(i) * sizeof(T), code);
    zeros += code == 0;
  };
  if (len == kBlockElements<T> && aligned) {
    // A full block of aligned words: all of this thread's loads are issued
    // before the first is used (a load_word per element would wait for each).
    const U* src = reinterpret_cast<const U*>(in + base);
    U* dst = reinterpret_cast<U*>(codes + base);
    U bits[kPerThread<T>];
#pragma unroll
    for (unsigned k = 0; k < kPerThread<T>; ++k) bits[k] = src[threadIdx.x + k * kThreads];
#pragma unroll
    for (unsigned k = 0; k < kPerThread<T>; ++k) {
      const U code = kRel ? encode_rel_element<T>(bits[k], plan) : encode_abs_element<T>(bits[k], plan);
      dst[threadIdx.x + k * kThreads] = code;
      zeros += code == 0;
    }
  } else {
    for (unsigned i = threadIdx.x; i < len; i += kThreads) code_one(i);
  }
  const unsigned total = Reduce(reduce_storage).Sum(zeros);
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// For a block with zero codes: thread t takes elements [t*K, t*K + K) in order,
// ranks its zero codes by a block-wide exclusive scan, and moves each one's
// word: kGather (encode) in[i] -> outliers[first + rank]; else (decode)
// outliers[first + rank] -> out[i]. Decoding moves nothing unless the zero
// codes add up to `expected` (then every index is inside the outlier stream).
template <typename T, bool kGather>
__device__ void move_block_outliers(uint64_t block, const uint8_t* codes, uint64_t n, const uint64_t* counts,
                                    const uint64_t* offsets, uint64_t blocks, uint64_t expected, const uint8_t* src,
                                    uint8_t* dst) {
  using U = UintOf<T>;
  using Scan = cub::BlockScan<unsigned, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  if (counts[block] == 0) return;
  if (!kGather && offsets[blocks] != expected) return;
  const unsigned len = block_elements(n, kBlockElements<T>, block);
  const size_t base = static_cast<size_t>(block) * kBlockBytes;
  const unsigned begin = threadIdx.x * kPerThread<T>;
  const unsigned end = begin + kPerThread<T> < len ? begin + kPerThread<T> : len;
  unsigned mine = 0;
  for (unsigned i = begin; i < end; ++i) mine += load_word<U>(codes + base + static_cast<size_t>(i) * sizeof(T)) == 0;
  unsigned rank = 0;
  Scan(scan_storage).ExclusiveSum(mine, rank);
  const uint64_t first = offsets[block];
  for (unsigned i = begin; i < end && mine > 0; ++i) {
    const size_t at = base + static_cast<size_t>(i) * sizeof(T);
    if (load_word<U>(codes + at) != 0) continue;
    const size_t slot = static_cast<size_t>(first + rank) * sizeof(T);
    if (kGather)
      store_word<U>(dst + slot, load_word<U>(src + at));
    else
      store_word<U>(dst + at, load_word<U>(src + slot));
    ++rank;
    --mine;
  }
}

template <typename T, bool kGather>
__global__ void __launch_bounds__(kThreads)
    move_outliers(const uint8_t* codes, uint64_t n, const uint64_t* counts, const uint64_t* offsets,
                  uint64_t blocks, uint64_t expected, const uint8_t* src, uint8_t* dst, uint64_t capacity) {
  // Gathering (encode): nothing when the outliers exceed their room (the
  // stream's length, already written, says so).
  if (kGather && offsets[blocks] * sizeof(T) > capacity) return;
  move_block_outliers<T, kGather>(blockIdx.x, codes, n, counts, offsets, blocks, expected, src, dst);
}

struct ParamsBytes {
  uint8_t b[kParamsBytes];
};

__global__ void finish_encode(ParamsBytes p, uint8_t* params, uint64_t codes_bytes, const uint64_t* total,
                              uint64_t fixed_outliers, unsigned width, uint64_t* stream_sizes) {
  for (unsigned i = threadIdx.x; i < kParamsBytes; i += blockDim.x) params[i] = p.b[i];
  if (threadIdx.x == 0) {
    stream_sizes[0] = codes_bytes;
    stream_sizes[1] = total != nullptr ? *total * width : fixed_outliers;
  }
}

// ---- decode ----------------------------------------------------------------

enum class Kind { kAbs, kRel, kConstant };

template <typename T, Kind kKind>
__device__ void decode_block_values(uint64_t block, const uint8_t* __restrict__ codes, uint64_t n,
                                    uint8_t* __restrict__ out, uint64_t* counts, uint32_t* status, T step,
                                    UintOf<T> constant_bits, bool aligned) {
  using U = UintOf<T>;
  using D = DTraits<T>;
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const unsigned len = block_elements(n, kBlockElements<T>, block);
  const size_t base = static_cast<size_t>(block) * kBlockBytes;
  unsigned zeros = 0;
  uint32_t flags = 0;
  auto decode_one = [&](unsigned i, U code) {
    const size_t at = base + static_cast<size_t>(i) * sizeof(T);
    if (code == 0) {
      ++zeros;
      return;
    }
    U bits;
    if (kKind == Kind::kAbs) {
      const uint64_t z = static_cast<U>(code - 1);
      if (z > kAbsMaxZigzag<T>) flags |= kCodeOutOfRange;
      bits = D::to_bits(D::mul(static_cast<T>(unzigzag(z)), step));
    } else if (kKind == Kind::kConstant) {
      if (code != 1) flags |= kCodeOutOfRange;
      bits = constant_bits;
    } else if (code <= 2) {
      bits = code == 1 ? U{0} : kSignBit<T>;
    } else {
      const uint64_t c = static_cast<uint64_t>(code) - 3;
      const uint64_t z = c >> 1;
      T r = T(0);
      if (z > kRelMaxZigzag<T>)
        flags |= kCodeOutOfRange;
      else if (!pw(D::mul(static_cast<T>(unzigzag(z)), step), r))
        flags |= kCodeLeavesExponentRange;
      bits = D::to_bits(r) | ((c & 1) ? kSignBit<T> : U{0});
    }
    store_word<U>(out + at, bits);
  };
  if (len == kBlockElements<T> && aligned) {
    // As encode_codes: every load issued before the first is used.
    const U* src = reinterpret_cast<const U*>(codes + base);
    U word[kPerThread<T>];
#pragma unroll
    for (unsigned k = 0; k < kPerThread<T>; ++k) word[k] = src[threadIdx.x + k * kThreads];
#pragma unroll
    for (unsigned k = 0; k < kPerThread<T>; ++k) decode_one(threadIdx.x + k * kThreads, word[k]);
  } else {
    for (unsigned i = threadIdx.x; i < len; i += kThreads)
      decode_one(i, load_word<U>(codes + base + static_cast<size_t>(i) * sizeof(T)));
  }
  if (flags != 0) atomicOr(status, flags);  // an OR: the same word whatever the order
  const unsigned total = Reduce(reduce_storage).Sum(zeros);
  if (threadIdx.x == 0) counts[block] = total;
}

template <typename T, Kind kKind>
__global__ void __launch_bounds__(kThreads)
    decode_values(const uint8_t* __restrict__ codes, uint64_t n, uint8_t* __restrict__ out, uint64_t* counts,
                  uint32_t* status, T step, UintOf<T> constant_bits, bool aligned) {
  decode_block_values<T, kKind>(blockIdx.x, codes, n, out, counts, status, step, constant_bits, aligned);
}

// The whole decode of a stream of at most kOneCtaBlocks blocks (128 KiB) in
// one launch of one thread block: the same per-block steps in turn (values,
// their zero-code counts, the offsets, the outliers, the count check) where
// the general path makes five launches (about 4 us of host time each, most
// of a small chunk's decode). Same bytes, same status.
constexpr uint64_t kOneCtaBlocks = 8;

template <typename T, Kind kKind>
__global__ void __launch_bounds__(kThreads)
    decode_one_cta(const uint8_t* __restrict__ codes, uint64_t n, uint64_t blocks, uint8_t* __restrict__ out,
                   uint64_t* counts, uint64_t* offsets, uint32_t* status, T step, UintOf<T> constant_bits,
                   bool aligned, uint64_t expected, const uint8_t* outliers) {
  if (threadIdx.x == 0) *status = 0;  // as set_status: before any block ORs its flags in
  __syncthreads();
  for (uint64_t b = 0; b < blocks; ++b) {
    decode_block_values<T, kKind>(b, codes, n, out, counts, status, step, constant_bits, aligned);
    __syncthreads();  // shared storage is reused
  }
  if (threadIdx.x == 0) {
    uint64_t at = 0;
    for (uint64_t b = 0; b < blocks; ++b) offsets[b] = at, at += counts[b];
    offsets[blocks] = at;
  }
  __syncthreads();
  for (uint64_t b = 0; b < blocks; ++b) {
    move_block_outliers<T, false>(b, codes, n, counts, offsets, blocks, expected, outliers, out);
    __syncthreads();
  }
  if (threadIdx.x == 0 && offsets[blocks] != expected) atomicOr(status, kOutlierCountMismatch);  // as finish_decode
}

__global__ void set_status(uint32_t* status, uint32_t flags) { *status = flags; }

__global__ void finish_decode(const uint64_t* total, uint64_t expected, uint32_t* status) {
  if (*total != expected) *status |= kOutlierCountMismatch;
}

// ---- scratch ---------------------------------------------------------------

constexpr size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

struct Scratch {
  size_t blocks = 0;
  size_t counts = 0, offsets = 0, temp = 0, temp_bytes = 0, total = 0;
};

// counts: blocks + 1 words (the last 0), offsets: their exclusive scan
// (offsets[blocks] = the total), then cub's temporary storage.
Scratch scratch_layout(size_t bytes) {
  Scratch s;
  s.blocks = block_count(bytes);
  const size_t words = (s.blocks + 1) * sizeof(uint64_t);
  s.counts = 0;
  s.offsets = align_up(words);
  s.temp = s.offsets + align_up(words);
  size_t temp_bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, static_cast<uint64_t*>(nullptr),
                                static_cast<uint64_t*>(nullptr), static_cast<int64_t>(s.blocks + 1));
  s.temp_bytes = temp_bytes;
  s.total = s.temp + align_up(temp_bytes > 0 ? temp_bytes : 1);
  return s;
}

// Zeroes counts[blocks] and scans the counts into offsets.
cudaError_t scan_counts(const Scratch& s, void* scratch, cudaStream_t stream) {
  uint8_t* base = static_cast<uint8_t*>(scratch);
  auto* counts = reinterpret_cast<uint64_t*>(base + s.counts);
  auto* offsets = reinterpret_cast<uint64_t*>(base + s.offsets);
  if (s.blocks <= cuda_detail::kOneBlockScanItems) {  // offsets[blocks] = the total, counts[blocks] unused
    cuda_detail::OneBlockScans scans;
    scans.in[0] = counts;
    scans.out[0] = offsets;
    scans.count = 1;
    cuda_detail::exclusive_sums_one_block<<<1, cuda_detail::kOneBlockScanThreads, 0, stream>>>(scans, s.blocks, true);
    return cudaGetLastError();
  }
  cudaError_t err = cudaMemsetAsync(counts + s.blocks, 0, sizeof(uint64_t), stream);
  if (err != cudaSuccess) return err;
  size_t temp_bytes = s.temp_bytes;
  return cub::DeviceScan::ExclusiveSum(base + s.temp, temp_bytes, counts, offsets, static_cast<int64_t>(s.blocks + 1),
                                       stream);
}

// The CPU encoder's config rule (quantize_rules.hpp); NOA needs the data's
// range and is encoded on the CPU.
bool valid_config(size_t in_size, const Config& config) {
  return config.mode != Mode::kNoa && rules::config_problem(in_size, config).empty();
}

template <typename T>
T host_from_bits(uint64_t bits) {
  T v;
  if constexpr (sizeof(T) == 4) {
    const auto u = static_cast<uint32_t>(bits);
    std::memcpy(&v, &u, sizeof v);
  } else {
    std::memcpy(&v, &bits, sizeof v);
  }
  return v;
}

template <typename T>
cudaError_t encode_typed(const uint8_t* in, size_t in_size, const Config& config, const detail::HostPlan& plan,
                         uint8_t* codes, const std::function<OutlierRoom()>& outlier_room,
                         const ParamsBytes& params_bytes, uint8_t* params, uint64_t* stream_sizes, void* scratch,
                         cudaStream_t stream) {
  using U = UintOf<T>;
  const Scratch s = scratch_layout(in_size);
  uint8_t* base = static_cast<uint8_t*>(scratch);
  auto* counts = reinterpret_cast<uint64_t*>(base + s.counts);
  auto* offsets = reinterpret_cast<uint64_t*>(base + s.offsets);
  const uint64_t n = in_size / sizeof(T);
  DevicePlan<T> dp;
  dp.step = host_from_bits<T>(plan.step_bits);
  dp.inverse = host_from_bits<T>(plan.inverse_bits);
  dp.check = plan.check;
  dp.has_fill = config.fill.has_value();
  dp.fill = dp.has_fill ? static_cast<U>(*config.fill) : U{0};
  if (s.blocks > 0) {
    const unsigned grid = static_cast<unsigned>(s.blocks);
    const bool aligned = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(codes)) % sizeof(T)) == 0;
    if (config.mode == Mode::kRel)
      encode_codes<T, true><<<grid, kThreads, 0, stream>>>(in, n, codes, counts, dp, aligned);
    else
      encode_codes<T, false><<<grid, kThreads, 0, stream>>>(in, n, codes, counts, dp, aligned);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  cudaError_t err = scan_counts(s, scratch, stream);
  if (err != cudaSuccess) return err;
  finish_encode<<<1, 64, 0, stream>>>(params_bytes, params, in_size, offsets + s.blocks, 0, sizeof(T), stream_sizes);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const OutlierRoom room = outlier_room();
  if (s.blocks > 0) {
    move_outliers<T, true><<<static_cast<unsigned>(s.blocks), kThreads, 0, stream>>>(
        codes, n, counts, offsets, s.blocks, 0, in, room.data, room.capacity);
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

template <typename T>
cudaError_t decode_typed(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size, const Params& p,
                         uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  using U = UintOf<T>;
  const uint64_t n = p.count;
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const Scratch s = scratch_layout(bytes);
  uint8_t* base = static_cast<uint8_t*>(scratch);
  auto* counts = reinterpret_cast<uint64_t*>(base + s.counts);
  auto* offsets = reinterpret_cast<uint64_t*>(base + s.offsets);
  const T step = host_from_bits<T>(p.step_bits);
  const U constant = static_cast<U>(p.step_bits);
  const uint64_t expected = outliers_size / sizeof(T);
  const bool aligned = ((reinterpret_cast<uintptr_t>(codes) | reinterpret_cast<uintptr_t>(out)) % sizeof(T)) == 0;
  // The stream's kind as a template argument: launch(std::integral_constant<Kind, K>).
  auto with_kind = [&](auto launch) {
    if (p.method == Method::kConstant)
      launch(std::integral_constant<Kind, Kind::kConstant>{});
    else if (p.mode == Mode::kRel)
      launch(std::integral_constant<Kind, Kind::kRel>{});
    else
      launch(std::integral_constant<Kind, Kind::kAbs>{});
  };
  if (s.blocks > 0 && s.blocks <= kOneCtaBlocks) {
    with_kind([&](auto kind) {
      decode_one_cta<T, decltype(kind)::value><<<1, kThreads, 0, stream>>>(
          codes, n, s.blocks, out, counts, offsets, status, step, constant, aligned, expected, outliers);
    });
    return cudaGetLastError();
  }
  set_status<<<1, 1, 0, stream>>>(status, 0);
  if (s.blocks > 0) {
    with_kind([&](auto kind) {
      decode_values<T, decltype(kind)::value><<<static_cast<unsigned>(s.blocks), kThreads, 0, stream>>>(
          codes, n, out, counts, status, step, constant, aligned);
    });
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  cudaError_t err = scan_counts(s, scratch, stream);
  if (err != cudaSuccess) return err;
  if (s.blocks > 0) {
    move_outliers<T, false><<<static_cast<unsigned>(s.blocks), kThreads, 0, stream>>>(
        codes, n, counts, offsets, s.blocks, expected, outliers, out, ~uint64_t{0});
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  finish_decode<<<1, 1, 0, stream>>>(offsets + s.blocks, expected, status);
  return cudaGetLastError();
}

}  // namespace

Method encode_method(const Config& config) {
  if (!valid_config(0, config)) return Method::kLossless;
  return detail::host_plan(config.width, config.mode, config.bound).method;
}

size_t encode_scratch_bytes(size_t in_size, unsigned /*width*/) { return scratch_layout(in_size).total; }

cudaError_t encode(const uint8_t* in, size_t in_size, const Config& config, uint8_t* codes, uint8_t* outliers,
                   uint8_t* params, uint64_t* stream_sizes, void* scratch, cudaStream_t stream) {
  return encode_with_outlier_room(
      in, in_size, config, codes, [&] { return OutlierRoom{outliers, in_size}; }, params, stream_sizes, scratch,
      stream);
}

cudaError_t encode_with_outlier_room(const uint8_t* in, size_t in_size, const Config& config, uint8_t* codes,
                                     const std::function<OutlierRoom()>& outlier_room, uint8_t* params,
                                     uint64_t* stream_sizes, void* scratch, cudaStream_t stream) {
  if (!valid_config(in_size, config)) return cudaErrorInvalidValue;
  const detail::HostPlan plan = detail::host_plan(config.width, config.mode, config.bound);
  const uint64_t count = in_size / config.width;
  ParamsBytes pb;
  detail::write_params_bytes(pb.b, config.mode, config.width, plan.method, count,
                             plan.method == Method::kLossless ? 0 : plan.step_bits, config.bound,
                             plan.method == Method::kQuantized ? plan.enforced : 0.0);
  if (plan.method == Method::kLossless) {
    finish_encode<<<1, 64, 0, stream>>>(pb, params, 0, nullptr, in_size, config.width, stream_sizes);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    const OutlierRoom room = outlier_room();
    if (in_size > 0 && in_size <= room.capacity)
      return cudaMemcpyAsync(room.data, in, in_size, cudaMemcpyDeviceToDevice, stream);
    return cudaSuccess;
  }
  if (config.width == 4)
    return encode_typed<float>(in, in_size, config, plan, codes, outlier_room, pb, params, stream_sizes, scratch,
                               stream);
  return encode_typed<double>(in, in_size, config, plan, codes, outlier_room, pb, params, stream_sizes, scratch,
                              stream);
}

size_t decode_scratch_bytes(const Params& params) {
  if ((params.width != 4 && params.width != 8) || params.count > SIZE_MAX / params.width) return 256;
  return scratch_layout(static_cast<size_t>(params.count) * params.width).total;
}

cudaError_t decode(const uint8_t* codes, size_t codes_size, const uint8_t* outliers, size_t outliers_size,
                   const Params& params, uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (params.width != 4 && params.width != 8) return cudaErrorInvalidValue;
  if (static_cast<unsigned>(params.method) > 2 || static_cast<unsigned>(params.mode) > 2) return cudaErrorInvalidValue;
  if (params.count > SIZE_MAX / params.width) return cudaErrorInvalidValue;
  const size_t bytes = static_cast<size_t>(params.count) * params.width;
  uint32_t flags = 0;
  if (params.method == Method::kLossless) {
    if (codes_size != 0) flags |= kCodesSizeMismatch;
    if (outliers_size != bytes) flags |= kOutliersSizeMismatch;
  } else {
    if (codes_size != bytes) flags |= kCodesSizeMismatch;
    if (outliers_size % params.width != 0) flags |= kOutliersSizeMismatch;
  }
  if (flags != 0 || params.method == Method::kLossless) {
    set_status<<<1, 1, 0, stream>>>(status, flags);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess || flags != 0) return err;  // inconsistent sizes: nothing else is read
    if (bytes > 0) return cudaMemcpyAsync(out, outliers, bytes, cudaMemcpyDeviceToDevice, stream);
    return cudaSuccess;
  }
  // decode_typed sets the status word itself.
  if (params.width == 4) return decode_typed<float>(codes, outliers, outliers_size, params, out, status, scratch, stream);
  return decode_typed<double>(codes, outliers, outliers_size, params, out, status, scratch, stream);
}

}  // namespace fz::quantize::cuda
