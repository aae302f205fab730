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

// 16 bytes a thread where both buffers are 16-byte aligned (the engine's
// buffers are): whole words of every width, one vector load and store each.
template <typename T, typename Map>
__global__ void map_vectors(const uint4* in, size_t vectors, uint4* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  constexpr unsigned kPerWord = 4 / (sizeof(T) < 4 ? sizeof(T) : 4);
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors; i += stride) {
    uint4 v = in[i];
    if constexpr (sizeof(T) == 8) {
      uint64_t a = (uint64_t{v.y} << 32) | v.x, b = (uint64_t{v.w} << 32) | v.z;
      a = Map::map(a);
      b = Map::map(b);
      v = make_uint4(static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                     static_cast<uint32_t>(b >> 32));
    } else {
      uint32_t lanes[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (unsigned k = 0; k < 4; ++k) {
        uint32_t word = 0;
#pragma unroll
        for (unsigned j = 0; j < kPerWord; ++j) {
          const T x = static_cast<T>(lanes[k] >> (8 * sizeof(T) * j));
          word |= static_cast<uint32_t>(Map::map(x)) << (8 * sizeof(T) * j);
        }
        lanes[k] = word;
      }
      v = make_uint4(lanes[0], lanes[1], lanes[2], lanes[3]);
    }
    out[i] = v;
  }
}

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
  if (((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) & 15) == 0 && size >= 16) {
    const size_t vectors = size / 16;
    size_t blocks = (vectors + kThreads - 1) / kThreads;
    if (blocks > 65536) blocks = 65536;
    map_vectors<T, Map<T>><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        reinterpret_cast<const uint4*>(in), vectors, reinterpret_cast<uint4*>(out));
    in += 16 * vectors;  // the rest: whole words, then bytes, as below
    out += 16 * vectors;
    size -= 16 * vectors;
    if (size == 0) return;
  }
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
