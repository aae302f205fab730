// CUDA byte reversal of fixed-width words (stream format: byteswap.hpp).
// Word-local: threads stride over all whole words; the trailing partial word
// is copied by the first block.
#include "byteswap/byteswap_cuda.hpp"

#include "common/words_cuda.cuh"

namespace fz::byteswap::cuda {
namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ uint16_t reverse(uint16_t x) { return static_cast<uint16_t>((x >> 8) | (x << 8)); }
__device__ __forceinline__ uint32_t reverse(uint32_t x) { return __byte_perm(x, 0, 0x0123); }
__device__ __forceinline__ uint64_t reverse(uint64_t x) {
  const uint32_t low = static_cast<uint32_t>(x), high = static_cast<uint32_t>(x >> 32);
  return (static_cast<uint64_t>(reverse(low)) << 32) | reverse(high);
}

template <typename T>
__global__ void swap_words(const uint8_t* in, size_t size, uint8_t* out) {
  const size_t words = size / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    cuda_detail::store_word<T>(out + i * sizeof(T), reverse(cuda_detail::load_word<T>(in + i * sizeof(T))));
  if (blockIdx.x == 0) {
    for (size_t i = words * sizeof(T) + threadIdx.x; i < size; i += blockDim.x) out[i] = in[i];
  }
}

template <typename T>
void launch(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t words = size / sizeof(T);
  size_t blocks = (words + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;         // the trailing bytes still need copying
  if (blocks > 65536) blocks = 65536;  // grid-stride beyond this
  swap_words<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, size, out);
}

}  // namespace

cudaError_t apply(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (width != 1 && width != 2 && width != 4 && width != 8) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  switch (width) {
    case 1: return cudaMemcpyAsync(out, in, size, cudaMemcpyDeviceToDevice, stream);
    case 2: launch<uint16_t>(in, size, out, stream); break;
    case 4: launch<uint32_t>(in, size, out, stream); break;
    default: launch<uint64_t>(in, size, out, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace fz::byteswap::cuda
