// CPU bit-shuffle (stream format: bitshuffle.hpp).
//
// With m transposed words per block, the W = 8*width planes of m/8 bytes are
// grouped by byte: planes 8b..8b+7 are exactly the width-1 bit-shuffle of
// "byte plane" b (byte b of every word). So a block is coded in two passes:
// split words into byte planes, then bit-transpose each byte plane 8 bytes at a
// time as 8x8 bit matrices. On x86-64 the second pass handles 64 bytes per step
// in SSE2 registers (bit transpose per 64-bit lane, then an 8x8 byte transpose).
#include "bitshuffle/bitshuffle.hpp"

#include <cstring>
#include <string>

#include "bitshuffle/transpose_bits.hpp"
#include "common/blocks.hpp"
#include "common/error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fz::bitshuffle {
namespace {

void check_width(unsigned width) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw UsageError("bitshuffle: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
}

// transpose_bits.hpp's 8x8 transpose, beside its SSE2 twin below.
using bitshuffle::transpose_bits;

#if defined(__SSE2__)
inline __m128i transpose_bits(__m128i x) {  // the same, on both 64-bit lanes
  __m128i t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 7)), _mm_set1_epi64x(0x00AA00AA00AA00AAll));
  x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 7)));
  t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 14)), _mm_set1_epi64x(0x0000CCCC0000CCCCll));
  x = _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 14)));
  t = _mm_and_si128(_mm_xor_si128(x, _mm_srli_epi64(x, 28)), _mm_set1_epi64x(0x00000000F0F0F0F0ll));
  return _mm_xor_si128(x, _mm_xor_si128(t, _mm_slli_epi64(t, 28)));
}

// 8x8 byte transpose of rows M0..M7 given as r[i] = [M_i | M_{i+4}] (low | high
// lane); returns r = [N0|N1], [N2|N3], [N4|N5], [N6|N7] with N_k byte t = M_t byte k.
inline void transpose_bytes(__m128i r[4]) {
  const __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpackhi_epi8(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi8(r[2], r[3]), a3 = _mm_unpackhi_epi8(r[2], r[3]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a2), b1 = _mm_unpackhi_epi16(a0, a2);
  const __m128i b2 = _mm_unpacklo_epi16(a1, a3), b3 = _mm_unpackhi_epi16(a1, a3);
  r[0] = _mm_unpacklo_epi32(b0, b2);
  r[1] = _mm_unpackhi_epi32(b0, b2);
  r[2] = _mm_unpacklo_epi32(b1, b3);
  r[3] = _mm_unpackhi_epi32(b1, b3);
}

inline __m128i load_pair(const uint8_t* lo, const uint8_t* hi) {
  return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo)),
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi)));
}

inline void store_pair(uint8_t* lo, uint8_t* hi, __m128i v) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(lo), v);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(hi), _mm_unpackhi_epi64(v, v));
}
#endif

// Width-1 bit-shuffle of m bytes (m % 8 == 0): plane r (m/8 bytes at dst + r*m/8)
// takes bit r of every byte, byte g bit j from src[8g + j].
void bytes_to_planes(const uint8_t* src, size_t m, uint8_t* dst) {
  const size_t plane = m / 8;
  size_t g = 0;
#if defined(__SSE2__)
  for (; g + 8 <= plane; g += 8) {
    const uint8_t* s = src + 8 * g;
    __m128i r[4];
    for (int i = 0; i < 4; ++i) r[i] = transpose_bits(load_pair(s + 8 * i, s + 8 * (i + 4)));
    transpose_bytes(r);
    for (int i = 0; i < 4; ++i) store_pair(dst + (2 * i) * plane + g, dst + (2 * i + 1) * plane + g, r[i]);
  }
#endif
  for (; g < plane; ++g) {
    const uint64_t x = transpose_bits(load_le<uint64_t>(src + 8 * g));
    for (size_t r = 0; r < 8; ++r) dst[r * plane + g] = static_cast<uint8_t>(x >> (8 * r));
  }
}

// Inverse of bytes_to_planes.
void planes_to_bytes(const uint8_t* src, size_t m, uint8_t* dst) {
  const size_t plane = m / 8;
  size_t g = 0;
#if defined(__SSE2__)
  for (; g + 8 <= plane; g += 8) {
    __m128i r[4];
    for (int i = 0; i < 4; ++i) r[i] = load_pair(src + i * plane + g, src + (i + 4) * plane + g);
    uint8_t* d = dst + 8 * g;
    // High bit planes of differences are mostly zero: skip the transpose there.
    const __m128i any = _mm_or_si128(_mm_or_si128(r[0], r[1]), _mm_or_si128(r[2], r[3]));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(any, _mm_setzero_si128())) == 0xFFFF) {
      for (int i = 0; i < 4; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * i), _mm_setzero_si128());
      continue;
    }
    transpose_bytes(r);
    for (int i = 0; i < 4; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * i), transpose_bits(r[i]));
  }
#endif
  for (; g < plane; ++g) {
    uint64_t x = 0;
    for (size_t r = 0; r < 8; ++r) x |= uint64_t{src[r * plane + g]} << (8 * r);
    store_le<uint64_t>(dst + 8 * g, transpose_bits(x));
  }
}

// Byte plane b (m bytes at planes + b*m) receives byte b of each of m words.
template <unsigned W>
void words_to_byte_planes(const uint8_t* words, size_t m, uint8_t* planes) {
  for (size_t i = 0; i < m; ++i)
    for (unsigned b = 0; b < W; ++b) planes[b * m + i] = words[i * W + b];
}

template <unsigned W>
void byte_planes_to_words(const uint8_t* planes, size_t m, uint8_t* words) {
  for (size_t i = 0; i < m; ++i)
    for (unsigned b = 0; b < W; ++b) words[i * W + b] = planes[b * m + i];
}

#if defined(__SSE2__)
// For 8-byte words, eight words form an 8x8 byte matrix: one register transpose.
template <>
void words_to_byte_planes<8>(const uint8_t* words, size_t m, uint8_t* planes) {
  for (size_t i = 0; i < m; i += 8) {
    const uint8_t* w = words + 8 * i;
    __m128i r[4];
    for (int k = 0; k < 4; ++k) r[k] = load_pair(w + 8 * k, w + 8 * (k + 4));
    transpose_bytes(r);
    for (int k = 0; k < 4; ++k) store_pair(planes + (2 * k) * m + i, planes + (2 * k + 1) * m + i, r[k]);
  }
}

// 2- and 4-byte words: byte planes <-> words by rounds of byte unpacks. Each
// round of unpacklo/unpackhi on register pairs is a perfect shuffle, so
// log2(16) rounds deinterleave (words -> planes) and log2(W) rounds interleave
// (planes -> words). 16 words per step; the scalar loop does the rest.
template <>
void words_to_byte_planes<2>(const uint8_t* words, size_t m, uint8_t* planes) {
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m128i w0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 2 * i));
    const __m128i w1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 2 * i + 16));
    const __m128i t0 = _mm_unpacklo_epi8(w0, w1), t1 = _mm_unpackhi_epi8(w0, w1);
    const __m128i u0 = _mm_unpacklo_epi8(t0, t1), u1 = _mm_unpackhi_epi8(t0, t1);
    const __m128i v0 = _mm_unpacklo_epi8(u0, u1), v1 = _mm_unpackhi_epi8(u0, u1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + i), _mm_unpacklo_epi8(v0, v1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + m + i), _mm_unpackhi_epi8(v0, v1));
  }
  for (; i < m; ++i)
    for (unsigned b = 0; b < 2; ++b) planes[b * m + i] = words[i * 2 + b];
}

template <>
void byte_planes_to_words<2>(const uint8_t* planes, size_t m, uint8_t* words) {
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    const __m128i p0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + i));
    const __m128i p1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + m + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(words + 2 * i), _mm_unpacklo_epi8(p0, p1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(words + 2 * i + 16), _mm_unpackhi_epi8(p0, p1));
  }
  for (; i < m; ++i)
    for (unsigned b = 0; b < 2; ++b) words[i * 2 + b] = planes[b * m + i];
}

template <>
void words_to_byte_planes<4>(const uint8_t* words, size_t m, uint8_t* planes) {
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    __m128i w[4];
    for (int k = 0; k < 4; ++k) w[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(words + 4 * i + 16 * k));
    const __m128i t0 = _mm_unpacklo_epi8(w[0], w[1]), t1 = _mm_unpackhi_epi8(w[0], w[1]);
    const __m128i t2 = _mm_unpacklo_epi8(w[2], w[3]), t3 = _mm_unpackhi_epi8(w[2], w[3]);
    const __m128i u0 = _mm_unpacklo_epi8(t0, t1), u1 = _mm_unpackhi_epi8(t0, t1);
    const __m128i u2 = _mm_unpacklo_epi8(t2, t3), u3 = _mm_unpackhi_epi8(t2, t3);
    // v0 = byte 0 of words 0-7 | byte 1 of words 0-7; v1 = bytes 2 | 3; v2, v3: words 8-15.
    const __m128i v0 = _mm_unpacklo_epi8(u0, u1), v1 = _mm_unpackhi_epi8(u0, u1);
    const __m128i v2 = _mm_unpacklo_epi8(u2, u3), v3 = _mm_unpackhi_epi8(u2, u3);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + i), _mm_unpacklo_epi64(v0, v2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + m + i), _mm_unpackhi_epi64(v0, v2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + 2 * m + i), _mm_unpacklo_epi64(v1, v3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + 3 * m + i), _mm_unpackhi_epi64(v1, v3));
  }
  for (; i < m; ++i)
    for (unsigned b = 0; b < 4; ++b) planes[b * m + i] = words[i * 4 + b];
}

template <>
void byte_planes_to_words<4>(const uint8_t* planes, size_t m, uint8_t* words) {
  size_t i = 0;
  for (; i + 16 <= m; i += 16) {
    __m128i p[4];
    for (int k = 0; k < 4; ++k) p[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + k * m + i));
    const __m128i a0 = _mm_unpacklo_epi8(p[0], p[1]), a1 = _mm_unpackhi_epi8(p[0], p[1]);
    const __m128i c0 = _mm_unpacklo_epi8(p[2], p[3]), c1 = _mm_unpackhi_epi8(p[2], p[3]);
    __m128i* out = reinterpret_cast<__m128i*>(words + 4 * i);
    _mm_storeu_si128(out + 0, _mm_unpacklo_epi16(a0, c0));
    _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(a0, c0));
    _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(a1, c1));
    _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(a1, c1));
  }
  for (; i < m; ++i)
    for (unsigned b = 0; b < 4; ++b) words[i * 4 + b] = planes[b * m + i];
}

template <>
void byte_planes_to_words<8>(const uint8_t* planes, size_t m, uint8_t* words) {
  for (size_t i = 0; i < m; i += 8) {
    __m128i r[4];
    for (int k = 0; k < 4; ++k) r[k] = load_pair(planes + k * m + i, planes + (k + 4) * m + i);
    transpose_bytes(r);
    for (int k = 0; k < 4; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(words + 8 * i + 16 * k), r[k]);
  }
}
#endif

template <unsigned W>
void encode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / W;
  const size_t m = n - n % 8;
  if constexpr (W == 1) {
    bytes_to_planes(in, m, out);
  } else {
    alignas(16) uint8_t byte_planes[kBlockBytes];  // every byte read is written first
    words_to_byte_planes<W>(in, m, byte_planes);
    for (unsigned b = 0; b < W; ++b) bytes_to_planes(byte_planes + b * m, m, out + b * m);
  }
  std::memcpy(out + m * W, in + m * W, length - m * W);
}

template <unsigned W>
void decode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / W;
  const size_t m = n - n % 8;
  if constexpr (W == 1) {
    planes_to_bytes(in, m, out);
  } else {
    alignas(16) uint8_t byte_planes[kBlockBytes];
    for (unsigned b = 0; b < W; ++b) planes_to_bytes(in + b * m, m, byte_planes + b * m);
    byte_planes_to_words<W>(byte_planes, m, out);
  }
  std::memcpy(out + m * W, in + m * W, length - m * W);
}

}  // namespace

BlockCoder block_encoder(unsigned width) {
  check_width(width);
  static constexpr BlockCoder coders[] = {encode_block<1>, encode_block<2>, nullptr,
                                          encode_block<4>, nullptr, nullptr, nullptr,
                                          encode_block<8>};
  return coders[width - 1];
}

void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  run_blocks(in, out, exec, block_encoder(width));
}

BlockCoder block_decoder(unsigned width) {
  check_width(width);
  static constexpr BlockCoder coders[] = {decode_block<1>, decode_block<2>, nullptr, decode_block<4>,
                                          nullptr,         nullptr,         nullptr, decode_block<8>};
  return coders[width - 1];
}

void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  run_blocks(in, out, exec, block_decoder(width));
}

}  // namespace fz::bitshuffle
