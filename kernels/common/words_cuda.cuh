// Device-side little-endian word access to byte buffers, shared by the CUDA
// stages. Stage buffers are plain bytes at any offset (a sub-chunk's kept words
// start wherever its bitmaps end), so a word is loaded directly only when its
// address is aligned and assembled from bytes otherwise; both give the same
// value on the little-endian GPUs CUDA supports.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fz::cuda_detail {

template <typename Word>
__device__ __forceinline__ Word load_word(const uint8_t* p) {
  if ((reinterpret_cast<uintptr_t>(p) & (sizeof(Word) - 1)) == 0) return *reinterpret_cast<const Word*>(p);
  Word v = 0;
#pragma unroll
  for (unsigned b = 0; b < sizeof(Word); ++b) v = static_cast<Word>(v | (static_cast<Word>(p[b]) << (8 * b)));
  return v;
}

template <typename Word>
__device__ __forceinline__ void store_word(uint8_t* p, Word v) {
  if ((reinterpret_cast<uintptr_t>(p) & (sizeof(Word) - 1)) == 0) {
    *reinterpret_cast<Word*>(p) = v;
    return;
  }
#pragma unroll
  for (unsigned b = 0; b < sizeof(Word); ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

// Where 16-byte vector v of a 16 KiB block lives when the block is staged in
// shared memory to be read S vectors per thread (thread t: vectors S*t ..
// S*t+S-1) after coalesced loads (vector i*T + t by thread t). XORing the low
// bits of the index with the reading thread's position spreads the 8 threads
// of each 128-byte shared-memory phase over distinct banks, while the vectors
// consecutive threads write stay in one aligned octet. S is 1, 2, 4, 8 or 16.
template <unsigned S>
__device__ __forceinline__ unsigned swizzled_vector(unsigned v) {
  if constexpr (S >= 8) return v ^ ((v / S) & 7u);
  else return v ^ ((v >> 3) & (S - 1));
}

// Threads of a block copy `count` bytes together (byte-wise: any alignment).
__device__ __forceinline__ void block_copy_bytes(const uint8_t* src, uint8_t* dst, size_t count) {
  for (size_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = src[i];
}

}  // namespace fz::cuda_detail
