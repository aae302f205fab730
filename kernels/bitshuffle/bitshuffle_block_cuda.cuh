// Device pieces of the CUDA bit-shuffle (stream format: bitshuffle.hpp) over
// one full 16 KiB block, for bitshuffle_cuda.cu's kernels and for kernels
// that fuse the bit-shuffle with the stage after it (bitshuffle_rze/): the
// block is cut into units of 32 words (4 groups of 8); a unit's words come in
// as kVectors 16-byte vectors, and its output is byte 4u..4u+3 of every bit
// plane, 8W 32-bit words, each written (or, decoding, read) through a callback
// so that the caller chooses global or shared memory. Byte gathers are
// __byte_perm 4x4 byte transposes; the 8x8 bit transpose is the CPU's, on
// 32-bit halves. code_any_block codes a block of any length (a stream's
// partial last one) the CPU's way, one 8x8 matrix per thread and step.
#pragma once

#include <cstdint>

#include "bitshuffle/transpose_bits.hpp"
#include "common/words_cuda.cuh"

namespace fz::bitshuffle::cuda_block {

// The CPU's 8x8 transpose (transpose_bits.hpp), and below the same on the
// matrix as two 32-bit halves.
using bitshuffle::transpose_bits;

// The same on the matrix as two 32-bit halves (rows 0-3 in lo, 4-7 in hi):
// the first two steps never move a bit across the halves, the third moves
// only between them.
__device__ __forceinline__ void transpose_bits(uint32_t& lo, uint32_t& hi) {
  uint32_t t = (lo ^ (lo >> 7)) & 0x00AA00AAu;
  lo ^= t ^ (t << 7);
  t = (hi ^ (hi >> 7)) & 0x00AA00AAu;
  hi ^= t ^ (t << 7);
  t = (lo ^ (lo >> 14)) & 0x0000CCCCu;
  lo ^= t ^ (t << 14);
  t = (hi ^ (hi >> 14)) & 0x0000CCCCu;
  hi ^= t ^ (t << 14);
  t = (lo ^ (hi << 4)) & 0xF0F0F0F0u;
  lo ^= t;
  hi ^= t >> 4;
}

// 4x4 byte transpose: byte j of o[c] = byte c of a_j. Its own inverse.
__device__ __forceinline__ void transpose_bytes(uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t* o) {
  const uint32_t p = __byte_perm(a0, a1, 0x5140);  // a0.0 a1.0 a0.1 a1.1
  const uint32_t q = __byte_perm(a2, a3, 0x5140);  // a2.0 a3.0 a2.1 a3.1
  const uint32_t r = __byte_perm(a0, a1, 0x7362);  // a0.2 a1.2 a0.3 a1.3
  const uint32_t s = __byte_perm(a2, a3, 0x7362);  // a2.2 a3.2 a2.3 a3.3
  o[0] = __byte_perm(p, q, 0x5410);
  o[1] = __byte_perm(p, q, 0x7632);
  o[2] = __byte_perm(r, s, 0x5410);
  o[3] = __byte_perm(r, s, 0x7632);
}

// A full block of W-byte words, cut into units of G groups of 8 words (G = 4
// for the bit-shuffle's own kernels; fused kernels take 2 or 1 to give every
// thread of a larger thread block a unit).
template <unsigned W, unsigned G = 4>
struct Full {
  static_assert(G == 1 || G == 2 || G == 4, "a unit is 1, 2 or 4 groups of 8 words");
  static constexpr unsigned kUnits = 2048 / (W * G);  // of 8G words each
  static constexpr unsigned kVectors = G * W / 2;     // 16-byte vectors per unit (W * G >= 2)
  static constexpr unsigned kPlane = 2048 / W;        // bytes per bit plane
  static constexpr unsigned kWords32 = 2 * G * W;     // 32-bit registers per unit
};

// Where vector v of a block lives in shared memory when units read their
// kVectors consecutive vectors after coalesced stores (words_cuda.cuh).
template <unsigned W>
__device__ __forceinline__ unsigned swizzle(unsigned v) {
  return cuda_detail::swizzled_vector<2 * W>(v);
}

// lo[b][k] / hi[b][k]: the matrix of byte b of words 8k..8k+3 / 8k+4..8k+7
// (byte j = byte b of word 8k+j), from the thread's words held as w[] (word i
// at bytes i*W .. i*W+W-1 of the 32-bit little-endian registers).
template <unsigned W, unsigned G>
__device__ __forceinline__ void words_to_matrices(const uint32_t (&w)[2 * G * W], uint32_t (&lo)[W][4],
                                                  uint32_t (&hi)[W][4]) {
#pragma unroll
  for (unsigned k = 0; k < G; ++k) {
    if constexpr (W == 1) {
      lo[0][k] = w[2 * k];
      hi[0][k] = w[2 * k + 1];
    } else if constexpr (W == 2) {
      lo[0][k] = __byte_perm(w[4 * k], w[4 * k + 1], 0x6420);
      lo[1][k] = __byte_perm(w[4 * k], w[4 * k + 1], 0x7531);
      hi[0][k] = __byte_perm(w[4 * k + 2], w[4 * k + 3], 0x6420);
      hi[1][k] = __byte_perm(w[4 * k + 2], w[4 * k + 3], 0x7531);
    } else if constexpr (W == 4) {
      uint32_t o[4];
      transpose_bytes(w[8 * k], w[8 * k + 1], w[8 * k + 2], w[8 * k + 3], o);
#pragma unroll
      for (unsigned c = 0; c < 4; ++c) lo[c][k] = o[c];
      transpose_bytes(w[8 * k + 4], w[8 * k + 5], w[8 * k + 6], w[8 * k + 7], o);
#pragma unroll
      for (unsigned c = 0; c < 4; ++c) hi[c][k] = o[c];
    } else {
#pragma unroll
      for (unsigned h = 0; h < 2; ++h) {
        uint32_t o[4];
        transpose_bytes(w[16 * k + h], w[16 * k + 2 + h], w[16 * k + 4 + h], w[16 * k + 6 + h], o);
#pragma unroll
        for (unsigned c = 0; c < 4; ++c) lo[4 * h + c][k] = o[c];
        transpose_bytes(w[16 * k + 8 + h], w[16 * k + 10 + h], w[16 * k + 12 + h], w[16 * k + 14 + h], o);
#pragma unroll
        for (unsigned c = 0; c < 4; ++c) hi[4 * h + c][k] = o[c];
      }
    }
  }
}

// The inverse of words_to_matrices.
template <unsigned W, unsigned G>
__device__ __forceinline__ void matrices_to_words(const uint32_t (&lo)[W][4], const uint32_t (&hi)[W][4],
                                                  uint32_t (&w)[2 * G * W]) {
#pragma unroll
  for (unsigned k = 0; k < G; ++k) {
    if constexpr (W == 1) {
      w[2 * k] = lo[0][k];
      w[2 * k + 1] = hi[0][k];
    } else if constexpr (W == 2) {
      w[4 * k] = __byte_perm(lo[0][k], lo[1][k], 0x5140);
      w[4 * k + 1] = __byte_perm(lo[0][k], lo[1][k], 0x7362);
      w[4 * k + 2] = __byte_perm(hi[0][k], hi[1][k], 0x5140);
      w[4 * k + 3] = __byte_perm(hi[0][k], hi[1][k], 0x7362);
    } else if constexpr (W == 4) {
      transpose_bytes(lo[0][k], lo[1][k], lo[2][k], lo[3][k], &w[8 * k]);
      transpose_bytes(hi[0][k], hi[1][k], hi[2][k], hi[3][k], &w[8 * k + 4]);
    } else {
#pragma unroll
      for (unsigned h = 0; h < 2; ++h) {
        uint32_t o[4];
        transpose_bytes(lo[4 * h][k], lo[4 * h + 1][k], lo[4 * h + 2][k], lo[4 * h + 3][k], o);
#pragma unroll
        for (unsigned j = 0; j < 4; ++j) w[16 * k + 2 * j + h] = o[j];
        transpose_bytes(hi[4 * h][k], hi[4 * h + 1][k], hi[4 * h + 2][k], hi[4 * h + 3][k], o);
#pragma unroll
        for (unsigned j = 0; j < 4; ++j) w[16 * k + 8 + 2 * j + h] = o[j];
      }
    }
  }
}


// Unit u of a block's encode: vector_at(v) gives the block's 16-byte vector v
// (the unit reads u*kVectors .. u*kVectors + kVectors - 1);
// store_plane(at, x) receives the G bytes at byte `at` of the coded block (in
// the low bytes of x), 8W of them.
template <unsigned W, unsigned G, typename VectorAt, typename StorePlane>
__device__ __forceinline__ void encode_unit(unsigned u, VectorAt vector_at, StorePlane store_plane) {
  using F = Full<W, G>;
  uint32_t w[F::kWords32];
#pragma unroll
  for (unsigned i = 0; i < F::kVectors; ++i) {
    const uint4 v = vector_at(u * F::kVectors + i);
    w[4 * i] = v.x;
    w[4 * i + 1] = v.y;
    w[4 * i + 2] = v.z;
    w[4 * i + 3] = v.w;
  }
  uint32_t lo[W][4] = {}, hi[W][4] = {};  // matrices G..3 stay 0
  words_to_matrices<W, G>(w, lo, hi);
#pragma unroll
  for (unsigned b = 0; b < W; ++b) {
#pragma unroll
    for (unsigned k = 0; k < G; ++k) transpose_bits(lo[b][k], hi[b][k]);
    uint32_t o[4];
    transpose_bytes(lo[b][0], lo[b][1], lo[b][2], lo[b][3], o);  // byte k of o[r]: byte r of matrix k
#pragma unroll
    for (unsigned r = 0; r < 4; ++r) store_plane((8 * b + r) * F::kPlane + G * u, o[r]);
    transpose_bytes(hi[b][0], hi[b][1], hi[b][2], hi[b][3], o);
#pragma unroll
    for (unsigned r = 0; r < 4; ++r) store_plane((8 * b + 4 + r) * F::kPlane + G * u, o[r]);
  }
}

// Unit u of a block's decode, the inverse: load_plane(at) gives the coded
// block's G bytes at byte `at` (in the low bytes, zeros above);
// store_vector(v, x) receives the decoded block's 16-byte vector v.
template <unsigned W, unsigned G, typename LoadPlane, typename StoreVector>
__device__ __forceinline__ void decode_unit(unsigned u, LoadPlane load_plane, StoreVector store_vector) {
  using F = Full<W, G>;
  uint32_t lo[W][4], hi[W][4];
#pragma unroll
  for (unsigned b = 0; b < W; ++b) {
    uint32_t o[8];
#pragma unroll
    for (unsigned r = 0; r < 8; ++r) o[r] = load_plane((8 * b + r) * F::kPlane + G * u);
    transpose_bytes(o[0], o[1], o[2], o[3], lo[b]);
    transpose_bytes(o[4], o[5], o[6], o[7], hi[b]);
#pragma unroll
    for (unsigned k = 0; k < G; ++k) transpose_bits(lo[b][k], hi[b][k]);
  }
  uint32_t w[F::kWords32];
  matrices_to_words<W, G>(lo, hi, w);
#pragma unroll
  for (unsigned i = 0; i < F::kVectors; ++i)
    store_vector(u * F::kVectors + i, make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]));
}

// Any block of `length` (<= kBlockBytes) bytes at any alignment, by the
// thread block (blockDim.x threads), staged byte by byte in shared memory
// (`source` and `coded`, kBlockBytes each): encode makes the 8 bytes b of
// words 8g..8g+7 (a row each) byte g of planes 8b..8b+7; decode reads the
// same matrix from the planes and scatters it back to the words. The bytes
// after the transposed words pass through.
template <unsigned W, bool kEncode>
__device__ void code_any_block(const uint8_t* in, unsigned length, uint8_t* out, uint8_t* source, uint8_t* coded) {
  const unsigned words = length / W;
  const unsigned transposed = words - words % 8;  // m in bitshuffle.hpp
  const unsigned plane = transposed / 8;          // bytes per bit plane

  cuda_detail::block_copy_bytes(in, source, length);
  __syncthreads();
  for (unsigned unit = threadIdx.x; unit < W * plane; unit += blockDim.x) {
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
  for (unsigned i = transposed * W + threadIdx.x; i < length; i += blockDim.x) coded[i] = source[i];
  __syncthreads();
  cuda_detail::block_copy_bytes(coded, out, length);
}

}  // namespace fz::bitshuffle::cuda_block
