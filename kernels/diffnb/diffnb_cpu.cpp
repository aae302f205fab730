// CPU difference + negabinary coding (stream format: diffnb.hpp). Blocks are
// independent (the predecessor restarts at 0), so they run on the executor;
// decoding is a running sum and therefore sequential within a block.
#include "diffnb/diffnb.hpp"

#include <cstring>
#include <string>

#include "common/blocks.hpp"
#include "common/error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fz::diffnb {
namespace {

void check_width(unsigned width) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw UsageError("diffnb: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
}

// Negabinary mask 0xAA..A: adding it and XOR-ing it out maps two's complement to
// base -2, where small magnitudes of either sign have only low bits set.
template <typename T>
constexpr T kNegabinaryMask = static_cast<T>(0xAAAAAAAAAAAAAAAAull);

template <typename T>
void encode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  T previous = 0;
  for (size_t i = 0; i < n; ++i) {
    const T word = load_le<T>(in + i * sizeof(T));
    const T delta = static_cast<T>(word - previous);
    store_le<T>(out + i * sizeof(T), static_cast<T>(static_cast<T>(delta + kNegabinaryMask<T>) ^ kNegabinaryMask<T>));
    previous = word;
  }
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

template <typename T>
void decode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  T word = 0;
  for (size_t i = 0; i < n; ++i) {
    const T coded = load_le<T>(in + i * sizeof(T));
    word = static_cast<T>(word + static_cast<T>((coded ^ kNegabinaryMask<T>) - kNegabinaryMask<T>));
    store_le<T>(out + i * sizeof(T), word);
  }
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

#if defined(__SSE2__)
// The running sum, eight (u32) or four (u64) words per step in two registers.
// Each register gets its in-register prefix sum (shift by one and two lanes,
// add) independently; the carry of all earlier words is then added to both.
// Only one add per step depends on the previous step (carry += the step's
// total), which more than doubles the throughput of a one-register loop
// whose every step waited for the last. Same words as the scalar loop.
template <>
void decode_block<uint32_t>(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / 4;
  const __m128i mask = _mm_set1_epi32(static_cast<int>(kNegabinaryMask<uint32_t>));
  auto prefix = [&](const uint8_t* p) {
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    d = _mm_sub_epi32(_mm_xor_si128(d, mask), mask);
    d = _mm_add_epi32(d, _mm_slli_si128(d, 4));
    return _mm_add_epi32(d, _mm_slli_si128(d, 8));
  };
  __m128i carry = _mm_setzero_si128();  // every lane: the sum of all earlier words
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i low = prefix(in + 4 * i), high = prefix(in + 4 * i + 16);
    const __m128i low_total = _mm_shuffle_epi32(low, 0xFF);
    const __m128i high_with_low = _mm_add_epi32(high, low_total);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * i), _mm_add_epi32(low, carry));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 * i + 16), _mm_add_epi32(high_with_low, carry));
    carry = _mm_add_epi32(carry, _mm_shuffle_epi32(high_with_low, 0xFF));
  }
  uint32_t word = static_cast<uint32_t>(_mm_cvtsi128_si32(carry));
  for (; i < n; ++i) {
    const uint32_t coded = load_le<uint32_t>(in + 4 * i);
    word = word + ((coded ^ kNegabinaryMask<uint32_t>) - kNegabinaryMask<uint32_t>);
    store_le<uint32_t>(out + 4 * i, word);
  }
  std::memcpy(out + 4 * n, in + 4 * n, length - 4 * n);
}

template <>
void decode_block<uint64_t>(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / 8;
  const __m128i mask = _mm_set1_epi64x(static_cast<long long>(kNegabinaryMask<uint64_t>));
  auto prefix = [&](const uint8_t* p) {
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    d = _mm_sub_epi64(_mm_xor_si128(d, mask), mask);
    return _mm_add_epi64(d, _mm_slli_si128(d, 8));
  };
  __m128i carry = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i low = prefix(in + 8 * i), high = prefix(in + 8 * i + 16);
    const __m128i high_with_low = _mm_add_epi64(high, _mm_unpackhi_epi64(low, low));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8 * i), _mm_add_epi64(low, carry));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8 * i + 16), _mm_add_epi64(high_with_low, carry));
    carry = _mm_add_epi64(carry, _mm_unpackhi_epi64(high_with_low, high_with_low));
  }
  uint64_t word = static_cast<uint64_t>(_mm_cvtsi128_si64(carry));
  for (; i < n; ++i) {
    const uint64_t coded = load_le<uint64_t>(in + 8 * i);
    word = word + ((coded ^ kNegabinaryMask<uint64_t>) - kNegabinaryMask<uint64_t>);
    store_le<uint64_t>(out + 8 * i, word);
  }
  std::memcpy(out + 8 * n, in + 8 * n, length - 8 * n);
}
#endif

}  // namespace

BlockCoder block_encoder(unsigned width) {
  check_width(width);
  static constexpr BlockCoder coders[] = {encode_block<uint8_t>, encode_block<uint16_t>, nullptr,
                                          encode_block<uint32_t>, nullptr, nullptr, nullptr,
                                          encode_block<uint64_t>};
  return coders[width - 1];
}

void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  run_blocks(in, out, exec, block_encoder(width));
}

BlockCoder block_decoder(unsigned width) {
  check_width(width);
  static constexpr BlockCoder coders[] = {decode_block<uint8_t>, decode_block<uint16_t>, nullptr,
                                          decode_block<uint32_t>, nullptr, nullptr, nullptr,
                                          decode_block<uint64_t>};
  return coders[width - 1];
}

void decode_into(ByteSpan in, unsigned width, uint8_t* out, const Executor& exec) {
  run_blocks_into(in, out, exec, block_decoder(width));
}

void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  check_width(width);
  out.resize(in.size);
  decode_into(in, width, out.data(), exec);
}

}  // namespace fz::diffnb
