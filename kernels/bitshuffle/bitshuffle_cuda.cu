// CUDA bit-shuffle (stream format: bitshuffle.hpp).
//
// Full 16 KiB blocks of 16-byte aligned buffers (all but the last block of a
// stage buffer, which the pool aligns) take the fast kernels: one thread owns
// 4 consecutive groups of 8 words (32 words), so for every byte position b it
// holds four 8x8 bit matrices and writes byte g..g+3 of planes 8b..8b+7 as one
// 32-bit word each. The word side goes through shared memory with 16-byte
// accesses (coalesced in global memory, swizzled against bank conflicts); the
// plane side is already coalesced (consecutive threads, consecutive words).
// The per-unit transform is bitshuffle_block_cuda.cuh's, which kernels fusing
// the bit-shuffle with the next stage share. A partial last block, or buffers at other
// alignments, take the general kernel: a block staged byte by byte in shared
// memory, one 8x8 matrix per thread and step, exactly as the CPU does.
#include "bitshuffle/bitshuffle_cuda.hpp"

#include "bitshuffle/bitshuffle_block_cuda.cuh"
#include "common/blocks.hpp"
#include "common/words_cuda.cuh"

namespace fz::bitshuffle::cuda {
namespace {

constexpr unsigned kThreads = 256;

using namespace cuda_block;

// ---- full aligned blocks ----------------------------------------------------

template <unsigned W>
__global__ void __launch_bounds__(Full<W>::kUnits) encode_full(const uint8_t* in, uint8_t* out) {
  using F = Full<W>;
  __shared__ uint4 staged[kBlockBytes / 16];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kBlockBytes;
  const uint4* src = reinterpret_cast<const uint4*>(in + begin);
#pragma unroll
  for (unsigned i = 0; i < F::kVectors; ++i) {
    const unsigned v = i * F::kUnits + threadIdx.x;
    staged[swizzle<W>(v)] = src[v];
  }
  __syncthreads();
  uint8_t* dst = out + begin;
  encode_unit<W, 4>(
      threadIdx.x, [&](unsigned v) { return staged[swizzle<W>(v)]; },
      [&](unsigned at, uint32_t x) { *reinterpret_cast<uint32_t*>(dst + at) = x; });
}

template <unsigned W>
__global__ void __launch_bounds__(Full<W>::kUnits) decode_full(const uint8_t* in, uint8_t* out) {
  using F = Full<W>;
  __shared__ uint4 staged[kBlockBytes / 16];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kBlockBytes;
  const uint8_t* src = in + begin;
  decode_unit<W, 4>(
      threadIdx.x, [&](unsigned at) { return *reinterpret_cast<const uint32_t*>(src + at); },
      [&](unsigned v, uint4 x) { staged[swizzle<W>(v)] = x; });
  __syncthreads();
  uint4* dst = reinterpret_cast<uint4*>(out + begin);
#pragma unroll
  for (unsigned i = 0; i < F::kVectors; ++i) {
    const unsigned v = i * F::kUnits + threadIdx.x;
    dst[v] = staged[swizzle<W>(v)];
  }
}

// ---- any block, any alignment -------------------------------------------------

template <unsigned W, bool kEncode>
__global__ void __launch_bounds__(kThreads) code_blocks(const uint8_t* in, size_t size, size_t first_block,
                                                        uint8_t* out) {
  __shared__ __align__(16) uint8_t source[kBlockBytes];
  __shared__ __align__(16) uint8_t coded[kBlockBytes];
  const size_t begin = (first_block + blockIdx.x) * kBlockBytes;
  const unsigned length = static_cast<unsigned>(size - begin < kBlockBytes ? size - begin : kBlockBytes);
  code_any_block<W, kEncode>(in + begin, length, out + begin, source, coded);
}

template <unsigned W, bool kEncode>
void launch_width(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t blocks = block_count(size);
  size_t fast = size / kBlockBytes;
  if (((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) != 0) fast = 0;
  if (fast > 0) {
    if constexpr (kEncode) encode_full<W><<<static_cast<unsigned>(fast), Full<W>::kUnits, 0, stream>>>(in, out);
    else decode_full<W><<<static_cast<unsigned>(fast), Full<W>::kUnits, 0, stream>>>(in, out);
  }
  if (blocks > fast)
    code_blocks<W, kEncode><<<static_cast<unsigned>(blocks - fast), kThreads, 0, stream>>>(in, size, fast, out);
}

template <bool kEncode>
cudaError_t launch(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (width != 1 && width != 2 && width != 4 && width != 8) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  switch (width) {
    case 1: launch_width<1, kEncode>(in, size, out, stream); break;
    case 2: launch_width<2, kEncode>(in, size, out, stream); break;
    case 4: launch_width<4, kEncode>(in, size, out, stream); break;
    default: launch_width<8, kEncode>(in, size, out, stream); break;
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
