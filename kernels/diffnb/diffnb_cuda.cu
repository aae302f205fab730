// CUDA difference + negabinary coding (stream format: diffnb.hpp).
//
// Encoding is elementwise (each word needs only its predecessor, which is 0 at
// the start of every kBlockBytes block), so threads stride over all words;
// 16-byte aligned buffers go 16 bytes per thread (the predecessor of a
// vector's first word is the previous vector's last, an L1 hit).
// Decoding is a running sum restarting at every block: one thread block per
// block, a CUB block-wide scan. Full blocks of aligned buffers are staged in
// shared memory with coalesced 16-byte loads, each thread sums its 64
// contiguous bytes and the block scans the threads' totals; a partial last
// block or unaligned buffers scan word by word. Sums are taken mod 2^32 (or
// 2^64) and truncated, which equals the CPU's mod-2^W running sum.
#include "diffnb/diffnb_cuda.hpp"

#include <cub/block/block_scan.cuh>
#include <type_traits>

#include "common/blocks.hpp"
#include "common/words_cuda.cuh"

namespace fz::diffnb::cuda {
namespace {

constexpr unsigned kThreads = 256;

template <typename T>
constexpr T kNegabinaryMask = static_cast<T>(0xAAAAAAAAAAAAAAAAull);

// Words [first, size / sizeof(T)), first at a block start.
template <typename T>
__global__ void encode_words(const uint8_t* in, size_t size, size_t first, uint8_t* out) {
  constexpr size_t kWordsPerBlock = kBlockBytes / sizeof(T);
  const size_t words = size / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = first + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
    const T word = cuda_detail::load_word<T>(in + i * sizeof(T));
    const T previous = i % kWordsPerBlock == 0 ? T(0) : cuda_detail::load_word<T>(in + (i - 1) * sizeof(T));
    const T delta = static_cast<T>(word - previous);
    cuda_detail::store_word<T>(out + i * sizeof(T),
                               static_cast<T>(static_cast<T>(delta + kNegabinaryMask<T>) ^ kNegabinaryMask<T>));
  }
  // A trailing partial word (only at the very end) is copied unchanged.
  if (blockIdx.x == 0) {
    for (size_t i = words * sizeof(T) + threadIdx.x; i < size; i += blockDim.x) out[i] = in[i];
  }
}

// Word j (little-endian) of 16 bytes held as four 32-bit registers, and back.
template <typename T>
__device__ __forceinline__ T word_of(const uint32_t* r, unsigned j) {
  if constexpr (sizeof(T) == 8) return static_cast<T>(r[2 * j]) | (static_cast<T>(r[2 * j + 1]) << 32);
  else if constexpr (sizeof(T) == 4) return r[j];
  else return static_cast<T>(r[j * sizeof(T) / 4] >> (8 * (j * sizeof(T) % 4)));
}

template <typename T>
__device__ __forceinline__ void set_word(uint32_t* r, unsigned j, T v) {
  if constexpr (sizeof(T) == 8) {
    r[2 * j] = static_cast<uint32_t>(v);
    r[2 * j + 1] = static_cast<uint32_t>(v >> 32);
  } else if constexpr (sizeof(T) == 4) {
    r[j] = v;
  } else {
    constexpr uint32_t kMask = sizeof(T) == 2 ? 0xFFFFu : 0xFFu;
    const unsigned shift = 8 * (j * sizeof(T) % 4);
    r[j * sizeof(T) / 4] = (r[j * sizeof(T) / 4] & ~(kMask << shift)) | (static_cast<uint32_t>(v) << shift);
  }
}

// The 16-byte vectors [0, vectors) of full blocks (in and out 16-byte aligned).
template <typename T>
__global__ void __launch_bounds__(kThreads) encode_vectors(const uint8_t* in, size_t vectors, uint8_t* out) {
  constexpr unsigned kWords = 16 / sizeof(T);
  constexpr size_t kVectorsPerBlock = kBlockBytes / 16;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t v = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < vectors; v += stride) {
    const uint4 x = reinterpret_cast<const uint4*>(in)[v];
    uint32_t r[4] = {x.x, x.y, x.z, x.w};
    uint32_t o[4] = {0, 0, 0, 0};
    T previous = v % kVectorsPerBlock == 0 ? T(0) : *reinterpret_cast<const T*>(in + 16 * v - sizeof(T));
#pragma unroll
    for (unsigned j = 0; j < kWords; ++j) {
      const T word = word_of<T>(r, j);
      const T delta = static_cast<T>(word - previous);
      previous = word;
      set_word<T>(o, j, static_cast<T>(static_cast<T>(delta + kNegabinaryMask<T>) ^ kNegabinaryMask<T>));
    }
    reinterpret_cast<uint4*>(out)[v] = make_uint4(o[0], o[1], o[2], o[3]);
  }
}

// One full block (in and out 16-byte aligned) per thread block.
template <typename T>
__global__ void __launch_bounds__(kThreads) decode_full_blocks(const uint8_t* in, uint8_t* out) {
  using Sum = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
  using Scan = cub::BlockScan<Sum, kThreads>;
  constexpr unsigned kVectors = kBlockBytes / 16 / kThreads;  // 4: 64 contiguous bytes per thread
  constexpr unsigned kWords = 16 / sizeof(T);
  __shared__ uint4 staged[kBlockBytes / 16];
  __shared__ typename Scan::TempStorage scan_storage;
  const size_t begin = static_cast<size_t>(blockIdx.x) * kBlockBytes;
  const uint4* src = reinterpret_cast<const uint4*>(in + begin);
#pragma unroll
  for (unsigned i = 0; i < kVectors; ++i) {
    const unsigned v = i * kThreads + threadIdx.x;
    staged[cuda_detail::swizzled_vector<kVectors>(v)] = src[v];
  }
  __syncthreads();
  uint32_t r[4 * kVectors];
#pragma unroll
  for (unsigned i = 0; i < kVectors; ++i) {
    const uint4 x = staged[cuda_detail::swizzled_vector<kVectors>(threadIdx.x * kVectors + i)];
    r[4 * i] = x.x;
    r[4 * i + 1] = x.y;
    r[4 * i + 2] = x.z;
    r[4 * i + 3] = x.w;
  }
  // Running sums of this thread's words, then the block's prefix added.
  Sum sums[kVectors * kWords];
  Sum running = 0;
#pragma unroll
  for (unsigned j = 0; j < kVectors * kWords; ++j) {
    const T coded = word_of<T>(&r[4 * (j / kWords)], j % kWords);
    running += static_cast<T>(static_cast<T>(coded ^ kNegabinaryMask<T>) - kNegabinaryMask<T>);
    sums[j] = running;
  }
  Sum before = 0;
  Scan(scan_storage).ExclusiveSum(running, before);
#pragma unroll
  for (unsigned j = 0; j < kVectors * kWords; ++j) set_word<T>(&r[4 * (j / kWords)], j % kWords, static_cast<T>(sums[j] + before));
#pragma unroll
  for (unsigned i = 0; i < kVectors; ++i)
    staged[cuda_detail::swizzled_vector<kVectors>(threadIdx.x * kVectors + i)] =
        make_uint4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
  __syncthreads();
  uint4* dst = reinterpret_cast<uint4*>(out + begin);
#pragma unroll
  for (unsigned i = 0; i < kVectors; ++i) {
    const unsigned v = i * kThreads + threadIdx.x;
    dst[v] = staged[cuda_detail::swizzled_vector<kVectors>(v)];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) decode_blocks(const uint8_t* in, size_t size, size_t first_block,
                                                          uint8_t* out) {
  using Sum = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
  constexpr unsigned kWordsPerBlock = kBlockBytes / sizeof(T);
  constexpr unsigned kItems = kWordsPerBlock / kThreads;
  using Scan = cub::BlockScan<Sum, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;

  const size_t begin = (first_block + blockIdx.x) * kBlockBytes;
  const unsigned length = static_cast<unsigned>(size - begin < kBlockBytes ? size - begin : kBlockBytes);
  const unsigned words = length / sizeof(T);
  const uint8_t* src = in + begin;
  uint8_t* dst = out + begin;

  // Thread t owns words [t*kItems, (t+1)*kItems): a blocked arrangement, as
  // the scan expects. Words past the block's end count as 0.
  Sum deltas[kItems];
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const unsigned w = threadIdx.x * kItems + j;
    T delta = 0;
    if (w < words) {
      const T coded = cuda_detail::load_word<T>(src + w * sizeof(T));
      delta = static_cast<T>(static_cast<T>(coded ^ kNegabinaryMask<T>) - kNegabinaryMask<T>);
    }
    deltas[j] = delta;
  }
  Scan(scan_storage).InclusiveSum(deltas, deltas);
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const unsigned w = threadIdx.x * kItems + j;
    if (w < words) cuda_detail::store_word<T>(dst + w * sizeof(T), static_cast<T>(deltas[j]));
  }
  for (unsigned i = words * sizeof(T) + threadIdx.x; i < length; i += kThreads) dst[i] = src[i];
}

bool aligned16(const uint8_t* a, const uint8_t* b) {
  return ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
}

unsigned grid_for(size_t items) {
  size_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;
  return static_cast<unsigned>(blocks > 65536 ? 65536 : blocks);  // grid-stride beyond this
}

template <typename T>
void launch_encode(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t full = aligned16(in, out) ? size / kBlockBytes * kBlockBytes : 0;
  if (full > 0) encode_vectors<T><<<grid_for(full / 16), kThreads, 0, stream>>>(in, full / 16, out);
  const size_t words = size / sizeof(T), first = full / sizeof(T);
  // The rest word by word (launched even when no word is left: the trailing bytes still need copying).
  if (words > first || size > full) encode_words<T><<<grid_for(words - first), kThreads, 0, stream>>>(in, size, first, out);
}

template <typename T>
void launch_decode(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t blocks = block_count(size);
  const size_t full = aligned16(in, out) ? size / kBlockBytes : 0;
  if (full > 0) decode_full_blocks<T><<<static_cast<unsigned>(full), kThreads, 0, stream>>>(in, out);
  if (blocks > full)
    decode_blocks<T><<<static_cast<unsigned>(blocks - full), kThreads, 0, stream>>>(in, size, full, out);
}

bool valid_width(unsigned width) { return width == 1 || width == 2 || width == 4 || width == 8; }

}  // namespace

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (!valid_width(width)) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  switch (width) {
    case 1: launch_encode<uint8_t>(in, size, out, stream); break;
    case 2: launch_encode<uint16_t>(in, size, out, stream); break;
    case 4: launch_encode<uint32_t>(in, size, out, stream); break;
    default: launch_encode<uint64_t>(in, size, out, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (!valid_width(width)) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  switch (width) {
    case 1: launch_decode<uint8_t>(in, size, out, stream); break;
    case 2: launch_decode<uint16_t>(in, size, out, stream); break;
    case 4: launch_decode<uint32_t>(in, size, out, stream); break;
    default: launch_decode<uint64_t>(in, size, out, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace fz::diffnb::cuda
