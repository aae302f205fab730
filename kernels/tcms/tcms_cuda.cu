// CUDA zigzag coding (stream format: tcms.hpp). Word-local: threads stride over
// all whole words; the trailing partial word is copied by the first block.
#include "tcms/tcms_cuda.hpp"

#include "common/words_cuda.cuh"

namespace fz::tcms::cuda {
namespace {

constexpr unsigned kThreads = 256;

// T unsigned: the arithmetic shift is written as 0 - sign bit, as on the CPU.
template <typename T>
struct Zigzag {
  __device__ static T map(T x) {
    const T sign = static_cast<T>(x >> (8 * sizeof(T) - 1));
    return static_cast<T>(static_cast<T>(x << 1) ^ static_cast<T>(T{0} - sign));
  }
};

template <typename T>
struct Unzigzag {
  __device__ static T map(T y) {
    return static_cast<T>(static_cast<T>(y >> 1) ^ static_cast<T>(T{0} - static_cast<T>(y & 1)));
  }
};

template <typename T, typename Map>
__global__ void map_words(const uint8_t* in, size_t size, uint8_t* out) {
  const size_t words = size / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride)
    cuda_detail::store_word<T>(out + i * sizeof(T), Map::map(cuda_detail::load_word<T>(in + i * sizeof(T))));
  if (blockIdx.x == 0) {
    for (size_t i = words * sizeof(T) + threadIdx.x; i < size; i += blockDim.x) out[i] = in[i];
  }
}

template <typename T, template <typename> class Map>
void launch(const uint8_t* in, size_t size, uint8_t* out, cudaStream_t stream) {
  const size_t words = size / sizeof(T);
  size_t blocks = (words + kThreads - 1) / kThreads;
  if (blocks == 0) blocks = 1;         // the trailing bytes still need copying
  if (blocks > 65536) blocks = 65536;  // grid-stride beyond this
  map_words<T, Map<T>><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, size, out);
}

template <template <typename> class Map>
cudaError_t run(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  if (width != 1 && width != 2 && width != 4 && width != 8) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  switch (width) {
    case 1: launch<uint8_t, Map>(in, size, out, stream); break;
    case 2: launch<uint16_t, Map>(in, size, out, stream); break;
    case 4: launch<uint32_t, Map>(in, size, out, stream); break;
    default: launch<uint64_t, Map>(in, size, out, stream); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  return run<Zigzag>(in, size, width, out, stream);
}

cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream) {
  return run<Unzigzag>(in, size, width, out, stream);
}

}  // namespace fz::tcms::cuda
