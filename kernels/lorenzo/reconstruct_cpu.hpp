// The decoder's fused inverse for one run of a row (decode_cpu.cpp): deltas,
// the x, y and z prefix sums and the conversion to values in one pass, with a
// generic version and an SSE2 one for float (bit-identical: the same integer
// sums and one conversion and multiply per element).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "lorenzo/lorenzo_rules.hpp"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace fz::lorenzo::detail {

using rules::Traits;
using rules::unzigzag;


constexpr unsigned kBadCode = 1;
constexpr unsigned kBadRange = 2;

inline void throw_chunk_error(unsigned bad) {
  require_format(!(bad & kBadCode), "lorenzo: code out of radius");
  require_format(!(bad & kBadRange), "lorenzo: prequantized value out of range");
}

// The fused inverse for len elements of one row: delta k (from the codes, or
// from d when stored deltas were written over it), then
//   acc  += delta   x prefix sum, carried along the row
//   q[k] += acc     y prefix sum: the running sum of this plane's rows (rank >= 2)
//   P[k] += q[k]    z prefix sum: the running sum of the slab's planes (rank 3)
// and the result either converted to T (Convert) or stored as U for the carry
// pass. Returns kBadCode / kBadRange flags.
template <typename T, int Rank, bool Convert, bool FromCodes>
unsigned reconstruct_generic(const uint8_t* codes, const typename Traits<T>::U* d, size_t len,
                             typename Traits<T>::U& acc, typename Traits<T>::U* q, typename Traits<T>::U* P,
                             uint8_t* dst, typename Traits<T>::U code_limit, T eb2) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  bool bad_code = false, bad_range = false;
  U a = acc;
  for (size_t k = 0; k < len; ++k) {
    U delta;
    if (FromCodes) {
      const U code = load_le<uint16_t>(codes + 2 * k);
      bad_code |= !(code < code_limit);
      delta = unzigzag(code);
    } else {
      delta = d[k];
    }
    a = static_cast<U>(a + delta);
    U v = a;
    if (Rank >= 2) q[k] = v = static_cast<U>(q[k] + v);
    if (Rank == 3) P[k] = v = static_cast<U>(P[k] + v);
    if (Convert) {
      bad_range |= static_cast<U>(v + kPMax) > static_cast<U>(2 * kPMax);
      const T x = static_cast<T>(static_cast<I>(v)) * eb2;
      std::memcpy(dst + k * W, &x, W);
    } else {
      store_le<U>(dst + k * W, v);
    }
  }
  acc = a;
  return (bad_code ? kBadCode : 0u) | (bad_range ? kBadRange : 0u);
}

#ifdef __SSE2__
// float with SSE2 (every x86-64): the x prefix sum of four lanes takes two
// shift-adds plus the broadcast carry, which the compiler does not find on its
// own; the y/z sums, the checks and the conversion ride along in the same
// registers. Bit-identical to reconstruct_generic: the same integer sums and one
// cvtdq2ps (exact, |p| <= 2^24 when accepted) and one mulps per element.
template <int Rank, bool Convert, bool FromCodes>
unsigned reconstruct_sse2(const uint8_t* codes, const uint32_t* d, size_t len, uint32_t& acc, uint32_t* q,
                          uint32_t* P, uint8_t* dst, uint32_t code_limit, float eb2) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i one = _mm_set1_epi32(1);
  const __m128i last_code = _mm_set1_epi32(static_cast<int>(code_limit - 1));  // code_limit <= 65536
  const __m128i pmax = _mm_set1_epi32(Traits<float>::kPMax);
  const __m128i pmin = _mm_set1_epi32(-Traits<float>::kPMax);
  const __m128 scale = _mm_set1_ps(eb2);
  __m128i bad_code = zero, bad_range = zero;
  __m128i carry = _mm_set1_epi32(static_cast<int>(acc));
  size_t k = 0;
  for (; k + 4 <= len; k += 4) {
    __m128i v;
    if (FromCodes) {
      const __m128i code = _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 2 * k)), zero);
      bad_code = _mm_or_si128(bad_code, _mm_cmpgt_epi32(code, last_code));
      v = _mm_xor_si128(_mm_srli_epi32(code, 1), _mm_sub_epi32(zero, _mm_and_si128(code, one)));
    } else {
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + k));
    }
    v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
    v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
    v = _mm_add_epi32(v, carry);
    carry = _mm_shuffle_epi32(v, 0xFF);
    if (Rank >= 2) {
      v = _mm_add_epi32(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), v);
    }
    if (Rank == 3) {
      v = _mm_add_epi32(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(P + k)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(P + k), v);
    }
    if (Convert) {
      bad_range = _mm_or_si128(bad_range, _mm_or_si128(_mm_cmpgt_epi32(v, pmax), _mm_cmplt_epi32(v, pmin)));
      _mm_storeu_ps(reinterpret_cast<float*>(dst + 4 * k), _mm_mul_ps(_mm_cvtepi32_ps(v), scale));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 4 * k), v);
    }
  }
  acc = static_cast<uint32_t>(_mm_cvtsi128_si32(carry));
  unsigned bad = (_mm_movemask_epi8(bad_code) ? kBadCode : 0u) | (_mm_movemask_epi8(bad_range) ? kBadRange : 0u);
  if (k < len)
    bad |= reconstruct_generic<float, Rank, Convert, FromCodes>(codes + 2 * k, FromCodes ? d : d + k, len - k, acc,
                                                                 Rank >= 2 ? q + k : q, Rank == 3 ? P + k : P,
                                                                 dst + 4 * k, code_limit, eb2);
  return bad;
}
#endif

template <typename T, int Rank, bool Convert, bool FromCodes>
unsigned reconstruct(const uint8_t* codes, const typename Traits<T>::U* d, size_t len, typename Traits<T>::U& acc,
                     typename Traits<T>::U* q, typename Traits<T>::U* P, uint8_t* dst,
                     typename Traits<T>::U code_limit, T eb2) {
#ifdef __SSE2__
  if constexpr (std::is_same_v<T, float>)
    return reconstruct_sse2<Rank, Convert, FromCodes>(codes, d, len, acc, q, P, dst, code_limit, eb2);
#endif
  return reconstruct_generic<T, Rank, Convert, FromCodes>(codes, d, len, acc, q, P, dst, code_limit, eb2);
}

}  // namespace fz::lorenzo::detail
