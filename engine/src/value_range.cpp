#include "value_range.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "common/blocks.hpp"
#include "common/cpu_features.hpp"
#include "fz/fz.hpp"
#include "common/float_state.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace fz::engine {
namespace {

template <typename T, typename U>
FiniteRange block_range(const uint8_t* p, size_t n, bool big_endian, std::optional<uint64_t> fill,
                        std::optional<uint64_t> missing) {
  FiniteRange r;
  for (size_t i = 0; i < n; ++i) {
    U bits;
    std::memcpy(&bits, p + i * sizeof(U), sizeof(U));
    if (big_endian) bits = sizeof(U) == 4 ? U(__builtin_bswap32(uint32_t(bits))) : U(__builtin_bswap64(uint64_t(bits)));
    if (fill && bits == static_cast<U>(*fill)) {
      r.has_fill = true;
      continue;
    }
    if (missing && bits == static_cast<U>(*missing)) {
      r.has_missing = true;
      continue;
    }
    if (bits == 0) continue;  // +0.0: possibly padding
    T x;
    std::memcpy(&x, &bits, sizeof(T));
    if (!std::isfinite(x)) continue;
    const double v = static_cast<double>(x);
    if (!r.any) {
      r.any = true;
      r.min = r.max = v;
    } else {
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
    }
  }
  return r;
}

#if defined(__SSE2__)
// Adds the per-lane minima and maxima of a vector loop to r; a lane that saw
// no value holds low = +inf > high = -inf.
template <typename T>
void add_lanes(FiniteRange& r, const T* lows, const T* highs, int lanes) {
  for (int k = 0; k < lanes; ++k) {
    if (lows[k] > highs[k]) continue;
    if (!r.any) {
      r.any = true;
      r.min = lows[k];
      r.max = highs[k];
    } else {
      r.min = std::min<double>(r.min, lows[k]);
      r.max = std::max<double>(r.max, highs[k]);
    }
  }
}

// float32, little-endian: the same set of values in SSE2, four at a time (GCC
// does not vectorise the loop above). min/max of a set do not depend on the
// order; -0.0 and +0.0 compare equal, and either gives the same range.
FiniteRange block_range_f32(const uint8_t* p, size_t n, std::optional<uint64_t> fill, std::optional<uint64_t> missing) {
  const __m128i exponent = _mm_set1_epi32(0x7F800000);
  const __m128i fill4 = _mm_set1_epi32(static_cast<int>(fill.value_or(0)));
  const __m128i missing4 = _mm_set1_epi32(static_cast<int>(missing.value_or(0)));
  const __m128 none_low = _mm_set1_ps(INFINITY), none_high = _mm_set1_ps(-INFINITY);
  __m128 low = none_low, high = none_high;
  __m128i fills = _mm_setzero_si128(), missings = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * i));
    __m128i skip = _mm_or_si128(_mm_cmpeq_epi32(_mm_and_si128(bits, exponent), exponent),
                                _mm_cmpeq_epi32(bits, _mm_setzero_si128()));
    if (fill) {
      const __m128i is_fill = _mm_cmpeq_epi32(bits, fill4);
      fills = _mm_or_si128(fills, is_fill);
      skip = _mm_or_si128(skip, is_fill);
    }
    if (missing) {
      const __m128i is_missing = _mm_cmpeq_epi32(bits, missing4);
      missings = _mm_or_si128(missings, is_missing);
      skip = _mm_or_si128(skip, is_missing);
    }
    const __m128 x = _mm_castsi128_ps(bits);
    const __m128 keep = _mm_castsi128_ps(skip);
    low = _mm_min_ps(low, _mm_or_ps(_mm_and_ps(keep, none_low), _mm_andnot_ps(keep, x)));
    high = _mm_max_ps(high, _mm_or_ps(_mm_and_ps(keep, none_high), _mm_andnot_ps(keep, x)));
  }
  alignas(16) float lows[4], highs[4];
  _mm_store_ps(lows, low);
  _mm_store_ps(highs, high);
  FiniteRange r = block_range<float, uint32_t>(p + 4 * i, n - i, false, fill, missing);
  r.has_fill |= _mm_movemask_epi8(fills) != 0;
  r.has_missing |= _mm_movemask_epi8(missings) != 0;
  add_lanes(r, lows, highs, 4);
  return r;
}

// float64, little-endian: two at a time. SSE2 has no 64-bit integer compare:
// +0.0 and the fill value are found with 32-bit compares of both halves, and
// finiteness with |x| <= DBL_MAX (false for NaN and inf).
FiniteRange block_range_f64(const uint8_t* p, size_t n, std::optional<uint64_t> fill, std::optional<uint64_t> missing) {
  const __m128i fill2 = _mm_set1_epi64x(static_cast<long long>(fill.value_or(0)));
  const __m128i missing2 = _mm_set1_epi64x(static_cast<long long>(missing.value_or(0)));
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d largest = _mm_set1_pd(DBL_MAX);
  const __m128d none_low = _mm_set1_pd(INFINITY), none_high = _mm_set1_pd(-INFINITY);
  auto equal64 = [](__m128i a, __m128i b) {
    const __m128i halves = _mm_cmpeq_epi32(a, b);
    return _mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xB1));
  };
  __m128d low = none_low, high = none_high;
  __m128i fills = _mm_setzero_si128(), missings = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * i));
    const __m128d x = _mm_castsi128_pd(bits);
    __m128d skip = _mm_or_pd(_mm_castsi128_pd(equal64(bits, _mm_setzero_si128())),
                             _mm_cmpnle_pd(_mm_and_pd(x, abs_mask), largest));
    if (fill) {
      const __m128i is_fill = equal64(bits, fill2);
      fills = _mm_or_si128(fills, is_fill);
      skip = _mm_or_pd(skip, _mm_castsi128_pd(is_fill));
    }
    if (missing) {
      const __m128i is_missing = equal64(bits, missing2);
      missings = _mm_or_si128(missings, is_missing);
      skip = _mm_or_pd(skip, _mm_castsi128_pd(is_missing));
    }
    low = _mm_min_pd(low, _mm_or_pd(_mm_and_pd(skip, none_low), _mm_andnot_pd(skip, x)));
    high = _mm_max_pd(high, _mm_or_pd(_mm_and_pd(skip, none_high), _mm_andnot_pd(skip, x)));
  }
  alignas(16) double lows[2], highs[2];
  _mm_store_pd(lows, low);
  _mm_store_pd(highs, high);
  FiniteRange r = block_range<double, uint64_t>(p + 8 * i, n - i, false, fill, missing);
  r.has_fill |= _mm_movemask_epi8(fills) != 0;
  r.has_missing |= _mm_movemask_epi8(missings) != 0;
  add_lanes(r, lows, highs, 2);
  return r;
}

// AVX2 (chosen at run time, cpu_features.hpp): the loops above, eight floats
// or four doubles a vector, two vectors a step into two sets of accumulators,
// so that two min/max chains overlap. The SSE2 loops run at ~15 GB/s here,
// bound by one chain's latency; these reach ~30 (issue 30: NOA's range pass
// was ~4% of a whole-field cuszhi-cr write). The same set of values, so the
// same range: +0.0 is never in it, and min/max of the rest do not depend on
// the order. The tail (under 16 floats or 8 doubles) goes to the SSE2 loop.
__attribute__((target("avx2"))) size_t avx2_range_f32(const uint8_t* p, size_t n, std::optional<uint64_t> fill,
                                                      std::optional<uint64_t> missing, FiniteRange& r) {
  const __m256i exponent = _mm256_set1_epi32(0x7F800000);
  const __m256i zero = _mm256_setzero_si256();
  const __m256i fill8 = _mm256_set1_epi32(static_cast<int>(fill.value_or(0)));
  const __m256i missing8 = _mm256_set1_epi32(static_cast<int>(missing.value_or(0)));
  const __m256 none_low = _mm256_set1_ps(INFINITY), none_high = _mm256_set1_ps(-INFINITY);
  __m256 low[2] = {none_low, none_low}, high[2] = {none_high, none_high};
  __m256i fills = zero, missings = zero;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int h = 0; h < 2; ++h) {  // unrolled by the compiler: two independent chains
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * (i + 8 * h)));
      __m256i skip = _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, exponent), exponent),
                                     _mm256_cmpeq_epi32(bits, zero));
      if (fill) {
        const __m256i is_fill = _mm256_cmpeq_epi32(bits, fill8);
        fills = _mm256_or_si256(fills, is_fill);
        skip = _mm256_or_si256(skip, is_fill);
      }
      if (missing) {
        const __m256i is_missing = _mm256_cmpeq_epi32(bits, missing8);
        missings = _mm256_or_si256(missings, is_missing);
        skip = _mm256_or_si256(skip, is_missing);
      }
      const __m256 x = _mm256_castsi256_ps(bits);
      const __m256 keep = _mm256_castsi256_ps(skip);
      low[h] = _mm256_min_ps(low[h], _mm256_blendv_ps(x, none_low, keep));
      high[h] = _mm256_max_ps(high[h], _mm256_blendv_ps(x, none_high, keep));
    }
  }
  alignas(32) float lows[8], highs[8];
  for (int h = 0; h < 2; ++h) {
    _mm256_store_ps(lows, low[h]);
    _mm256_store_ps(highs, high[h]);
    add_lanes(r, lows, highs, 8);
  }
  r.has_fill |= !_mm256_testz_si256(fills, fills);
  r.has_missing |= !_mm256_testz_si256(missings, missings);
  return i;
}

__attribute__((target("avx2"))) size_t avx2_range_f64(const uint8_t* p, size_t n, std::optional<uint64_t> fill,
                                                      std::optional<uint64_t> missing, FiniteRange& r) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i fill4 = _mm256_set1_epi64x(static_cast<long long>(fill.value_or(0)));
  const __m256i missing4 = _mm256_set1_epi64x(static_cast<long long>(missing.value_or(0)));
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d largest = _mm256_set1_pd(DBL_MAX);
  const __m256d none_low = _mm256_set1_pd(INFINITY), none_high = _mm256_set1_pd(-INFINITY);
  __m256d low[2] = {none_low, none_low}, high[2] = {none_high, none_high};
  __m256i fills = zero, missings = zero;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int h = 0; h < 2; ++h) {  // unrolled by the compiler: two independent chains
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8 * (i + 4 * h)));
      const __m256d x = _mm256_castsi256_pd(bits);
      // |x| > DBL_MAX (unordered included): inf and NaN
      __m256d skip = _mm256_or_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(bits, zero)),
                                  _mm256_cmp_pd(_mm256_and_pd(x, abs_mask), largest, _CMP_NLE_UQ));
      if (fill) {
        const __m256i is_fill = _mm256_cmpeq_epi64(bits, fill4);
        fills = _mm256_or_si256(fills, is_fill);
        skip = _mm256_or_pd(skip, _mm256_castsi256_pd(is_fill));
      }
      if (missing) {
        const __m256i is_missing = _mm256_cmpeq_epi64(bits, missing4);
        missings = _mm256_or_si256(missings, is_missing);
        skip = _mm256_or_pd(skip, _mm256_castsi256_pd(is_missing));
      }
      low[h] = _mm256_min_pd(low[h], _mm256_blendv_pd(x, none_low, skip));
      high[h] = _mm256_max_pd(high[h], _mm256_blendv_pd(x, none_high, skip));
    }
  }
  alignas(32) double lows[4], highs[4];
  for (int h = 0; h < 2; ++h) {
    _mm256_store_pd(lows, low[h]);
    _mm256_store_pd(highs, high[h]);
    add_lanes(r, lows, highs, 4);
  }
  r.has_fill |= !_mm256_testz_si256(fills, fills);
  r.has_missing |= !_mm256_testz_si256(missings, missings);
  return i;
}

// The AVX2 loop where the CPU has it, then the SSE2 loop on the rest.
FiniteRange vector_range(const uint8_t* p, size_t n, unsigned width, std::optional<uint64_t> fill,
                         std::optional<uint64_t> missing) {
  FiniteRange head;
  size_t done = 0;
  if (cpu_has_avx2())
    done = width == 4 ? avx2_range_f32(p, n, fill, missing, head) : avx2_range_f64(p, n, fill, missing, head);
  FiniteRange r = width == 4 ? block_range_f32(p + 4 * done, n - done, fill, missing)
                             : block_range_f64(p + 8 * done, n - done, fill, missing);
  r.has_fill |= head.has_fill;
  r.has_missing |= head.has_missing;
  if (head.any) {
    if (!r.any) {
      r.any = true;
      r.min = head.min;
      r.max = head.max;
    } else {
      r.min = std::min(r.min, head.min);
      r.max = std::max(r.max, head.max);
    }
  }
  return r;
}
#endif

FiniteRange any_block_range(const uint8_t* p, size_t n, unsigned width, bool big_endian,
                            std::optional<uint64_t> fill, std::optional<uint64_t> missing) {
#if defined(__SSE2__)
  if ((width == 4 || width == 8) && !big_endian) return vector_range(p, n, width, fill, missing);
#endif
  return width == 4 ? block_range<float, uint32_t>(p, n, big_endian, fill, missing)
                    : block_range<double, uint64_t>(p, n, big_endian, fill, missing);
}

}  // namespace

FiniteRange finite_range(ByteSpan data, unsigned width, bool big_endian, std::optional<uint64_t> fill,
                         std::optional<uint64_t> missing, const Executor& exec) {
  if (missing && fill && *missing == *fill) missing.reset();  // one special value, counted as the fill
  const size_t n = data.size / width;
  const size_t per_block = kBlockBytes / width * 16;  // 256 KiB of elements per work item
  const size_t blocks = (n + per_block - 1) / per_block;
  std::vector<FiniteRange> partial(blocks);
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t begin = b * per_block, count = std::min(per_block, n - begin);
    FloatStateGuard guard;  // DAZ would read denormals as 0 (decision 5)
    partial[b] = any_block_range(data.data + begin * width, count, width, big_endian, fill, missing);
  });
  FiniteRange total;
  for (const FiniteRange& r : partial) {
    total.has_fill |= r.has_fill;
    total.has_missing |= r.has_missing;
    if (!r.any) continue;
    if (!total.any) {
      const bool has_fill = total.has_fill, has_missing = total.has_missing;
      total = r;
      total.has_fill = has_fill;
      total.has_missing = has_missing;
    } else {
      total.min = std::min(total.min, r.min);
      total.max = std::max(total.max, r.max);
    }
  }
  return total;
}

bool contains_element(ByteSpan data, unsigned width, bool big_endian, uint64_t bits) {
  if (width != 4 && width != 8) throw Error("contains_element: width must be 4 or 8");
  const size_t n = data.size / width;
  if (big_endian) bits = width == 4 ? __builtin_bswap32(static_cast<uint32_t>(bits)) : __builtin_bswap64(bits);
  size_t i = 0;
#if defined(__SSE2__)
  // Whole 16-byte steps; a step whose 32-bit halves match is checked exactly.
  const __m128i pattern = width == 4 ? _mm_set1_epi32(static_cast<int>(bits))
                                     : _mm_set1_epi64x(static_cast<long long>(bits));
  const size_t per_step = 16 / width;
  for (; i + per_step <= n; i += per_step) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data.data + i * width));
    const unsigned equal = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi32(x, pattern)));
    if (width == 4 ? equal != 0 : ((equal & 0xFF) == 0xFF || (equal >> 8) == 0xFF)) return true;
  }
#endif
  for (; i < n; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, data.data + i * width, width);  // little-endian host
    if (v == bits) return true;
  }
  return false;
}

double noa_absolute_bound(double bound, const FiniteRange& range) {
  if (!range.any) return 0;
  FloatStateGuard guard;  // the directed roundings below assume round to nearest
  // range = max - min, rounded down: TwoSum gives the exact rounding error.
  const double a = range.max, b = -range.min;
  double span = a + b;
  const double bb = span - a;
  const double error = (a - (span - bb)) + (b - bb);
  if (error < 0) span = std::nextafter(span, 0.0);
  if (!std::isfinite(span)) span = std::numeric_limits<double>::max();
  // bound * span, rounded down: fma gives the exact error of the product.
  double eb = bound * span;
  if (std::fma(bound, span, -eb) < 0) eb = std::nextafter(eb, 0.0);
  return eb;
}

}  // namespace fz::engine
