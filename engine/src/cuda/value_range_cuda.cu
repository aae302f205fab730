// NOA's value range on the GPU (value_range_cuda.hpp): one pass at memory
// speed, then one block that combines the per-block ranges.
//
// The pass: a grid of about one wave (kResidentBlocks blocks per SM) strides over
// the elements; element-aligned data is read in 16-byte vectors,
// kVectorsPerStep of them in flight per thread (enough bytes in flight to
// cover HBM latency), the few elements before the first 16-byte boundary and
// after the last whole vector one at a time. Each block writes its minimum
// and maximum key and whether it met the fill and the missing value to scratch; the second
// kernel reduces those. Keys, not values: min and max of integers are exact
// and need no floating-point state (no denormal flushing can enter).
#include "cuda/value_range_cuda.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/words_cuda.cuh"

namespace fz::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;
// Blocks resident per SM (4: 187 us for 512 MiB on the H200, 8: 177, a full
// SM at 32 registers). The launch bounds ask each architecture for as many as
// its SMs hold: 2048 threads on sm_80 and sm_90, 1536 on sm_86 and sm_89,
// 1024 on sm_75 (left to its own registers, the compiler took 40-53 and let
// only six blocks in on sm_90). The host sizes the grid with the sm_80/sm_90
// value (the branch without __CUDA_ARCH__).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900
constexpr unsigned kResidentBlocks = 8;
#elif __CUDA_ARCH__ >= 860
constexpr unsigned kResidentBlocks = 6;
#else
constexpr unsigned kResidentBlocks = 4;
#endif
constexpr unsigned kVectorsPerStep = 4;
constexpr size_t kMaxBlocks = 4096;                         // scratch holds this many block results
constexpr size_t kMinElementsPerBlock = size_t{kThreads} * 16;  // smaller chunks get fewer blocks

template <typename U>
constexpr U kSignBit = static_cast<U>(U{1} << (8 * sizeof(U) - 1));
template <typename U>
constexpr U kExponentBits = sizeof(U) == 4 ? static_cast<U>(0x7F800000u) : static_cast<U>(0x7FF0000000000000ull);

// One block's result; U = uint64_t for both widths so that the scratch layout
// does not depend on the width.
struct BlockRange {
  uint64_t low;   // smallest key met (~0: none)
  uint64_t high;  // largest key met (0: none)
  uint32_t fill;     // 1 when the fill value was met
  uint32_t missing;  // 1 when the missing value was met
};

// Integer min and max, spelled out: uint64_t is unsigned long here, and no
// overload resolution should decide which min a 64-bit key goes through.
template <typename U>
__device__ __forceinline__ U smaller(U a, U b) {
  return b < a ? b : a;
}
template <typename U>
__device__ __forceinline__ U larger(U a, U b) {
  return a < b ? b : a;
}

__device__ __forceinline__ uint32_t byte_swap(uint32_t v) { return __byte_perm(v, 0, 0x0123); }
__device__ __forceinline__ uint64_t byte_swap(uint64_t v) {
  return (static_cast<uint64_t>(byte_swap(static_cast<uint32_t>(v))) << 32) | byte_swap(static_cast<uint32_t>(v >> 32));
}

// The key of a float's bits: unsigned order of keys = numeric order of the
// (non-NaN) values. Negative values reverse (all bits flipped), positive ones
// move above them (sign bit set). Only NaN bits (0xFF..F, 0x7F..F) map to the
// keys 0 and ~0, and NaNs are never kept, so those two keys can mean "none".
template <typename U>
__host__ __device__ __forceinline__ U key_of(U bits) {
  return (bits & kSignBit<U>) ? static_cast<U>(~bits) : static_cast<U>(bits | kSignBit<U>);
}
template <typename U>
__host__ __device__ __forceinline__ U bits_of(U key) {
  return (key & kSignBit<U>) ? static_cast<U>(key ^ kSignBit<U>) : static_cast<U>(~key);
}

// Range of the elements a thread meets. Branch-free per element.
template <typename U, bool kSwap>
struct RangeVisitor {
  U fill;
  bool use_fill;
  U missing;
  bool use_missing;
  U low = static_cast<U>(~U{0});
  U high = 0;
  bool fill_seen = false;
  bool missing_seen = false;

  __device__ __forceinline__ void operator()(U bits) {
    if (kSwap) bits = byte_swap(bits);
    const bool is_fill = use_fill && bits == fill;
    const bool is_missing = use_missing && bits == missing;
    fill_seen |= is_fill;
    missing_seen |= is_missing;
    // Left out: the fill value, the missing value, +0.0 (possibly padding), NaN and inf.
    const bool keep = !is_fill && !is_missing && bits != 0 && (bits & kExponentBits<U>) != kExponentBits<U>;
    const U key = key_of(bits);
    low = smaller(low, keep ? key : static_cast<U>(~U{0}));
    high = larger(high, keep ? key : U{0});
  }
};

// Whether an element's bits, as stored, equal `target` (already in stored order).
template <typename U>
struct MatchVisitor {
  U target;
  bool found = false;
  __device__ __forceinline__ void operator()(U bits) { found |= bits == target; }
};

template <typename U, typename Visit>
__device__ __forceinline__ void visit_vector(const uint4& v, Visit& visit) {
  if constexpr (sizeof(U) == 4) {
    visit(v.x);
    visit(v.y);
    visit(v.z);
    visit(v.w);
  } else {
    visit((static_cast<uint64_t>(v.y) << 32) | v.x);  // little-endian words
    visit((static_cast<uint64_t>(v.w) << 32) | v.z);
  }
}

// Every one of the n elements at `data` once, spread over the grid.
template <typename U, typename Visit>
__device__ __forceinline__ void visit_elements(const uint8_t* data, size_t n, Visit& visit) {
  constexpr size_t kPerVector = 16 / sizeof(U);
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uintptr_t address = reinterpret_cast<uintptr_t>(data);
  // Elements that cannot be vector-read: before the first 16-byte boundary,
  // after the last whole vector, or all of them when not element-aligned.
  size_t head = n, vectors = 0;
  if (address % sizeof(U) == 0) {
    head = smaller<size_t>(n, static_cast<size_t>((16 - address % 16) % 16) / sizeof(U));
    vectors = (n - head) / kPerVector;
  }
  const size_t tail = head + vectors * kPerVector;
  for (size_t i = first; i < head; i += stride) visit(fz::cuda_detail::load_word<U>(data + i * sizeof(U)));
  for (size_t i = tail + first; i < n; i += stride) visit(fz::cuda_detail::load_word<U>(data + i * sizeof(U)));
  const uint4* body = reinterpret_cast<const uint4*>(data + head * sizeof(U));
  size_t v = first;
  for (; v + (kVectorsPerStep - 1) * stride < vectors; v += kVectorsPerStep * stride) {
    uint4 words[kVectorsPerStep];
#pragma unroll
    for (unsigned k = 0; k < kVectorsPerStep; ++k) words[k] = __ldcs(body + v + k * stride);  // read once
#pragma unroll
    for (unsigned k = 0; k < kVectorsPerStep; ++k) visit_vector<U>(words[k], visit);
  }
  for (; v < vectors; v += stride) visit_vector<U>(__ldcs(body + v), visit);
}

// Block-wide min, max and two ORs through warp shuffles and one shared slot per warp.
template <typename U>
__device__ __forceinline__ void reduce_block(U& low, U& high, bool& fill, bool& missing) {
  constexpr unsigned kWarps = kThreads / 32;
  __shared__ U lows[kWarps], highs[kWarps];
  __shared__ bool fills[kWarps], missings[kWarps];
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    low = smaller(low, __shfl_xor_sync(0xFFFFFFFFu, low, offset));
    high = larger(high, __shfl_xor_sync(0xFFFFFFFFu, high, offset));
  }
  fill = __any_sync(0xFFFFFFFFu, fill);
  missing = __any_sync(0xFFFFFFFFu, missing);
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    lows[warp] = low;
    highs[warp] = high;
    fills[warp] = fill;
    missings[warp] = missing;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < kWarps; ++w) {
      low = smaller(low, lows[w]);
      high = larger(high, highs[w]);
      fill = fill || fills[w];
      missing = missing || missings[w];
    }
  }
}

template <typename U, bool kSwap>
__global__ void __launch_bounds__(kThreads, kResidentBlocks)
    range_blocks(const uint8_t* data, size_t n, bool use_fill, U fill, bool use_missing, U missing,
                 BlockRange* blocks) {
  RangeVisitor<U, kSwap> visitor{fill, use_fill, missing, use_missing};
  visit_elements<U>(data, n, visitor);
  reduce_block<U>(visitor.low, visitor.high, visitor.fill_seen, visitor.missing_seen);
  if (threadIdx.x == 0) {
    // Widened so that "none" stays ~0 in the 64-bit slot.
    const uint64_t low = visitor.low == static_cast<U>(~U{0}) ? ~uint64_t{0} : visitor.low;
    blocks[blockIdx.x] = {low, visitor.high, visitor.fill_seen ? 1u : 0u, visitor.missing_seen ? 1u : 0u};
  }
}

template <typename U>
__global__ void __launch_bounds__(kThreads) finish_range(const BlockRange* blocks, size_t count, DeviceRange* result) {
  uint64_t low = ~uint64_t{0}, high = 0;
  bool fill = false, missing = false;
  for (size_t b = threadIdx.x; b < count; b += kThreads) {
    low = smaller(low, blocks[b].low);
    high = larger(high, blocks[b].high);
    fill = fill || blocks[b].fill != 0;
    missing = missing || blocks[b].missing != 0;
  }
  reduce_block<uint64_t>(low, high, fill, missing);
  if (threadIdx.x == 0) {
    const bool any = low <= high;  // only a kept element gives a key, and low <= high then
    DeviceRange r;
    r.min_bits = any ? bits_of(static_cast<U>(low)) : 0;
    r.max_bits = any ? bits_of(static_cast<U>(high)) : 0;
    r.any = any ? 1 : 0;
    r.has_fill = fill ? 1 : 0;
    r.has_missing = missing ? 1 : 0;
    *result = r;
  }
}

template <typename U>
__global__ void __launch_bounds__(kThreads, kResidentBlocks)
    match_blocks(const uint8_t* data, size_t n, U target, uint32_t* found) {
  MatchVisitor<U> visitor{target};
  visit_elements<U>(data, n, visitor);
  if (__syncthreads_or(visitor.found) && threadIdx.x == 0) *found = 1;  // the same word from any block
}

size_t blocks_for(size_t elements) {
  const size_t wanted = (elements + kMinElementsPerBlock - 1) / kMinElementsPerBlock;
  return std::max<size_t>(1, std::min(wanted, kMaxBlocks));
}

// About one wave of resident blocks on the current device, fewer for small data.
cudaError_t grid_for(size_t elements, unsigned& grid) {
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  const size_t wave = static_cast<size_t>(std::max(sms, 1)) * kResidentBlocks;
  grid = static_cast<unsigned>(std::min(blocks_for(elements), wave));
  return cudaSuccess;
}

template <typename U>
cudaError_t range_typed(const uint8_t* data, size_t n, bool big_endian, std::optional<uint64_t> fill,
                        std::optional<uint64_t> missing, DeviceRange* result, void* scratch, cudaStream_t stream) {
  auto* blocks = static_cast<BlockRange*>(scratch);
  unsigned grid = 0;
  if (n > 0) {
    const cudaError_t err = grid_for(n, grid);
    if (err != cudaSuccess) return err;
    const U fill_bits = static_cast<U>(fill.value_or(0));  // float32: its low 32 bits, as the CPU
    const U missing_bits = static_cast<U>(missing.value_or(0));
    // A missing value equal to the fill value is the fill value, as on the CPU.
    const bool use_missing = missing.has_value() && !(fill.has_value() && missing_bits == fill_bits);
    if (big_endian)
      range_blocks<U, true><<<grid, kThreads, 0, stream>>>(data, n, fill.has_value(), fill_bits, use_missing,
                                                            missing_bits, blocks);
    else
      range_blocks<U, false><<<grid, kThreads, 0, stream>>>(data, n, fill.has_value(), fill_bits, use_missing,
                                                             missing_bits, blocks);
    const cudaError_t launch = cudaGetLastError();
    if (launch != cudaSuccess) return launch;
  }
  finish_range<U><<<1, kThreads, 0, stream>>>(blocks, grid, result);
  return cudaGetLastError();
}

template <typename T, typename U>
double value_of(uint64_t bits) {
  const U narrow = static_cast<U>(bits);
  T x;
  std::memcpy(&x, &narrow, sizeof x);
  return static_cast<double>(x);
}

}  // namespace

size_t finite_range_scratch_bytes(size_t bytes, unsigned width) {
  const size_t elements = width == 4 || width == 8 ? bytes / width : 0;
  return (blocks_for(elements) * sizeof(BlockRange) + 255) / 256 * 256;
}

cudaError_t finite_range(const uint8_t* data, size_t bytes, unsigned width, bool big_endian,
                         std::optional<uint64_t> fill, std::optional<uint64_t> missing, DeviceRange* result,
                         void* scratch, cudaStream_t stream) {
  if (width != 4 && width != 8) return cudaErrorInvalidValue;
  const size_t n = bytes / width;
  return width == 4 ? range_typed<uint32_t>(data, n, big_endian, fill, missing, result, scratch, stream)
                    : range_typed<uint64_t>(data, n, big_endian, fill, missing, result, scratch, stream);
}

FiniteRange to_finite_range(const DeviceRange& range, unsigned width) {
  FiniteRange r;
  r.has_fill = range.has_fill != 0;
  r.has_missing = range.has_missing != 0;
  if (range.any == 0) return r;
  r.any = true;
  if (width == 4) {
    r.min = value_of<float, uint32_t>(range.min_bits);
    r.max = value_of<float, uint32_t>(range.max_bits);
  } else {
    r.min = value_of<double, uint64_t>(range.min_bits);
    r.max = value_of<double, uint64_t>(range.max_bits);
  }
  return r;
}

cudaError_t contains_element(const uint8_t* data, size_t bytes, unsigned width, bool big_endian, uint64_t bits,
                             uint32_t* found, cudaStream_t stream) {
  if (width != 4 && width != 8) return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(found, 0, sizeof(uint32_t), stream);
  if (err != cudaSuccess) return err;
  const size_t n = bytes / width;
  if (n == 0) return cudaSuccess;
  unsigned grid = 0;
  err = grid_for(n, grid);
  if (err != cudaSuccess) return err;
  // The pattern as stored, as the CPU compares it (float32: its low 32 bits).
  if (width == 4) {
    uint32_t target = static_cast<uint32_t>(bits);
    if (big_endian) target = __builtin_bswap32(target);
    match_blocks<uint32_t><<<grid, kThreads, 0, stream>>>(data, n, target, found);
  } else {
    const uint64_t target = big_endian ? __builtin_bswap64(bits) : bits;
    match_blocks<uint64_t><<<grid, kThreads, 0, stream>>>(data, n, target, found);
  }
  return cudaGetLastError();
}

}  // namespace fz::engine::cuda
