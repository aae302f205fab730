// CPU direct quantizer (stream format: quantize.hpp, FORMAT.md).
//
// Work is cut into the 16 KiB blocks of common/blocks.hpp (4096 float32 or 2048
// float64 elements). Each block writes its codes in place and collects its
// outliers; the outliers are then concatenated in block order, so the streams
// are the same bytes for any thread count (specs/algorithms.md, decision 4).
//
// Why the bound is strict. The encoder computes x' with exactly the decoder's
// operations in the element's own precision T (float for float32, double for
// float64; the build has -ffp-contract=off, so `(T)b * step` is one rounded
// multiplication on both sides). It then decides |x - x'| <= B, with B the
// user's bound (ABS), a double below eb*(max-min) (NOA) or eb*|x| (REL), in
// real arithmetic, using doubles only (see within_abs / within_rel). An element that fails,
// or whose code would not fit, is an outlier and is stored bit-exactly.
#include "quantize/quantize.hpp"
#include "quantize/quantize_plan.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/blocks.hpp"
#include "common/cpu_features.hpp"
#include "common/error.hpp"
#include "common/float_state.hpp"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize {
namespace {

using namespace rules;  // format constants and code mapping, shared with the GPU

template <typename T>
T from_bits(UintOf<T> u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <typename T>
UintOf<T> to_bits(T v) {
  UintOf<T> u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}


template <typename T>
bool is_nan_or_inf(UintOf<T> bits) {
  return (bits & kExponentMask<T>) == kExponentMask<T>;
}
// Zero exponent field and not +0: -0 or a denormal.
template <typename T>
bool is_denormal_or_negative_zero(UintOf<T> bits) {
  return (bits & kExponentMask<T>) == 0 && bits != 0;
}

// ---------------------------------------------------------------------------
// The exact acceptance test. Let d = x - x' and p = the bound, both real.
// dh = fl(|d|) is one correctly rounded subtraction and ph = fl(p) one correctly
// rounded multiplication (or p itself). Rounding is monotone, so
//   dh < ph  implies |d| <= p   (if |d| > p then fl|d| >= fl(p)),
//   dh > ph  implies |d| > p    (if |d| <= p then fl|d| <= fl(p)), NaN/inf reject.
// Only a tie dh == ph needs the rounding errors: TwoSum gives dl with
// dh + dl = |d| exactly (no products, so contraction cannot spoil it) and fma
// gives pl with ph + pl = p exactly (exact whenever ph is far from underflow;
// below 2^-900 a tie is rejected, which is merely conservative). Then
// |d| <= p  iff  dl <= pl. Float data is converted to double first (exact).

// True iff |x - xr| <= bound exactly (bound itself exact, a double).
inline bool within_abs(double x, double xr, double bound) {
  const double d = x - xr;
  const double ad = std::fabs(d);
  if (ad < bound) return true;
  if (!(ad == bound)) return false;
  const double bb = d - x;  // TwoSum(x, -xr)
  double dl = (x - (d - bb)) + (-xr - bb);
  if (d < 0) dl = -dl;
  return dl <= 0;
}

// True iff |a - r| <= eb * a exactly, for a > 0.
inline bool within_rel(double a, double r, double eb) {
  const double d = a - r;
  const double ad = std::fabs(d);
  const double ph = eb * a;
  if (ad < ph) return true;
  if (!(ad == ph)) return false;
  if (ph < 0x1p-900) return false;  // fma's error term might not be representable
  const double pl = std::fma(eb, a, -ph);
  const double bb = d - a;  // TwoSum(a, -r)
  double dl = (a - (d - bb)) + (-r - bb);
  if (d < 0) dl = -dl;
  return dl <= pl;
}

// ---------------------------------------------------------------------------
// Lg / Pw of specs/algorithms.md section 5: Mitchell's log2 and its inverse by
// bit manipulation, IEEE additions only (identical on CPU and GPU, no libm).

// a: positive normal. Lg(a) = float(1.M) + (E - bias - 1) = (E - bias) + 0.M, one rounding.
template <typename T>
T lg(T a) {
  const UintOf<T> bits = to_bits(a);
  const int e = static_cast<int>(bits >> Traits<T>::kMantissaBits);
  const T one_m = from_bits<T>((UintOf<T>{Traits<T>::kBias} << Traits<T>::kMantissaBits) | (bits & kMantissaMask<T>));
  return one_m + static_cast<T>(e - (Traits<T>::kBias + 1));
}

// t = l + bias; E' = trunc(t); f = t - (E' - 1) in [1, 2]; bits = E' << mant | mantissa(f).
// Returns false when E' is not the exponent of a finite normal (the integer
// conversion is only done once t is known to be in range).
template <typename T>
bool pw(T l, T& out) {
  const T t = l + static_cast<T>(Traits<T>::kBias);
  if (!(t >= T(1) && t < static_cast<T>(Traits<T>::kMaxBiased + 1))) return false;
  const int64_t e = static_cast<int64_t>(t);
  const T f = t - static_cast<T>(e - 1);
  out = from_bits<T>((static_cast<UintOf<T>>(e) << Traits<T>::kMantissaBits) | (to_bits(f) & kMantissaMask<T>));
  return true;
}

// ---------------------------------------------------------------------------
// Setup: what encoder and decoder agree on.

template <typename T>
struct Plan {
  Method method = Method::kQuantized;
  T step = 0;         // eb2 (ABS/NOA), L (REL), the constant (CONSTANT)
  T inverse = 0;      // inv = 0.5/eb_w (ABS/NOA), 1/L (REL); encoder only
  double check = 0;   // the bound the exact test uses (ABS/NOA), eb (REL)
  double enforced = 0;
};

// Largest T <= v (v > 0 finite); for float this rounds the double toward zero.
template <typename T>
T round_down(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    if (v >= static_cast<double>(FLT_MAX)) return FLT_MAX;
    float f = static_cast<float>(v);
    if (static_cast<double>(f) > v) f = std::nextafter(f, 0.0f);
    return f;
  }
}

// ABS with an exact double bound B: eb_w = B rounded toward zero into T and at
// most 2^(emax-2) (so eb2 = 2 eb_w is finite and inv = 0.5/eb_w is normal).
// Below the smallest normal, inv would overflow: the chunk goes LOSSLESS.
template <typename T>
Plan<T> abs_plan(double bound) {
  Plan<T> plan;
  constexpr T kMaxWorking = static_cast<T>(std::numeric_limits<T>::max_exponent == 128 ? 0x1p125 : 0x1p1021);
  T eb_w = round_down<T>(bound);
  if (eb_w > kMaxWorking) eb_w = kMaxWorking;
  if (!(eb_w >= std::numeric_limits<T>::min())) {
    plan.method = Method::kLossless;
    return plan;
  }
  plan.step = eb_w * T(2);
  plan.inverse = T(0.5) / eb_w;
  plan.check = bound;
  plan.enforced = bound;
  return plan;
}

// REL: 1+eb rounded toward zero into T (eb capped at 1, where steps stop making
// sense; the exact test still uses the user's eb), L = 2 Lg(1+eb) = 2 (1+eb - 1).
// If 1+eb rounds to 1 the type cannot resolve the bound: LOSSLESS.
template <typename T>
Plan<T> rel_plan(double eb) {
  Plan<T> plan;
  const double e = eb < 1.0 ? eb : 1.0;
  const double hi = 1.0 + e;
  const double lo = e - (hi - 1.0);  // exact (Fast2Sum, 1 >= e)
  T one_plus = static_cast<T>(hi);
  if (static_cast<double>(one_plus) > hi || (static_cast<double>(one_plus) == hi && lo < 0))
    one_plus = std::nextafter(one_plus, T(0));
  const T step = T(2) * lg(one_plus);
  if (!(step > T(0))) {
    plan.method = Method::kLossless;
    return plan;
  }
  plan.step = step;
  plan.inverse = T(1) / step;
  plan.check = eb;
  plan.enforced = eb;
  return plan;
}

// A double E <= eb * (max - min) in real arithmetic, as large as practical;
// 0 if none can be had above the smallest normal double.
double noa_bound(double eb, double max, double min) {
  double r = max - min;
  double e0;
  bool exact = false;
  if (std::isfinite(r)) {
    const double bb = r - max;
    const double rl = (max - (r - bb)) + (-min - bb);
    e0 = eb * r;
    exact = rl == 0;
  } else {  // the range overflows a double: halve (exact for these magnitudes)
    r = max * 0.5 - min * 0.5;
    e0 = (eb * r) * 2.0;
  }
  if (std::isinf(e0)) return DBL_MAX;  // the real bound exceeds DBL_MAX
  if (!(e0 >= DBL_MIN)) return 0;
  if (exact && e0 >= 0x1p-900) {
    // e0 = fl(eb*r): fma gives the sign of eb*r - e0 exactly; the real value
    // lies within half an ulp of e0, so one step down is below it.
    return std::fma(eb, r, -e0) >= 0 ? e0 : std::nextafter(e0, 0.0);
  }
  // Two roundings (range and product), each <= 2^-53 relative: the real value is
  // >= e0 (1 - 2^-52); four steps down remove at least 2^-51 e0.
  for (int i = 0; i < 4; ++i) e0 = std::nextafter(e0, 0.0);
  return e0 >= DBL_MIN ? e0 : 0;
}

// ---------------------------------------------------------------------------
// Encoding.

template <typename T>
struct BlockOutput {
  std::vector<UintOf<T>> outliers;
};

// zigzag(b) + 1, or 0 (outlier) when it would not fit the code range.
template <typename T>
UintOf<T> abs_code(int64_t b) {
  const uint64_t z = zigzag(b);
  return z <= kAbsMaxZigzag<T> ? static_cast<UintOf<T>>(z + 1) : 0;
}

// The code of one element (0: outlier), the reference every faster path must
// reproduce bit for bit.
template <typename T>
UintOf<T> encode_abs_element(UintOf<T> bits, const Plan<T>& plan, bool has_fill, UintOf<T> fill) {
  // NaN, inf, denormals, -0 and the fill value are outliers (bit-exact).
  if (is_nan_or_inf<T>(bits) || is_denormal_or_negative_zero<T>(bits) || (has_fill && bits == fill)) return 0;
  const T x = from_bits<T>(bits);
  const T s = x * plan.inverse;
  if (!(std::fabs(s) < kAbsLimit<T>)) return 0;
  const int64_t b = static_cast<int64_t>(std::round(s));  // half away from zero
  // (T)b is exact: |b| < 2^mantissa, or b = s already an integer in T.
  const T xr = static_cast<T>(b) * plan.step;  // the decoder's expression
  if (within_abs(static_cast<double>(x), static_cast<double>(xr), plan.check)) return abs_code<T>(b);
  if (xr == xr) {
    // x * inv rounds (by up to half an ulp of s, many bins when |s| is large
    // for float), so x may sit just past a bin edge: the neighbouring bin
    // toward x often passes. The decoder does not care which bin was chosen.
    const int64_t b2 = x > xr ? b + 1 : b - 1;
    const T xr2 = static_cast<T>(b2) * plan.step;
    if (within_abs(static_cast<double>(x), static_cast<double>(xr2), plan.check)) return abs_code<T>(b2);
  }
  return 0;
}

template <typename T>
void encode_abs_elements(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                         UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    const U code = encode_abs_element<T>(bits, plan, has_fill, fill);
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

#if defined(__SSE2__)
// SSE2 fast paths (GCC does not vectorise the element loop: it calls roundf and
// branches). A group of elements is coded here only when every one of them is
// an ordinary element whose first candidate passes the exact test with room
// to spare (|x - x'| < bound, no tie); any other group goes through
// encode_abs_element, so the codes are the reference's, bit for bit:
//  - round half away from zero as trunc(s + copysign(0.49999997f, s)) equals
//    std::round for every float with |s| < 2^29 (checked exhaustively; the
//    double form floor(|s| + 0.49999999999999994) is the classic exact one);
//  - (T)b * step and the double difference are the reference's operations.
size_t encode_abs_fast(const uint8_t* in, size_t n, uint8_t* codes, const Plan<float>& plan, bool has_fill,
                       uint32_t fill, std::vector<uint32_t>& outliers) {
  const __m128i exponent = _mm_set1_epi32(0x7F800000), fill4 = _mm_set1_epi32(static_cast<int>(fill));
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128 sign_mask = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(0x80000000u)));
  const __m128 half_down = _mm_set1_ps(0.49999997f), limit = _mm_set1_ps(kAbsLimit<float>);
  const __m128 inverse = _mm_set1_ps(plan.inverse), step = _mm_set1_ps(plan.step);
  const __m128d abs_mask_d = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d check = _mm_set1_pd(plan.check);
  const __m128i one = _mm_set1_epi32(1);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * i));
    const __m128i e = _mm_and_si128(bits, exponent);
    // Ordinary: finite, and normal or +0; and not the fill value.
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi32(e, exponent),
                               _mm_andnot_si128(_mm_cmpeq_epi32(bits, _mm_setzero_si128()),
                                                _mm_cmpeq_epi32(e, _mm_setzero_si128())));
    if (has_fill) bad = _mm_or_si128(bad, _mm_cmpeq_epi32(bits, fill4));
    const __m128 x = _mm_castsi128_ps(bits);
    const __m128 s = _mm_mul_ps(x, inverse);
    const __m128 in_range = _mm_cmplt_ps(_mm_and_ps(s, abs_mask), limit);
    const __m128i b = _mm_cvttps_epi32(_mm_add_ps(s, _mm_or_ps(half_down, _mm_and_ps(s, sign_mask))));
    const __m128 xr = _mm_mul_ps(_mm_cvtepi32_ps(b), step);
    const __m128d d_low = _mm_sub_pd(_mm_cvtps_pd(x), _mm_cvtps_pd(xr));
    const __m128d d_high = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), _mm_cvtps_pd(_mm_movehl_ps(xr, xr)));
    const __m128d ok_low = _mm_cmplt_pd(_mm_and_pd(d_low, abs_mask_d), check);
    const __m128d ok_high = _mm_cmplt_pd(_mm_and_pd(d_high, abs_mask_d), check);
    const __m128 ok = _mm_shuffle_ps(_mm_castpd_ps(ok_low), _mm_castpd_ps(ok_high), _MM_SHUFFLE(2, 0, 2, 0));
    const __m128 accept = _mm_andnot_ps(_mm_castsi128_ps(bad), _mm_and_ps(in_range, ok));
    if (_mm_movemask_ps(accept) == 0xF) {
      const __m128i zigzag = _mm_xor_si128(_mm_slli_epi32(b, 1), _mm_srai_epi32(b, 31));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 4 * i), _mm_add_epi32(zigzag, one));
    } else {
      encode_abs_elements<float>(in + 4 * i, 4, codes + 4 * i, plan, has_fill, fill, outliers);
    }
  }
  return i;
}

size_t encode_abs_fast(const uint8_t* in, size_t n, uint8_t* codes, const Plan<double>& plan, bool has_fill,
                       uint64_t fill, std::vector<uint64_t>& outliers) {
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d sign_mask = _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(0x8000000000000000ull)));
  const __m128d smallest = _mm_set1_pd(DBL_MIN), largest = _mm_set1_pd(DBL_MAX);
  const __m128d half_down = _mm_set1_pd(0.49999999999999994), limit = _mm_set1_pd(0x1p50);
  const __m128d two52 = _mm_set1_pd(0x1p52), unit = _mm_set1_pd(1.0);
  const __m128d inverse = _mm_set1_pd(plan.inverse), step = _mm_set1_pd(plan.step), check = _mm_set1_pd(plan.check);
  const __m128i magic_bits = _mm_set1_epi64x(0x4338000000000000ll);  // 1.5 * 2^52
  const __m128d magic = _mm_castsi128_pd(magic_bits);
  const __m128i fill2 = _mm_set1_epi64x(static_cast<long long>(fill)), one = _mm_set1_epi64x(1);
  auto equal64 = [](__m128i a, __m128i b) {  // SSE2 has no 64-bit compare
    const __m128i halves = _mm_cmpeq_epi32(a, b);
    return _mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xB1));
  };
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 8 * i));
    const __m128d x = _mm_castsi128_pd(bits);
    const __m128d ax = _mm_and_pd(x, abs_mask);
    // Ordinary: normal (NaN fails both compares) or +0; and not the fill value.
    __m128d good = _mm_or_pd(_mm_and_pd(_mm_cmpge_pd(ax, smallest), _mm_cmple_pd(ax, largest)),
                             _mm_castsi128_pd(equal64(bits, _mm_setzero_si128())));
    if (has_fill) good = _mm_andnot_pd(_mm_castsi128_pd(equal64(bits, fill2)), good);
    const __m128d s = _mm_mul_pd(x, inverse);
    const __m128d as = _mm_and_pd(s, abs_mask);
    const __m128d in_range = _mm_cmplt_pd(as, limit);  // |b| < 2^50: the magic conversions below are exact
    const __m128d y = _mm_add_pd(as, half_down);
    __m128d r = _mm_sub_pd(_mm_add_pd(y, two52), two52);  // y rounded to an integer
    r = _mm_sub_pd(r, _mm_and_pd(_mm_cmpgt_pd(r, y), unit));  // floor(y)
    const __m128d b = _mm_or_pd(r, _mm_and_pd(s, sign_mask));
    const __m128d xr = _mm_mul_pd(b, step);
    const __m128d ok = _mm_cmplt_pd(_mm_and_pd(_mm_sub_pd(x, xr), abs_mask), check);
    const __m128d accept = _mm_and_pd(good, _mm_and_pd(in_range, ok));
    if (_mm_movemask_pd(accept) == 0x3) {
      const __m128i b_int = _mm_sub_epi64(_mm_castpd_si128(_mm_add_pd(b, magic)), magic_bits);
      const __m128i negative = _mm_castpd_si128(_mm_cmplt_pd(b, _mm_setzero_pd()));
      const __m128i zigzag = _mm_xor_si128(_mm_slli_epi64(b_int, 1), negative);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 8 * i), _mm_add_epi64(zigzag, one));
    } else {
      encode_abs_elements<double>(in + 8 * i, 2, codes + 8 * i, plan, has_fill, fill, outliers);
    }
  }
  return i;
}
#endif

template <typename T>
void encode_abs_block(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                      UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  size_t done = 0;
#if defined(__SSE2__)
  done = encode_abs_fast(in, n, codes, plan, has_fill, fill, outliers);
#endif
  encode_abs_elements<T>(in + done * sizeof(T), n - done, codes + done * sizeof(T), plan, has_fill, fill, outliers);
}

template <typename T>
void encode_rel_block(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                      UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    U code = 0;
    const U magnitude = bits & ~kSignBit<T>;
    if (has_fill && bits == fill) {
      code = 0;
    } else if (magnitude == 0) {
      code = bits == 0 ? 1 : 2;  // +0, -0: exact
    } else if (!is_nan_or_inf<T>(bits) && (bits & kExponentMask<T>) != 0) {
      const T a = from_bits<T>(magnitude);
      const T s = lg(a) * plan.inverse;
      if (std::fabs(s) < kRelLimit<T>) {
        const int64_t b = static_cast<int64_t>(std::round(s));
        const uint64_t z = zigzag(b);
        T r;
        if (z <= kRelMaxZigzag<T> && pw(static_cast<T>(b) * plan.step, r) &&
            within_rel(static_cast<double>(a), static_cast<double>(r), plan.check))
          code = static_cast<U>(3 + ((z << 1) | (bits >> (8 * sizeof(T) - 1))));
      }
    }
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

template <typename T>
void encode_constant_block(const uint8_t* in, size_t n, uint8_t* codes, UintOf<T> base,
                           std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    const U code = bits == base ? 1 : 0;  // base is finite and not the fill value
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

struct Range {
  size_t count = 0;  // finite, non-fill values
  double min = 0, max = 0;
  size_t first = 0;  // element index of the first one
};

// NOA's range over finite non-fill values: min/max of a set, so the result does
// not depend on the block order; blocks are combined in index order anyway.
template <typename T>
Range finite_range(ByteSpan in, bool has_fill, UintOf<T> fill, const Executor& exec) {
  using U = UintOf<T>;
  const size_t blocks = block_count(in.size);
  std::vector<Range> partial(blocks);
  exec.parallel_for(blocks, [&](size_t block) {
    FloatStateGuard env;
    const size_t per_block = kBlockBytes / sizeof(T);
    const size_t n = block_length(in.size, block) / sizeof(T);
    const uint8_t* p = in.data + block * kBlockBytes;
    Range r;
    T lo = 0, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      const U bits = load_le<U>(p + i * sizeof(T));
      if (is_nan_or_inf<T>(bits) || (has_fill && bits == fill)) continue;
      const T x = from_bits<T>(bits);
      if (r.count == 0) {
        lo = hi = x;
        r.first = block * per_block + i;
      } else {
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
      }
      ++r.count;
    }
    r.min = lo;
    r.max = hi;
    partial[block] = r;
  });
  Range total;
  for (const Range& r : partial) {
    if (r.count == 0) continue;
    if (total.count == 0) {
      total = r;
    } else {
      total.min = r.min < total.min ? r.min : total.min;
      total.max = r.max > total.max ? r.max : total.max;
      total.count += r.count;
    }
  }
  return total;
}

void write_params(Bytes& out, Mode mode, unsigned width, Method method, uint64_t count, uint64_t step_bits,
                  double user_bound, double enforced) {
  out.resize(kParamsBytes);
  detail::write_params_bytes(out.data(), mode, width, method, count, step_bits, user_bound, enforced);
}

// The encoder of one chunk: the plan is made from the whole input (NOA's
// range), then each block's codes are written on their own and its outliers
// kept apart, to be concatenated in block order at the end.
template <typename T>
class TypedEncoder final : public BlockwiseEncoder::Impl {
 public:
  using U = UintOf<T>;

  TypedEncoder(ByteSpan in, const Config& config, const Executor& exec)
      : in_(in), config_(config), count_(in.size / sizeof(T)), has_fill_(config.fill.has_value()),
        fill_(has_fill_ ? static_cast<U>(*config.fill) : 0) {
    FloatStateGuard env;
    if (config.mode == Mode::kAbs) {
      plan_ = abs_plan<T>(config.bound);
    } else if (config.mode == Mode::kRel) {
      plan_ = rel_plan<T>(config.bound);
    } else {
      const Range range = finite_range<T>(in, has_fill_, fill_, exec);
      if (range.count == 0) {
        plan_.method = Method::kLossless;  // nothing but NaN/inf/fill: all stored exactly
      } else if (range.max == range.min) {
        // Every finite non-fill value equals min (up to the sign of zero): one
        // code for the bits of the first of them, the rest (other zero, NaN,
        // inf, fill) are outliers. The bound eb*0 = 0 holds exactly.
        plan_.method = Method::kConstant;
        plan_.step = from_bits<T>(load_le<U>(in.data + range.first * sizeof(T)));
      } else {
        const double bound = noa_bound(config.bound, range.max, range.min);
        plan_ = abs_plan<T>(bound);  // LOSSLESS when the bound underflows T's normals
      }
    }
    if (plan_.method != Method::kLossless) block_outliers_.resize(block_count(count_ * sizeof(T)));
  }

  size_t codes_bytes() const override { return lossless() ? 0 : count_ * sizeof(T); }

  void encode_block(size_t block, uint8_t* codes) override {
    FloatStateGuard env;
    const size_t begin = block * kBlockBytes;
    const size_t n = block_length(count_ * sizeof(T), block) / sizeof(T);
    std::vector<U>& outliers = block_outliers_[block];
    outliers.clear();
    if (plan_.method == Method::kConstant)
      encode_constant_block<T>(in_.data + begin, n, codes, to_bits(plan_.step), outliers);
    else if (config_.mode == Mode::kRel)
      encode_rel_block<T>(in_.data + begin, n, codes, plan_, has_fill_, fill_, outliers);
    else
      encode_abs_block<T>(in_.data + begin, n, codes, plan_, has_fill_, fill_, outliers);
  }

  void finish(Bytes& outliers, Bytes& params) override {
    const uint64_t step_bits = lossless() ? 0 : to_bits(plan_.step);
    const double enforced = plan_.method == Method::kQuantized ? plan_.enforced : 0.0;
    write_params(params, config_.mode, config_.width, plan_.method, count_, step_bits, config_.bound, enforced);
    if (lossless()) {
      outliers.assign(in_.data, in_.data + count_ * sizeof(T));
      return;
    }
    size_t total = 0;
    for (const auto& o : block_outliers_) total += o.size();
    outliers.resize(total * sizeof(T));
    size_t at = 0;
    for (auto& o : block_outliers_) {
      for (U bits : o) {
        store_le<U>(outliers.data() + at, bits);
        at += sizeof(T);
      }
      std::vector<U>().swap(o);
    }
  }

 private:
  ByteSpan in_;
  Config config_;
  uint64_t count_;
  bool has_fill_;
  U fill_;
  Plan<T> plan_;
  std::vector<std::vector<U>> block_outliers_;

  bool lossless() const { return plan_.method == Method::kLossless; }
};

// ---------------------------------------------------------------------------
// Decoding.

template <typename T>
void check_params_typed(const Params& p) {
  using U = UintOf<T>;
  const T step = from_bits<T>(static_cast<U>(p.step_bits));
  require_format(p.step_bits <= std::numeric_limits<U>::max(), "quantize: step wider than the element");
  switch (p.method) {
    case Method::kLossless:
      require_format(p.step_bits == 0 && p.enforced_bound == 0, "quantize: lossless params carry a step");
      break;
    case Method::kConstant:
      require_format(p.mode == Mode::kNoa, "quantize: constant method outside NOA");
      require_format(!is_nan_or_inf<T>(static_cast<U>(p.step_bits)), "quantize: constant is not finite");
      require_format(p.enforced_bound == 0, "quantize: constant params carry a bound");
      break;
    case Method::kQuantized:
      require_format(std::isfinite(p.enforced_bound) && p.enforced_bound > 0, "quantize: bad enforced bound");
      if (p.mode == Mode::kRel) {
        require_format(step > T(0) && step <= T(2), "quantize: REL step out of range");
      } else {
        constexpr T kMaxStep = static_cast<T>(std::numeric_limits<T>::max_exponent == 128 ? 0x1p126 : 0x1p1022);
        require_format(step >= T(2) * std::numeric_limits<T>::min() && step <= kMaxStep,
                       "quantize: ABS/NOA step out of range");
      }
      break;
  }
}

// ABS/NOA codes of one block: every element gets (T)unzigzag(code - 1) * step,
// outliers (code 0) included, in a loop without data-dependent branches that
// the compiler vectorises; the outliers are written over afterwards. Returns
// the number of zero codes; false in `ok` when a code is out of range.
// ABS/NOA codes of one block: every element gets (T)unzigzag(code - 1) * step,
// outliers (code 0) included, without data-dependent branches; the outliers
// are written over afterwards. Returns the number of zero codes; `ok` false
// when a code is out of range. GCC does not vectorise this loop for x86-64's
// baseline SSE2 (no unsigned or 64-bit compares, no int64 -> double), so the
// SSE2 loops below are written out; the scalar loop does the tail and the
// other targets and gives the same values.
template <typename T>
size_t decode_abs_values_scalar(const uint8_t* codes, size_t n, uint8_t* out, T step, UintOf<T>& out_of_range) {
  using U = UintOf<T>;
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    const U code = load_le<U>(codes + i * sizeof(T));
    const U z = static_cast<U>(code - 1);
    zeros += code == 0;
    out_of_range |= static_cast<U>((code != 0) & (z > static_cast<U>(kAbsMaxZigzag<T>)));
    store_le<U>(out + i * sizeof(T), to_bits(static_cast<T>(unzigzag(z)) * step));
  }
  return zeros;
}

#if defined(__SSE2__)
// float: z < 2^30 for a valid code, so unzigzag fits int32 and cvtdq2ps is the
// same correctly rounded conversion as the scalar int64 -> float.
size_t decode_abs_values_sse2(const uint8_t* codes, size_t n, uint8_t* out, float step, uint32_t& out_of_range,
                              size_t& done) {
  const __m128i one = _mm_set1_epi32(1);
  const __m128 step4 = _mm_set1_ps(step);
  __m128i zero_count = _mm_setzero_si128(), high = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i code = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 4 * i));
    const __m128i is_zero = _mm_cmpeq_epi32(code, _mm_setzero_si128());
    const __m128i z = _mm_sub_epi32(code, one);
    high = _mm_or_si128(high, _mm_andnot_si128(is_zero, z));
    zero_count = _mm_sub_epi32(zero_count, is_zero);
    const __m128i b = _mm_xor_si128(_mm_srli_epi32(z, 1), _mm_sub_epi32(_mm_setzero_si128(), _mm_and_si128(z, one)));
    _mm_storeu_ps(reinterpret_cast<float*>(out + 4 * i), _mm_mul_ps(_mm_cvtepi32_ps(b), step4));
  }
  alignas(16) uint32_t lanes[4], bits[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), zero_count);
  _mm_store_si128(reinterpret_cast<__m128i*>(bits), high);
  out_of_range |= ((bits[0] | bits[1] | bits[2] | bits[3]) > kAbsMaxZigzag<float>) ? 1u : 0u;
  done = i;
  return size_t{lanes[0]} + lanes[1] + lanes[2] + lanes[3];
}

// double: the magic-number conversion, exact for |b| < 2^51: the bits of
// 1.5*2^52 + b, as a double, minus 1.5*2^52, is b. Blocks with a larger code
// (never seen from real bounds) redo the scalar loop, which converts exactly
// or correctly rounded; both give the same value where both apply.
size_t decode_abs_values_sse2(const uint8_t* codes, size_t n, uint8_t* out, double step, uint64_t& out_of_range,
                              size_t& done) {
  constexpr uint64_t kMagicBits = 0x4338000000000000ull;  // 1.5 * 2^52
  const __m128i one = _mm_set1_epi64x(1), magic_bits = _mm_set1_epi64x(static_cast<long long>(kMagicBits));
  const __m128d magic = _mm_castsi128_pd(magic_bits), step2 = _mm_set1_pd(step);
  __m128i zero_count = _mm_setzero_si128(), high = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i code = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 8 * i));
    const __m128i half_zero = _mm_cmpeq_epi32(code, _mm_setzero_si128());
    const __m128i is_zero = _mm_and_si128(half_zero, _mm_shuffle_epi32(half_zero, 0xB1));  // both halves zero
    const __m128i z = _mm_sub_epi64(code, one);
    high = _mm_or_si128(high, _mm_andnot_si128(is_zero, z));
    zero_count = _mm_sub_epi64(zero_count, is_zero);
    const __m128i b = _mm_xor_si128(_mm_srli_epi64(z, 1), _mm_sub_epi64(_mm_setzero_si128(), _mm_and_si128(z, one)));
    const __m128d value = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(b, magic_bits)), magic);
    _mm_storeu_pd(reinterpret_cast<double*>(out + 8 * i), _mm_mul_pd(value, step2));
  }
  alignas(16) uint64_t lanes[2], bits[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), zero_count);
  _mm_store_si128(reinterpret_cast<__m128i*>(bits), high);
  const uint64_t coded = bits[0] | bits[1];
  out_of_range |= coded > kAbsMaxZigzag<double> ? 1u : 0u;
  if (coded >> 52) {  // some |b| >= 2^51: convert the whole block the general way
    done = 0;
    return 0;
  }
  done = i;
  return lanes[0] + lanes[1];
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// AVX2: the SSE2 loops above, four doubles or eight floats per step; the same
// operations, so the same values (common/cpu_features.hpp).
__attribute__((target("avx2"))) size_t decode_abs_values_avx2(const uint8_t* codes, size_t n, uint8_t* out,
                                                              float step, uint32_t& out_of_range, size_t& done) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256 step8 = _mm256_set1_ps(step);
  __m256i zero_count = _mm256_setzero_si256(), high = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i code = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 4 * i));
    const __m256i is_zero = _mm256_cmpeq_epi32(code, _mm256_setzero_si256());
    const __m256i z = _mm256_sub_epi32(code, one);
    high = _mm256_or_si256(high, _mm256_andnot_si256(is_zero, z));
    zero_count = _mm256_sub_epi32(zero_count, is_zero);
    const __m256i b =
        _mm256_xor_si256(_mm256_srli_epi32(z, 1), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_and_si256(z, one)));
    _mm256_storeu_ps(reinterpret_cast<float*>(out + 4 * i), _mm256_mul_ps(_mm256_cvtepi32_ps(b), step8));
  }
  alignas(32) uint32_t lanes[8], bits[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), zero_count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(bits), high);
  uint32_t any = 0;
  size_t zeros = 0;
  for (int k = 0; k < 8; ++k) any |= bits[k], zeros += lanes[k];
  out_of_range |= any > kAbsMaxZigzag<float> ? 1u : 0u;
  done = i;
  return zeros;
}

__attribute__((target("avx2"))) size_t decode_abs_values_avx2(const uint8_t* codes, size_t n, uint8_t* out,
                                                              double step, uint64_t& out_of_range, size_t& done) {
  constexpr uint64_t kMagicBits = 0x4338000000000000ull;  // 1.5 * 2^52
  const __m256i one = _mm256_set1_epi64x(1), magic_bits = _mm256_set1_epi64x(static_cast<long long>(kMagicBits));
  const __m256d magic = _mm256_castsi256_pd(magic_bits), step4 = _mm256_set1_pd(step);
  __m256i zero_count = _mm256_setzero_si256(), high = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i code = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 8 * i));
    const __m256i is_zero = _mm256_cmpeq_epi64(code, _mm256_setzero_si256());
    const __m256i z = _mm256_sub_epi64(code, one);
    high = _mm256_or_si256(high, _mm256_andnot_si256(is_zero, z));
    zero_count = _mm256_sub_epi64(zero_count, is_zero);
    const __m256i b =
        _mm256_xor_si256(_mm256_srli_epi64(z, 1), _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(z, one)));
    const __m256d value = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(b, magic_bits)), magic);
    _mm256_storeu_pd(reinterpret_cast<double*>(out + 8 * i), _mm256_mul_pd(value, step4));
  }
  alignas(32) uint64_t lanes[4], bits[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), zero_count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(bits), high);
  const uint64_t coded = bits[0] | bits[1] | bits[2] | bits[3];
  out_of_range |= coded > kAbsMaxZigzag<double> ? 1u : 0u;
  if (coded >> 52) {  // some |b| >= 2^51: the general conversion for the whole block
    done = 0;
    return 0;
  }
  done = i;
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

template <typename T>
size_t decode_abs_values(const uint8_t* codes, size_t n, uint8_t* out, T step, bool& ok) {
  UintOf<T> out_of_range = 0;
  size_t zeros = 0, done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    zeros = decode_abs_values_avx2(codes, n, out, step, out_of_range, done);
    zeros += decode_abs_values_scalar<T>(codes + done * sizeof(T), n - done, out + done * sizeof(T), step,
                                         out_of_range);
    ok = out_of_range == 0;
    return zeros;
  }
#endif
#if defined(__SSE2__)
  zeros = decode_abs_values_sse2(codes, n, out, step, out_of_range, done);
#endif
  zeros += decode_abs_values_scalar<T>(codes + done * sizeof(T), n - done, out + done * sizeof(T), step, out_of_range);
  ok = out_of_range == 0;
  return zeros;
}

// Any method and mode, one element at a time (REL, CONSTANT). Returns the
// number of outliers taken from `outliers`.
template <typename T>
size_t decode_general_block(const uint8_t* codes, size_t n, const uint8_t* outliers, uint8_t* out, const Params& p) {
  using U = UintOf<T>;
  const T step = from_bits<T>(static_cast<U>(p.step_bits));
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const U code = load_le<U>(codes + i * sizeof(T));
    U bits;
    if (code == 0) {
      bits = load_le<U>(outliers + k * sizeof(T));
      ++k;
    } else if (p.method == Method::kConstant) {
      require_format(code == 1, "quantize: constant code other than 1");
      bits = static_cast<U>(p.step_bits);
    } else {  // REL
      if (code <= 2) {
        bits = code == 1 ? U{0} : kSignBit<T>;
      } else {
        const uint64_t c = static_cast<uint64_t>(code) - 3;
        const uint64_t z = c >> 1;
        require_format(z <= kRelMaxZigzag<T>, "quantize: REL code out of range");
        T r;
        require_format(pw(static_cast<T>(unzigzag(z)) * step, r), "quantize: REL code leaves the exponent range");
        bits = to_bits(r) | ((c & 1) ? kSignBit<T> : U{0});
      }
    }
    store_le<U>(out + i * sizeof(T), bits);
  }
  return k;
}

template <typename T>
size_t count_zero_codes(const uint8_t* codes, size_t n) {
  using U = UintOf<T>;
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) zeros += load_le<U>(codes + i * sizeof(T)) == 0;
  return zeros;
}

// Writes the outliers of one block over its zero-code elements, in order.
template <typename T>
void place_outliers(const uint8_t* codes, size_t n, const uint8_t* outliers, uint8_t* out) {
  using U = UintOf<T>;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (load_le<U>(codes + i * sizeof(T)) == 0) {
      std::memcpy(out + i * sizeof(T), outliers + k * sizeof(T), sizeof(T));
      ++k;
    }
}

// Decodes into dst (p.count elements). ABS/NOA make one vectorised pass that
// also counts each block's outliers, then place the outliers of the blocks
// that have any; REL and CONSTANT count first, then decode element by element.
template <typename T>
void decode_typed(ByteSpan codes, ByteSpan outliers, const Params& p, uint8_t* dst, const Executor& exec) {
  using U = UintOf<T>;
  check_params_typed<T>(p);
  const size_t bytes = static_cast<size_t>(p.count) * sizeof(T);
  if (p.method == Method::kLossless) {
    require_format(codes.size == 0, "quantize: lossless chunk with codes");
    require_format(outliers.size == bytes, "quantize: lossless outliers do not match the count");
    if (bytes) std::memcpy(dst, outliers.data, bytes);
    return;
  }
  require_format(codes.size == bytes, "quantize: codes do not match the element count");
  require_format(outliers.size % sizeof(T) == 0, "quantize: outlier stream is not whole elements");
  const size_t blocks = block_count(bytes);
  const auto block_elements = [&](size_t block) { return block_length(bytes, block) / sizeof(T); };
  std::vector<size_t> first(blocks + 1, 0);  // outliers before each block
  const bool abs_values = p.method == Method::kQuantized && p.mode != Mode::kRel;
  if (abs_values) {
    const T step = from_bits<T>(static_cast<U>(p.step_bits));
    std::vector<uint8_t> ok(blocks, 1);
    exec.parallel_for(blocks, [&](size_t block) {
      FloatStateGuard env;
      const size_t begin = block * kBlockBytes;
      bool block_ok = true;
      first[block + 1] = decode_abs_values<T>(codes.data + begin, block_elements(block), dst + begin, step, block_ok);
      ok[block] = block_ok;
    });
    for (size_t b = 0; b < blocks; ++b) require_format(ok[b] != 0, "quantize: code out of range");
  } else {
    exec.parallel_for(blocks, [&](size_t block) {
      first[block + 1] = count_zero_codes<T>(codes.data + block * kBlockBytes, block_elements(block));
    });
  }
  for (size_t b = 0; b < blocks; ++b) first[b + 1] += first[b];
  require_format(first[blocks] == outliers.size / sizeof(T), "quantize: outlier stream does not match the zero codes");
  exec.parallel_for(blocks, [&](size_t block) {
    const size_t begin = block * kBlockBytes;
    const uint8_t* block_outliers = outliers.data + first[block] * sizeof(T);
    if (abs_values) {
      if (first[block + 1] != first[block])
        place_outliers<T>(codes.data + begin, block_elements(block), block_outliers, dst + begin);
    } else {
      FloatStateGuard env;
      decode_general_block<T>(codes.data + begin, block_elements(block), block_outliers, dst + begin, p);
    }
  });
}

template <typename T>
detail::HostPlan host_plan_typed(Mode mode, double bound) {
  FloatStateGuard env;
  const Plan<T> plan = mode == Mode::kRel ? rel_plan<T>(bound) : abs_plan<T>(bound);
  detail::HostPlan out;
  out.method = plan.method;
  if (plan.method == Method::kQuantized) {
    out.step_bits = to_bits(plan.step);
    out.inverse_bits = to_bits(plan.inverse);
    out.check = plan.check;
    out.enforced = plan.enforced;
  }
  return out;
}

}  // namespace

namespace detail {

HostPlan host_plan(unsigned width, Mode mode, double bound) {
  return width == 4 ? host_plan_typed<float>(mode, bound) : host_plan_typed<double>(mode, bound);
}

void write_params_bytes(uint8_t out[kParamsBytes], Mode mode, unsigned width, Method method, uint64_t count,
                        uint64_t step_bits, double user_bound, double enforced) {
  out[0] = kParamsVersion;
  out[1] = static_cast<uint8_t>(mode);
  out[2] = static_cast<uint8_t>(width);
  out[3] = static_cast<uint8_t>(method);
  store_le<uint32_t>(out + 4, 0);
  store_le<uint64_t>(out + 8, count);
  store_le<uint64_t>(out + 16, step_bits);
  store_le<double>(out + 24, user_bound);
  store_le<double>(out + 32, enforced);
}

}  // namespace detail

namespace {

void check_config(ByteSpan in, const Config& config) {
  if (config.width != 4 && config.width != 8)
    throw UsageError("quantize: element width must be 4 or 8 bytes, got " + std::to_string(config.width));
  if (config.mode != Mode::kAbs && config.mode != Mode::kNoa && config.mode != Mode::kRel)
    throw UsageError("quantize: unknown error-bound mode");
  if (!(std::isfinite(config.bound) && config.bound > 0))
    throw UsageError("quantize: the error bound must be finite and positive");
  if (in.size % config.width != 0) throw UsageError("quantize: input is not a whole number of elements");
  if (config.fill && config.width == 4 && (*config.fill >> 32) != 0)
    throw UsageError("quantize: fill value wider than a float32");
}

}  // namespace

BlockwiseEncoder::BlockwiseEncoder(ByteSpan in, const Config& config, const Executor& exec) {
  check_config(in, config);
  if (config.width == 4)
    impl_ = std::make_unique<TypedEncoder<float>>(in, config, exec);
  else
    impl_ = std::make_unique<TypedEncoder<double>>(in, config, exec);
}

BlockwiseEncoder::~BlockwiseEncoder() = default;

void encode(ByteSpan in, const Config& config, Streams& out, const Executor& exec) {
  BlockwiseEncoder encoder(in, config, exec);
  out.codes.resize(encoder.codes_bytes());
  uint8_t* codes = out.codes.data();
  exec.parallel_for(block_count(out.codes.size()),
                    [&](size_t block) { encoder.encode_block(block, codes + block * kBlockBytes); });
  encoder.finish(out.outliers, out.params);
}

Params read_params(ByteSpan params) {
  require_format(params.size == kParamsBytes, "quantize: params have the wrong size");
  const uint8_t* p = params.data;
  require_format(p[0] == kParamsVersion, "quantize: unknown params version");
  require_format(p[1] <= 2, "quantize: unknown mode");
  require_format(p[2] == 4 || p[2] == 8, "quantize: element width is not 4 or 8");
  require_format(p[3] <= 2, "quantize: unknown method");
  require_format(load_le<uint32_t>(p + 4) == 0, "quantize: reserved params bytes are not zero");
  Params out;
  out.mode = static_cast<Mode>(p[1]);
  out.width = p[2];
  out.method = static_cast<Method>(p[3]);
  out.count = load_le<uint64_t>(p + 8);
  out.step_bits = load_le<uint64_t>(p + 16);
  out.user_bound = load_le<double>(p + 24);
  out.enforced_bound = load_le<double>(p + 32);
  require_format(std::isfinite(out.user_bound) && out.user_bound > 0, "quantize: bad user bound");
  require_format(std::isfinite(out.enforced_bound) && out.enforced_bound >= 0, "quantize: bad enforced bound");
  if (out.width == 4)
    check_params_typed<float>(out);
  else
    check_params_typed<double>(out);
  return out;
}

bool BlockwiseDecoder::is_blockwise(ByteSpan params) {
  const Params p = read_params(params);
  return p.method == Method::kQuantized && p.mode != Mode::kRel;
}

BlockwiseDecoder::BlockwiseDecoder(ByteSpan outliers, ByteSpan params, size_t codes_bytes)
    : outliers_(outliers), params_(read_params(params)) {
  require_format(params_.method == Method::kQuantized && params_.mode != Mode::kRel,
                 "quantize: blockwise decoding of REL, CONSTANT or LOSSLESS params");
  if (params_.width == 4)
    check_params_typed<float>(params_);
  else
    check_params_typed<double>(params_);
  require_format(params_.count <= SIZE_MAX / params_.width && codes_bytes == params_.count * params_.width,
                 "quantize: codes do not match the element count");
  require_format(outliers.size % params_.width == 0, "quantize: outlier stream is not whole elements");
  bytes_ = codes_bytes;
  const size_t blocks = block_count(bytes_);
  zeros_.assign(blocks, 0);
  in_range_.assign(blocks, 1);
  kept_.resize(blocks);
}

void BlockwiseDecoder::consume(size_t block, const uint8_t* codes, uint8_t* dst) {
  FloatStateGuard env;
  const size_t length = block_length(bytes_, block);
  bool ok = true;
  size_t zeros;
  if (params_.width == 4) {
    zeros = decode_abs_values<float>(codes, length / 4, dst + block * kBlockBytes,
                                     from_bits<float>(static_cast<uint32_t>(params_.step_bits)), ok);
  } else {
    zeros = decode_abs_values<double>(codes, length / 8, dst + block * kBlockBytes,
                                      from_bits<double>(params_.step_bits), ok);
  }
  zeros_[block] = zeros;
  in_range_[block] = ok;
  if (zeros != 0) kept_[block].assign(codes, codes + length);  // where its outliers go
}

void BlockwiseDecoder::finish(uint8_t* dst) {
  const unsigned width = params_.width;
  size_t total = 0;
  for (size_t b = 0; b < zeros_.size(); ++b) {
    require_format(in_range_[b] != 0, "quantize: code out of range");
    total += zeros_[b];
  }
  require_format(total == outliers_.size / width, "quantize: outlier stream does not match the zero codes");
  size_t first = 0;
  for (size_t b = 0; b < zeros_.size(); ++b) {
    if (zeros_[b] != 0) {
      const size_t n = block_length(bytes_, b) / width;
      if (width == 4)
        place_outliers<float>(kept_[b].data(), n, outliers_.data + first * 4, dst + b * kBlockBytes);
      else
        place_outliers<double>(kept_[b].data(), n, outliers_.data + first * 8, dst + b * kBlockBytes);
    }
    first += zeros_[b];
  }
}

uint64_t decoded_bytes(ByteSpan params) {
  const Params p = read_params(params);
  require_format(p.count <= UINT64_MAX / p.width, "quantize: element count overflows");
  return p.count * p.width;
}

void decode_into(ByteSpan codes, ByteSpan outliers, ByteSpan params, uint8_t* dst, const Executor& exec) {
  const Params p = read_params(params);
  if (p.width == 4)
    decode_typed<float>(codes, outliers, p, dst, exec);
  else
    decode_typed<double>(codes, outliers, p, dst, exec);
}

void decode(ByteSpan codes, ByteSpan outliers, ByteSpan params, Bytes& out, size_t max_out, const Executor& exec) {
  const Params p = read_params(params);
  require_format(p.count <= max_out / p.width, "quantize: chunk larger than allowed");
  const size_t bytes = static_cast<size_t>(p.count) * p.width;
  // The stream that holds one word per element must match before allocating.
  require_format(bytes == (p.method == Method::kLossless ? outliers.size : codes.size),
                 "quantize: streams do not match the element count");
  out.resize(bytes);  // every byte is written
  decode_into(codes, outliers, params, out.data(), exec);
}

}  // namespace fz::quantize
