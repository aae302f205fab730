// CUDA difference + negabinary coding (stream format: diffnb.hpp).
//
// Encoding is elementwise (each word needs only its predecessor, which is 0 at
// the start of every kBlockBytes block), so threads stride over all words.
// Decoding is a running sum restarting at every block: one thread block per
// block, a CUB block-wide inclusive scan over its words. Sums are taken mod
// 2^32 (or 2^64) and truncated, which equals the CPU's mod-2^W running sum.
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

template <typename T>
__global__ void encode_words(const uint8_t* in, size_t size, uint8_t* out) {
  constexpr size_t kWordsPerBlock = kBlockBytes / sizeof(T);
  const size_t words = size / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) {
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

template <typename T>
__global__ void __launch_bounds__(kThreads) decode_blocks(const uint8_t* in, size_t size, uint8_t* out) {
  using Sum = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
  constexpr unsigned kWordsPerBlock = kBlockBytes / sizeof(T);
  constexpr unsigned kItems = kWordsPerBlock / kThreads;
  using Scan = cub::BlockScan<Sum, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;

  const size_t begin = static_cast<size_t>(blockIdx.x) * kBlockBytes;
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

template <typename T>
void launch_encode(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t words = size / sizeof(T);
  size_t blocks = (words + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;  // the trailing bytes still need copying
  if (blocks > 65536) blocks = 65536;  // grid-stride beyond this
  encode_words<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, size, out);
}

template <typename T>
void launch_decode(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  decode_blocks<T><<<static_cast<unsigned>(block_count(size)), kThreads, 0, stream>>>(in, size, out);
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
