// The encoder's SSE2 paths (every x86-64): four elements prequantized at once
// where all four are on classify's common path, four codes at once where none
// is a record, and the Lorenzo deltas 16 bytes at a time. Each gives the same
// p, codes and deltas as the scalar rules of lorenzo_rules.hpp (the reasons are
// beside each function); on false nothing is stored and the caller takes the
// elements one by one.
#pragma once

#ifdef __SSE2__
#include <emmintrin.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "lorenzo/lorenzo_rules.hpp"

namespace fz::lorenzo::detail {

using rules::Quantizer;
using rules::Traits;

// Four float elements on classify's common path at once: none is the fill value,
// a NaN/Inf, a denormal or -0; |x * inv| < PMAX; and the rounded q passes the
// first test, |x - (T)q * eb2| < bound in double. These are the same operations
// classify performs (mulps, truncation, the half-up step, cvtdq2ps, mulps,
// cvtps2pd, subpd), so p is the same; on false nothing is stored and classify
// decides each element.
inline bool quantize4_sse2(const Quantizer<float>& quantizer, const uint8_t* src, uint32_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i zero = _mm_setzero_si128();
  const __m128i exponent = _mm_and_si128(_mm_srli_epi32(bits, 23), _mm_set1_epi32(0xFF));
  __m128i special = _mm_cmpeq_epi32(exponent, _mm_set1_epi32(0xFF));
  // exponent 0: only +0 (p = 0) stays on this path
  special = _mm_or_si128(special, _mm_andnot_si128(_mm_cmpeq_epi32(bits, zero), _mm_cmpeq_epi32(exponent, zero)));
  if (quantizer.has_fill)
    special = _mm_or_si128(special, _mm_cmpeq_epi32(bits, _mm_set1_epi32(static_cast<int>(quantizer.fill))));
  const __m128 x = _mm_castsi128_ps(bits);
  const __m128 s = _mm_mul_ps(x, _mm_set1_ps(quantizer.inv));
  const __m128 a = _mm_and_ps(s, _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF)));
  const __m128 small = _mm_cmplt_ps(a, _mm_set1_ps(static_cast<float>(Traits<float>::kPMax)));
  __m128i t = _mm_cvttps_epi32(a);
  const __m128 half_up = _mm_cmpge_ps(_mm_sub_ps(a, _mm_cvtepi32_ps(t)), _mm_set1_ps(0.5f));
  t = _mm_sub_epi32(t, _mm_castps_si128(half_up));
  // s < 0 and the sign bit differ only at s = -0, where t = 0 anyway.
  const __m128i negative = _mm_srai_epi32(_mm_castps_si128(s), 31);
  const __m128i q = _mm_sub_epi32(_mm_xor_si128(t, negative), negative);
  const __m128 y = _mm_mul_ps(_mm_cvtepi32_ps(q), _mm_set1_ps(quantizer.eb2));
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m128d bound = _mm_set1_pd(quantizer.bound);
  const __m128d low = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(x), _mm_cvtps_pd(y)), abs_mask);
  const __m128d high = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), _mm_cvtps_pd(_mm_movehl_ps(y, y))), abs_mask);
  const int accepted = _mm_movemask_pd(_mm_cmplt_pd(low, bound)) | (_mm_movemask_pd(_mm_cmplt_pd(high, bound)) << 2);
  if (_mm_movemask_epi8(special) != 0 || _mm_movemask_ps(small) != 0xF || accepted != 0xF) return false;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), q);
  return true;
}

// Codes of four float deltas when all four fit (no records among them);
// otherwise nothing is stored and the caller takes them one by one.
inline bool codes4_sse2(const uint32_t* deltas, uint32_t code_limit, uint8_t* codes) {
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas));
  const __m128i z = _mm_xor_si128(_mm_slli_epi32(d, 1), _mm_srai_epi32(d, 31));
  // unsigned z < code_limit, as a signed compare with both sign bits flipped
  const __m128i flip = _mm_set1_epi32(static_cast<int>(0x80000000u));
  const __m128i fits = _mm_cmplt_epi32(_mm_xor_si128(z, flip), _mm_xor_si128(_mm_set1_epi32(static_cast<int>(code_limit)), flip));
  if (_mm_movemask_epi8(fits) != 0xFFFF) return false;
  // z < 65536: sign-extending the low half makes the saturating pack exact
  const __m128i low = _mm_srai_epi32(_mm_slli_epi32(z, 16), 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), _mm_packs_epi32(low, low));
  return true;
}

// 64-bit lane equality from 32-bit compares: both halves equal.
inline __m128i cmpeq_epi64_sse2(__m128i a, __m128i b) {
  const __m128i eq = _mm_cmpeq_epi32(a, b);
  return _mm_and_si128(eq, _mm_shuffle_epi32(eq, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Each 64-bit lane filled with its sign bit (SSE2 has no srai_epi64).
inline __m128i sign_epi64_sse2(__m128i v) {
  return _mm_shuffle_epi32(_mm_srai_epi32(v, 31), _MM_SHUFFLE(3, 3, 1, 1));
}

// Quantizer<double>'s parameters in vector registers (one per work item).
struct QuantizerSse2 {
  __m128d inv, eb2, bound;
  __m128i fill;
  bool has_fill;
  explicit QuantizerSse2(const Quantizer<double>& q)
      : inv(_mm_set1_pd(q.inv)),
        eb2(_mm_set1_pd(q.eb2)),
        bound(_mm_set1_pd(q.bound)),
        fill(_mm_set1_epi64x(static_cast<long long>(q.fill))),
        has_fill(q.has_fill) {}
};

// Two double elements: p in q, and an all-ones mask in the lanes on classify's
// common path. Such a lane is +0 or a normal number that is not the fill value,
// |s| = |x * inv| < 2^51 (so the integers below convert exactly with the
// 1.5 * 2^52 addend), and its rounded q passes the first test, |x - q * eb2| <
// bound. The operations are classify's: s = x * inv (mulpd), a = |s|; q is a
// rounded half away from zero, the same integer as classify's truncation plus
// half-up step (r = a + 1.5 * 2^52 - 1.5 * 2^52 is the nearest integer, ties to
// even, exactly; it differs only when a - r == 0.5 exactly, where the half goes
// up); (double)q * eb2 (mulpd) and the difference in double. Infinities and NaNs
// fail |s| < 2^51, denormals and -0 fail the first test.
inline __m128d quantize2_sse2(const QuantizerSse2& quantizer, __m128i bits, __m128i& q) {
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m128d x = _mm_castsi128_pd(bits);
  const __m128i is_zero = cmpeq_epi64_sse2(bits, _mm_setzero_si128());  // +0 only
  __m128d ok = _mm_or_pd(_mm_cmpge_pd(_mm_and_pd(x, abs_mask), _mm_set1_pd(std::numeric_limits<double>::min())),
                         _mm_castsi128_pd(is_zero));
  if (quantizer.has_fill) ok = _mm_andnot_pd(_mm_castsi128_pd(cmpeq_epi64_sse2(bits, quantizer.fill)), ok);
  const __m128d s = _mm_mul_pd(x, quantizer.inv);
  const __m128d a = _mm_and_pd(s, abs_mask);
  ok = _mm_and_pd(ok, _mm_cmplt_pd(a, _mm_set1_pd(0x1p51)));
  const __m128d magic = _mm_set1_pd(0x1.8p52);
  const __m128d m = _mm_add_pd(a, magic);
  const __m128d r = _mm_sub_pd(m, magic);
  const __m128d tie = _mm_cmpeq_pd(_mm_sub_pd(a, r), _mm_set1_pd(0.5));
  const __m128d t = _mm_add_pd(r, _mm_and_pd(tie, _mm_set1_pd(1.0)));
  // the integer of t: the low bits of m, plus one at a tie (mask -1)
  const __m128i ti = _mm_sub_epi64(_mm_sub_epi64(_mm_castpd_si128(m), _mm_castpd_si128(magic)), _mm_castpd_si128(tie));
  // s < 0 and the sign bit differ only at s = -0, where t = 0: q = 0, and x - (-0 * eb2)
  // is x - (+0 * eb2).
  const __m128i negative = sign_epi64_sse2(_mm_castpd_si128(s));
  q = _mm_sub_epi64(_mm_xor_si128(ti, negative), negative);
  const __m128d qd = _mm_xor_pd(t, _mm_andnot_pd(abs_mask, s));
  const __m128d y = _mm_mul_pd(qd, quantizer.eb2);
  const __m128d diff = _mm_and_pd(_mm_sub_pd(x, y), abs_mask);
  return _mm_and_pd(ok, _mm_cmplt_pd(diff, quantizer.bound));
}

// Four double elements on classify's common path; otherwise nothing is stored.
inline bool quantize4_sse2(const QuantizerSse2& quantizer, const uint8_t* src, uint64_t* p) {
  __m128i q0, q1;
  const __m128d ok = _mm_and_pd(quantize2_sse2(quantizer, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), q0),
                                quantize2_sse2(quantizer, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)), q1));
  if (_mm_movemask_pd(ok) != 3) return false;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), q0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2), q1);
  return true;
}

// Codes of four double deltas when all four fit; otherwise nothing is stored.
inline bool codes4_sse2(const uint64_t* deltas, uint64_t code_limit, uint8_t* codes) {
  const __m128i d0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas));
  const __m128i d1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas + 2));
  const __m128i z0 = _mm_xor_si128(_mm_slli_epi64(d0, 1), sign_epi64_sse2(d0));
  const __m128i z1 = _mm_xor_si128(_mm_slli_epi64(d1, 1), sign_epi64_sse2(d1));
  // z < code_limit <= 65536: the high halves are 0 and the low halves (unsigned) < code_limit
  const __m128i low = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(z0), _mm_castsi128_ps(z1), _MM_SHUFFLE(2, 0, 2, 0)));
  const __m128i high = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(z0), _mm_castsi128_ps(z1), _MM_SHUFFLE(3, 1, 3, 1)));
  const __m128i flip = _mm_set1_epi32(static_cast<int>(0x80000000u));
  const __m128i fits = _mm_and_si128(
      _mm_cmpeq_epi32(high, _mm_setzero_si128()),
      _mm_cmplt_epi32(_mm_xor_si128(low, flip), _mm_xor_si128(_mm_set1_epi32(static_cast<int>(code_limit)), flip)));
  if (_mm_movemask_epi8(fits) != 0xFFFF) return false;
  const __m128i packed = _mm_srai_epi32(_mm_slli_epi32(low, 16), 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), _mm_packs_epi32(packed, packed));
  return true;
}

template <typename U>
inline __m128i sub_lanes(__m128i a, __m128i b) {
  return sizeof(U) == 4 ? _mm_sub_epi32(a, b) : _mm_sub_epi64(a, b);
}
template <typename U>
inline __m128i add_lanes(__m128i a, __m128i b) {
  return sizeof(U) == 4 ? _mm_add_epi32(a, b) : _mm_add_epi64(a, b);
}
// The x difference of one of the column's rows at x (x >= 1), 16 bytes of lanes.
template <typename U>
inline __m128i x_difference(const U* r, size_t x) {
  return sub_lanes<U>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + x)),
                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + x - 1)));
}

}  // namespace fz::lorenzo::detail

#endif  // __SSE2__
