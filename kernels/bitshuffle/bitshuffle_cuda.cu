// CUDA bit-shuffle (stream format: bitshuffle.hpp). One thread block codes one
// kBlockBytes block: it stages the block in shared memory (coalesced loads),
// transposes 8x8 bit matrices there exactly as the CPU does (byte plane b,
// group g of 8 words), and writes the result back with coalesced stores.
#include "bitshuffle/bitshuffle_cuda.hpp"

#include "common/blocks.hpp"
#include "common/words_cuda.cuh"

namespace fz::bitshuffle::cuda {
namespace {

constexpr unsigned kThreads = 256;

// The CPU's transpose_bits: the 8x8 bit matrix of row bytes is transposed
// (bit j of byte r becomes bit r of byte j); its own inverse.
__device__ __forceinline__ uint64_t transpose_bits(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  return x;
}

// Encode: the 8 bytes b of words 8g..8g+7 (a row each) become byte g of
// planes 8b..8b+7. Decode is the same matrix read from the planes and
// scattered back to the words.
template <unsigned W, bool kEncode>
__global__ void __launch_bounds__(kThreads) code_blocks(const uint8_t* in, size_t size, uint8_t* out) {
  __shared__ __align__(16) uint8_t source[kBlockBytes];
  __shared__ __align__(16) uint8_t coded[kBlockBytes];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kBlockBytes;
  const unsigned length = static_cast<unsigned>(size - begin < kBlockBytes ? size - begin : kBlockBytes);
  const unsigned words = length / W;
  const unsigned transposed = words - words % 8;  // m in bitshuffle.hpp
  const unsigned plane = transposed / 8;          // bytes per bit plane

  cuda_detail::block_copy_bytes(in + begin, source, length);
  __syncthreads();
  for (unsigned unit = threadIdx.x; unit < W * plane; unit += kThreads) {
    const unsigned b = unit / plane;
    const unsigned g = unit % plane;
    uint64_t x = 0;
    if constexpr (kEncode) {
#pragma unroll
      for (unsigned j = 0; j < 8; ++j) x |= uint64_t{source[(8 * g + j) * W + b]} << (8 * j);
      x = transpose_bits(x);
#pragma unroll
      for (unsigned r = 0; r < 8; ++r) coded[(8 * b + r) * plane + g] = static_cast<uint8_t>(x >> (8 * r));
    } else {
#pragma unroll
      for (unsigned r = 0; r < 8; ++r) x |= uint64_t{source[(8 * b + r) * plane + g]} << (8 * r);
      x = transpose_bits(x);
#pragma unroll
      for (unsigned j = 0; j < 8; ++j) coded[(8 * g + j) * W + b] = static_cast<uint8_t>(x >> (8 * j));
    }
  }
  // Bytes after the transposed words pass through unchanged.
  for (unsigned i = transposed * W + threadIdx.x; i < length; i += kThreads) coded[i] = source[i];
  __syncthreads();
  cuda_detail::block_copy_bytes(coded, out + begin, length);
}

template <bool kEncode>
cudaError_t launch(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (width != 1 && width != 2 && width != 4 && width != 8) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(block_count(size)));
  switch (width) {
    case 1: code_blocks<1, kEncode><<<grid, kThreads, 0, stream>>>(in, size, out); break;
    case 2: code_blocks<2, kEncode><<<grid, kThreads, 0, stream>>>(in, size, out); break;
    case 4: code_blocks<4, kEncode><<<grid, kThreads, 0, stream>>>(in, size, out); break;
    default: code_blocks<8, kEncode><<<grid, kThreads, 0, stream>>>(in, size, out); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  return launch<true>(in, size, width, out, stream);
}

cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  return launch<false>(in, size, width, out, stream);
}

}  // namespace fz::bitshuffle::cuda
