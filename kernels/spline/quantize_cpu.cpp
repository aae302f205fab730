// The spline quantizer over a batch of points (quantize_cpu.hpp).
//
// rules::quantize is a long chain of dependent operations per element (the
// subtraction, the scaling, the rounding, the reconstruction, the bound
// check in double), so the batch loops compute four (SSE2) or eight (AVX2)
// float32 elements, or four float64 elements (AVX2), at once with the same
// operations in the same order, and branch only where rules::quantize would
// take its rare path: a lane whose |x - x'| equals the bound exactly is
// redone by rules::quantize itself. The tails, and float64 without AVX2, go
// element by element.
#include "spline/quantize_cpu.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace fz::spline::detail {
namespace {

using rules::LevelQuantizer;

template <typename T>
void quantize_scalar(const T* x, const T* p, size_t n, const LevelQuantizer<T>& lq, T* value, uint32_t* code) {
  for (size_t i = 0; i < n; ++i) {
    int32_t q;
    code[i] = rules::quantize(x[i], p[i], lq, value[i], q);
  }
}

// Lanes whose bound check came out |x - x'| == bound: rules::quantize decides them.
void redo_ties(int ties, const float* x, const float* p, const LevelQuantizer<float>& lq, float* value,
               uint32_t* code) {
  for (int k = 0; ties != 0; ++k, ties >>= 1)
    if (ties & 1) quantize_scalar(x + k, p + k, 1, lq, value + k, code + k);
}

#if defined(__SSE2__)
// The 32-bit lanes of two double-lane masks, in order.
inline __m128 narrow_masks(__m128d low, __m128d high) {
  return _mm_shuffle_ps(_mm_castpd_ps(low), _mm_castpd_ps(high), _MM_SHUFFLE(2, 0, 2, 0));
}

// Four lanes of rules::quantize: codable (not NaN/Inf, not denormal, not
// -0), q = round-half-away((x - p) * inv) below the radius, x' = p + q *
// step, |x - x'| < bound in double; otherwise code 0 and the exact value (+0
// where not finite, as rules::prediction_value). |s| by clearing the sign
// bit (rules::magnitude leaves -0 as it is, which truncates to the same q).
// Returns how many elements it did.
size_t quantize_sse2(const float* x, const float* p, size_t n, const LevelQuantizer<float>& lq, float* value,
                     uint32_t* code) {
  const __m128 inv = _mm_set1_ps(lq.inv), step = _mm_set1_ps(lq.step), half = _mm_set1_ps(0.5f);
  const __m128 radius_f = _mm_set1_ps(static_cast<float>(lq.radius)), zero = _mm_setzero_ps();
  const __m128 magnitude_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128i radius_i = _mm_set1_epi32(static_cast<int32_t>(lq.radius)), exponent_mask = _mm_set1_epi32(0xFF);
  const __m128d bound = _mm_set1_pd(lq.bound);
  const __m128d magnitude_mask_d = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 vx = _mm_loadu_ps(x + i), vp = _mm_loadu_ps(p + i);
    const __m128i bits = _mm_castps_si128(vx);
    const __m128i exponent = _mm_and_si128(_mm_srli_epi32(bits, 23), exponent_mask);
    const __m128i not_finite = _mm_cmpeq_epi32(exponent, exponent_mask);
    const __m128i denormal_or_minus_zero =  // exponent 0, bits not +0
        _mm_andnot_si128(_mm_cmpeq_epi32(bits, _mm_setzero_si128()), _mm_cmpeq_epi32(exponent, _mm_setzero_si128()));
    const __m128 exact = _mm_andnot_ps(_mm_castsi128_ps(not_finite), vx);  // rules::prediction_value
    const __m128 s = _mm_mul_ps(_mm_sub_ps(vx, vp), inv);
    const __m128 a = _mm_and_ps(s, magnitude_mask);
    __m128i t = _mm_cvttps_epi32(a);
    t = _mm_sub_epi32(t, _mm_castps_si128(_mm_cmpge_ps(_mm_sub_ps(a, _mm_cvtepi32_ps(t)), half)));
    const __m128i quantized = _mm_and_si128(_mm_castps_si128(_mm_cmplt_ps(a, radius_f)), _mm_cmplt_epi32(t, radius_i));
    const __m128i ok = _mm_andnot_si128(_mm_or_si128(not_finite, denormal_or_minus_zero), quantized);
    const __m128i negative = _mm_castps_si128(_mm_cmplt_ps(s, zero));
    const __m128i q = _mm_sub_epi32(_mm_xor_si128(t, negative), negative);
    const __m128 r = _mm_add_ps(vp, _mm_mul_ps(_mm_cvtepi32_ps(q), step));
    const __m128d low = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(vx), _mm_cvtps_pd(r)), magnitude_mask_d);
    const __m128d high = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(vx, vx)), _mm_cvtps_pd(_mm_movehl_ps(r, r))),
                                    magnitude_mask_d);
    const __m128 below = narrow_masks(_mm_cmplt_pd(low, bound), _mm_cmplt_pd(high, bound));
    const __m128 equal = narrow_masks(_mm_cmpeq_pd(low, bound), _mm_cmpeq_pd(high, bound));
    const __m128i accept = _mm_and_si128(ok, _mm_castps_si128(below));
    const __m128 v = _mm_or_ps(_mm_and_ps(_mm_castsi128_ps(accept), r), _mm_andnot_ps(_mm_castsi128_ps(accept), exact));
    _mm_storeu_ps(value + i, v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(code + i), _mm_and_si128(accept, _mm_add_epi32(q, radius_i)));
    const int ties = _mm_movemask_ps(_mm_and_ps(_mm_castsi128_ps(ok), equal));
    if (ties != 0) redo_ties(ties, x + i, p + i, lq, value + i, code + i);
  }
  return i;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// The 32-bit lanes of two double-lane masks, in order.
__attribute__((target("avx2"))) inline __m256i narrow_masks(__m256d low, __m256d high) {
  const __m256 pairs = _mm256_shuffle_ps(_mm256_castpd_ps(low), _mm256_castpd_ps(high), _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_permute4x64_epi64(_mm256_castps_si256(pairs), _MM_SHUFFLE(3, 1, 2, 0));
}

// AVX2: quantize_sse2, eight lanes per step.
__attribute__((target("avx2"))) size_t quantize_avx2(const float* x, const float* p, size_t n,
                                                     const LevelQuantizer<float>& lq, float* value, uint32_t* code) {
  const __m256 inv = _mm256_set1_ps(lq.inv), step = _mm256_set1_ps(lq.step), half = _mm256_set1_ps(0.5f);
  const __m256 radius_f = _mm256_set1_ps(static_cast<float>(lq.radius)), zero = _mm256_setzero_ps();
  const __m256 magnitude_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i radius_i = _mm256_set1_epi32(static_cast<int32_t>(lq.radius)), exponent_mask = _mm256_set1_epi32(0xFF);
  const __m256d bound = _mm256_set1_pd(lq.bound);
  const __m256d magnitude_mask_d = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vx = _mm256_loadu_ps(x + i), vp = _mm256_loadu_ps(p + i);
    const __m256i bits = _mm256_castps_si256(vx);
    const __m256i exponent = _mm256_and_si256(_mm256_srli_epi32(bits, 23), exponent_mask);
    const __m256i not_finite = _mm256_cmpeq_epi32(exponent, exponent_mask);
    const __m256i denormal_or_minus_zero = _mm256_andnot_si256(_mm256_cmpeq_epi32(bits, _mm256_setzero_si256()),
                                                               _mm256_cmpeq_epi32(exponent, _mm256_setzero_si256()));
    const __m256 exact = _mm256_andnot_ps(_mm256_castsi256_ps(not_finite), vx);
    const __m256 s = _mm256_mul_ps(_mm256_sub_ps(vx, vp), inv);
    const __m256 a = _mm256_and_ps(s, magnitude_mask);
    __m256i t = _mm256_cvttps_epi32(a);
    t = _mm256_sub_epi32(
        t, _mm256_castps_si256(_mm256_cmp_ps(_mm256_sub_ps(a, _mm256_cvtepi32_ps(t)), half, _CMP_GE_OQ)));
    const __m256i quantized = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(a, radius_f, _CMP_LT_OQ)),
                                               _mm256_cmpgt_epi32(radius_i, t));
    const __m256i ok = _mm256_andnot_si256(_mm256_or_si256(not_finite, denormal_or_minus_zero), quantized);
    const __m256i negative = _mm256_castps_si256(_mm256_cmp_ps(s, zero, _CMP_LT_OQ));
    const __m256i q = _mm256_sub_epi32(_mm256_xor_si256(t, negative), negative);
    const __m256 r = _mm256_add_ps(vp, _mm256_mul_ps(_mm256_cvtepi32_ps(q), step));
    const __m256d low = _mm256_and_pd(
        _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(vx)), _mm256_cvtps_pd(_mm256_castps256_ps128(r))),
        magnitude_mask_d);
    const __m256d high = _mm256_and_pd(
        _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(vx, 1)), _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1))),
        magnitude_mask_d);
    const __m256i below =
        narrow_masks(_mm256_cmp_pd(low, bound, _CMP_LT_OQ), _mm256_cmp_pd(high, bound, _CMP_LT_OQ));
    const __m256i equal =
        narrow_masks(_mm256_cmp_pd(low, bound, _CMP_EQ_OQ), _mm256_cmp_pd(high, bound, _CMP_EQ_OQ));
    const __m256i accept = _mm256_and_si256(ok, below);
    _mm256_storeu_ps(value + i, _mm256_blendv_ps(exact, r, _mm256_castsi256_ps(accept)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(code + i), _mm256_and_si256(accept, _mm256_add_epi32(q, radius_i)));
    const int ties = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(ok, equal)));
    if (ties != 0) redo_ties(ties, x + i, p + i, lq, value + i, code + i);
  }
  return i;
}

// Lanes whose bound check came out |x - x'| == bound: rules::quantize decides them.
void redo_ties(int ties, const double* x, const double* p, const LevelQuantizer<double>& lq, double* value,
               uint32_t* code) {
  for (int k = 0; ties != 0; ++k, ties >>= 1)
    if (ties & 1) quantize_scalar(x + k, p + k, 1, lq, value + k, code + k);
}

// AVX2, float64: four lanes of rules::quantize, each by its operations in
// double. The rounding stays in double lanes: t = trunc(a) (exact, |a| <
// radius <= 2^15 wherever it counts), t + 1 where a - t >= 0.5, q = t or 0 -
// t (0 - 0 is +0, as the scalar's int 0 converts: p + 0 * step keeps p's
// -0 only as the scalar does), then x' = p + q * step and the bound test as
// quantize_avx2 (float) does it. q + radius goes to the code by an exact
// conversion.
__attribute__((target("avx2"))) size_t quantize_avx2(const double* x, const double* p, size_t n,
                                                     const LevelQuantizer<double>& lq, double* value,
                                                     uint32_t* code) {
  const __m256d inv = _mm256_set1_pd(lq.inv), step = _mm256_set1_pd(lq.step), half = _mm256_set1_pd(0.5);
  const __m256d radius = _mm256_set1_pd(static_cast<double>(lq.radius)), zero = _mm256_setzero_pd();
  const __m256d one = _mm256_set1_pd(1.0), bound = _mm256_set1_pd(lq.bound);
  const __m256d magnitude_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m256i exponent_mask = _mm256_set1_epi64x(0x7FF);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d vx = _mm256_loadu_pd(x + i), vp = _mm256_loadu_pd(p + i);
    const __m256i bits = _mm256_castpd_si256(vx);
    const __m256i exponent = _mm256_and_si256(_mm256_srli_epi64(bits, 52), exponent_mask);
    const __m256i not_finite = _mm256_cmpeq_epi64(exponent, exponent_mask);
    const __m256i denormal_or_minus_zero = _mm256_andnot_si256(_mm256_cmpeq_epi64(bits, _mm256_setzero_si256()),
                                                               _mm256_cmpeq_epi64(exponent, _mm256_setzero_si256()));
    const __m256d exact = _mm256_andnot_pd(_mm256_castsi256_pd(not_finite), vx);
    const __m256d s = _mm256_mul_pd(_mm256_sub_pd(vx, vp), inv);
    const __m256d a = _mm256_and_pd(s, magnitude_mask);
    __m256d t = _mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    t = _mm256_add_pd(t, _mm256_and_pd(_mm256_cmp_pd(_mm256_sub_pd(a, t), half, _CMP_GE_OQ), one));
    const __m256d quantized =
        _mm256_and_pd(_mm256_cmp_pd(a, radius, _CMP_LT_OQ), _mm256_cmp_pd(t, radius, _CMP_LT_OQ));
    const __m256d ok =
        _mm256_andnot_pd(_mm256_castsi256_pd(_mm256_or_si256(not_finite, denormal_or_minus_zero)), quantized);
    const __m256d q = _mm256_blendv_pd(t, _mm256_sub_pd(zero, t), _mm256_cmp_pd(s, zero, _CMP_LT_OQ));
    const __m256d r = _mm256_add_pd(vp, _mm256_mul_pd(q, step));
    const __m256d error = _mm256_and_pd(_mm256_sub_pd(vx, r), magnitude_mask);
    const __m256d accept = _mm256_and_pd(ok, _mm256_cmp_pd(error, bound, _CMP_LT_OQ));
    _mm256_storeu_pd(value + i, _mm256_blendv_pd(exact, r, accept));
    const __m256d code_d = _mm256_and_pd(accept, _mm256_add_pd(q, radius));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(code + i), _mm256_cvttpd_epi32(code_d));
    const int ties = _mm256_movemask_pd(_mm256_and_pd(ok, _mm256_cmp_pd(error, bound, _CMP_EQ_OQ)));
    if (ties != 0) redo_ties(ties, x + i, p + i, lq, value + i, code + i);
  }
  return i;
}
#endif

}  // namespace

template <>
void quantize_batch<float>(const float* x, const float* p, size_t n, const LevelQuantizer<float>& lq, bool avx2,
                           float* value, uint32_t* code) {
  size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) done = quantize_avx2(x, p, n, lq, value, code);
#else
  (void)avx2;
#endif
#if defined(__SSE2__)
  done += quantize_sse2(x + done, p + done, n - done, lq, value + done, code + done);
#endif
  quantize_scalar(x + done, p + done, n - done, lq, value + done, code + done);
}

template <>
void quantize_batch<double>(const double* x, const double* p, size_t n, const LevelQuantizer<double>& lq, bool avx2,
                            double* value, uint32_t* code) {
  size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (avx2) done = quantize_avx2(x, p, n, lq, value, code);
#else
  (void)avx2;
#endif
  quantize_scalar(x + done, p + done, n - done, lq, value + done, code + done);
}

}  // namespace fz::spline::detail
