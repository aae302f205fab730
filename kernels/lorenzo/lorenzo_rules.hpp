// The rules of the Lorenzo stage that the CPU (encode_cpu.cpp, decode_cpu.cpp)
// and the GPU (encode_cuda.cu, decode_cuda.cu) share, so the two cannot drift
// apart: what a decodable config and a valid shape are, the outlier stream's
// layout (docs/FORMAT.md, stage type 10), value kinds, the integer ranges,
// zigzag, the exact bound test and prequantization.
// The per-element rules are host and device code (common/host_device.hpp);
// nothing here allocates or throws.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/float_state.hpp"
#include "common/host_device.hpp"
#include "lorenzo/lorenzo.hpp"

namespace fz::lorenzo {

// Why lorenzo::decode (and encode) refuse a config whose width is 4 or 8, as
// the message of their UsageError; nullptr when it is decodable: the working
// bound exactly a value of the element type, normal, with 2 * eb finite; the
// radius in [1, 32768]; float32 fill bits within 32 bits.
inline const char* config_problem(const Config& c) {
  const bool narrow = c.width == 4;
  const double eb = narrow ? static_cast<double>(static_cast<float>(c.eb)) : c.eb;
  if (!(eb == c.eb)) return "lorenzo: working bound must be exactly representable in the element type";
  const bool normal = narrow ? static_cast<float>(eb) >= std::numeric_limits<float>::min() &&
                                   std::isfinite(static_cast<float>(eb) + static_cast<float>(eb))
                             : eb >= std::numeric_limits<double>::min() && std::isfinite(eb + eb);
  if (!normal) return "lorenzo: working bound must be normal, with 2*eb finite";
  if (c.radius < 1 || c.radius > 32768) return "lorenzo: radius must be in [1, 32768]";
  if (narrow && (c.fill_bits >> 32) != 0) return "lorenzo: fill bits wider than the element";
  return nullptr;
}

// What lorenzo::decode requires of a config (the engine checks a frame's
// config with it before decoding on the GPU, which reports no messages).
inline bool config_is_decodable(const Config& c) {
  return (c.width == 4 || c.width == 8) && config_problem(c) == nullptr;
}

namespace rules {

// The chunk as z, y, x extents (a 1-D chunk is 1 x 1 x n).
struct Shape {
  size_t nz = 1, ny = 1, nx = 1, n = 0;
};

enum class ShapeCheck { kOk, kBadRank, kTooManyElements };

// dims (1 to 3 extents, slowest first) as a Shape; an extent of 0 gives n = 0.
// Bounded so that N * 16 (codes, outliers, temporaries) never overflows.
inline ShapeCheck shape_of(const std::vector<size_t>& dims, Shape& s) {
  if (dims.empty() || dims.size() > 3) return ShapeCheck::kBadRank;
  size_t ext[3] = {1, 1, 1};
  for (size_t k = 0; k < dims.size(); ++k) ext[3 - dims.size() + k] = dims[k];
  s.nz = ext[0];
  s.ny = ext[1];
  s.nx = ext[2];
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t n = 1;
  for (size_t e : ext) {
    if (e == 0) {
      s.n = 0;
      return ShapeCheck::kOk;
    }
    if (n > kMaxElements / e) return ShapeCheck::kTooManyElements;
    n *= e;
  }
  s.n = n;
  return ShapeCheck::kOk;
}

// The outlier stream: [u64 n][u64 a][u64 b][index x n][kind u8 x n][delta x a]
// [raw x b] (lorenzo.hpp); the index is u32 when N <= 2^32.
constexpr size_t kHeaderBytes = 24;
FZ_HOST_DEVICE inline size_t index_width_of(size_t n) { return n <= (uint64_t{1} << 32) ? 4 : 8; }

constexpr uint8_t kValueQuantized = 0;
constexpr uint8_t kValueRaw = 1;
constexpr uint8_t kValueFill = 2;
constexpr uint8_t kValueNegZero = 3;
constexpr uint8_t kValueMask = 3;
constexpr uint8_t kHasDelta = 4;

template <typename T>
struct Traits;
// PMAX: every integer with |p| <= PMAX converts to T exactly, so (T)p * eb2 has a
// single rounding, the same in encoder and decoder (and on the GPU). Deltas of
// up to 8*PMAX and all partial sums then fit the signed type as well.
template <>
struct Traits<float> {
  using I = int32_t;
  using U = uint32_t;
  static constexpr unsigned kMantissaBits = 23;
  static constexpr U kExponentMask = 0xFF;
  static constexpr I kPMax = I{1} << 24;
};
template <>
struct Traits<double> {
  using I = int64_t;
  using U = uint64_t;
  static constexpr unsigned kMantissaBits = 52;
  static constexpr U kExponentMask = 0x7FF;
  static constexpr I kPMax = I{1} << 53;
};

template <typename U>
FZ_HOST_DEVICE inline U zigzag(U d) {
  return static_cast<U>((d << 1) ^ (U{0} - (d >> (8 * sizeof(U) - 1))));
}
template <typename U>
FZ_HOST_DEVICE inline U unzigzag(U z) {
  return static_cast<U>((z >> 1) ^ (U{0} - (z & 1)));
}

// |x|, exact (the sign of a zero does not matter to any caller: they compare it).
template <typename T>
FZ_HOST_DEVICE inline T magnitude(T x) {
  return x < 0 ? -x : x;
}

// |a - b| <= bound, decided exactly (a finite; b finite or infinite; bound finite,
// > 0). s = fl(a - b): rounding is monotone and bound is a double, so |s| < bound
// and |s| > bound already decide. Only |s| == bound needs the rounding error e,
// which Fast2Sum (larger magnitude first) gives exactly: s + e == a - b. Built
// without FMA contraction on both sides (-ffp-contract=off, -fmad=false).
FZ_HOST_DEVICE inline bool within_bound(double a, double b, double bound) {
  const double s = a - b;
  const double m = magnitude(s);
  if (m < bound) return true;
  if (!(m == bound)) return false;
  double hi = a, lo = -b;
  if (magnitude(hi) < magnitude(lo)) {
    const double t = hi;
    hi = lo;
    lo = t;
  }
  const double e = lo - (s - hi);
  return s > 0 ? e <= 0 : e >= 0;
}

template <typename T>
struct Quantizer {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  T eb2, inv;
  double bound;
  bool has_fill;
  U fill;
  // classify_fast's shortcut: a T no larger than the one below the largest T
  // at or under `bound` (or -1: no shortcut). When fl(|x - y|) <= accept_below,
  // the real |x - y| < next(accept_below) <= bound (round to nearest: a real
  // that rounds to d lies below next(d)), so the exact test would accept.
  T accept_below;
  // The fill value's bits, or (no fill value) an infinity's, which
  // classify_common never takes anyway: one compare, no flag.
  U fill_or_never;

  FZ_HOST_DEVICE bool accept(T x, I c) const {
    if (c > Traits<T>::kPMax || c < -Traits<T>::kPMax) return false;
    const T y = static_cast<T>(c) * eb2;
    return within_bound(static_cast<double>(x), static_cast<double>(y), bound);
  }

  // Returns the value kind; p is set (and nonzero only) for quantized elements.
  FZ_HOST_DEVICE uint8_t classify(U bits, I& p) const {
    p = 0;
    if (has_fill && bits == fill) return kValueFill;
    const U exponent = (bits >> Traits<T>::kMantissaBits) & Traits<T>::kExponentMask;
    if (exponent == Traits<T>::kExponentMask) return kValueRaw;  // NaN, +-Inf
    if (exponent == 0) {
      if ((bits & ((U{1} << Traits<T>::kMantissaBits) - 1)) != 0) return kValueRaw;  // denormal
      return bits == 0 ? kValueQuantized : kValueNegZero;  // +0 is p = 0 exactly; -0 kept bit-exact
    }
    T x;
    memcpy(&x, &bits, sizeof(T));
    const T s = x * inv;
    const T a = magnitude(s);
    if (!(a < static_cast<T>(Traits<T>::kPMax))) return kValueRaw;  // too large for exact integers
    // Round half away from zero without libm: a < 2^24 (2^53), so the truncation
    // and a - t are exact.
    I t = static_cast<I>(a);
    t += static_cast<I>(a - static_cast<T>(t) >= static_cast<T>(0.5));  // branch-free: the fraction is random
    const I q = s < 0 ? -t : t;
    // inv is rounded, so q may sit one step off near a half-way point; the two
    // neighbours are tried in a fixed order before giving up (deterministic).
    if (accept(x, q)) {
      p = q;
    } else if (accept(x, q - 1)) {
      p = q - 1;
    } else if (accept(x, q + 1)) {
      p = q + 1;
    } else {
      return kValueRaw;
    }
    return kValueQuantized;
  }

  // classify's common case in T alone, without a branch: true (p set) when
  // the element is +0 or a normal number other than the fill value with
  // |x * inv| < 2^(mantissa bits), whose rounded q passes the first test as
  // decided in T by accept_below; false (p unspecified) leaves the element to
  // classify. Same q (the truncation as T arithmetic, exact in that range),
  // the same y = (T)q * eb2 up to the sign of a zero, which does not change
  // x - y, and only an accept that the exact test would also give. No
  // conversion to double or between integer and T: on a GPU those run at a
  // quarter of the rate of arithmetic.
  FZ_HOST_DEVICE bool classify_common(U bits, I& p) const {
    constexpr unsigned kM = Traits<T>::kMantissaBits;
    constexpr U kSign = U{1} << (8 * sizeof(U) - 1);
    constexpr U kMinNormal = U{1} << kM;  // the bits of the smallest normal
    constexpr U kInfinity = static_cast<U>(Traits<T>::kExponentMask) << kM;
    constexpr T kExactBelow = static_cast<T>(U{1} << kM);  // 2^23 (2^52)
    // exponent 1 .. max-1 (normal), or +0 (which the arithmetic below takes to p = 0)
    const bool ordinary =
        static_cast<U>((bits & ~kSign) - kMinNormal) < static_cast<U>(kInfinity - kMinNormal) || bits == 0;
    T x;
    memcpy(&x, &bits, sizeof(T));
    const T s = x * inv;
    const T a = std::fabs(s);
    // trunc(a) + 2^m: a + 2^m rounded toward zero has ulp 1, so its value is
    // 2^m + floor(a) and its low mantissa bits are that integer.
#if defined(__CUDA_ARCH__)
    T biased;
    if constexpr (sizeof(T) == 4) biased = __fadd_rz(a, kExactBelow);
    else biased = __dadd_rz(a, kExactBelow);
#else
    const T biased = a < kExactBelow ? std::trunc(a) + kExactBelow : kExactBelow;  // exact: the same value
#endif
    const T t = biased - kExactBelow;
    // 2^m + t + the half-up step, exact (at most 2^(m+1)): the integer q's
    // magnitude is its distance from 2^m, in bits as in value.
    const T rounded = biased + (a - t >= static_cast<T>(0.5) ? static_cast<T>(1) : static_cast<T>(0));
    const T m = rounded - kExactBelow;
    U s_bits, m_bits, rounded_bits, bias_bits;
    memcpy(&s_bits, &s, sizeof(T));
    memcpy(&m_bits, &m, sizeof(T));
    memcpy(&rounded_bits, &rounded, sizeof(T));
    memcpy(&bias_bits, &kExactBelow, sizeof(T));
    const U signed_m_bits = m_bits | (s_bits & kSign);  // q as T: m with the sign of s
    T signed_m;
    memcpy(&signed_m, &signed_m_bits, sizeof(T));
    const T y = signed_m * eb2;
    const I magnitude_q = static_cast<I>(rounded_bits - bias_bits);
    p = (s_bits & kSign) != 0 ? -magnitude_q : magnitude_q;
    return ordinary && bits != fill_or_never && a < kExactBelow && std::fabs(x - y) <= accept_below;
  }

  // classify, through classify_common where it decides.
  FZ_HOST_DEVICE uint8_t classify_fast(U bits, I& p) const {
    if (classify_common(bits, p)) return kValueQuantized;
    return classify(bits, p);
  }
};

// The quantizer both encoders use (host side), its reciprocal step computed
// under the kernels' floating-point state (FORMAT.md section 0, rule 5), so
// the CPU and the GPU quantize with the very same values.
template <typename T>
Quantizer<T> make_quantizer(const Config& config, double user_bound) {
  Quantizer<T> quantizer;
  quantizer.eb2 = static_cast<T>(config.eb) * 2;
  {
    FloatStateGuard guard;
    quantizer.inv = static_cast<T>(1) / quantizer.eb2;
  }
  quantizer.bound = user_bound;
  // The largest T at or under the bound, then the one below it (none: -1).
  T at_most = static_cast<T>(user_bound);
  if (static_cast<double>(at_most) > user_bound) at_most = std::nextafter(at_most, static_cast<T>(0));
  quantizer.accept_below =
      at_most > 0 && std::isfinite(at_most) ? std::nextafter(at_most, static_cast<T>(0)) : static_cast<T>(-1);
  quantizer.has_fill = config.has_fill;
  quantizer.fill = static_cast<typename Traits<T>::U>(config.fill_bits);
  quantizer.fill_or_never = quantizer.has_fill ? quantizer.fill
                                               : static_cast<typename Traits<T>::U>(Traits<T>::kExponentMask)
                                                     << Traits<T>::kMantissaBits;
  return quantizer;
}

}  // namespace rules
}  // namespace fz::lorenzo
