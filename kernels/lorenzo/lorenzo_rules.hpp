// The per-element rules of the Lorenzo stage that the CPU (lorenzo_cpu.cpp) and
// the GPU (lorenzo_cuda.cu) share, so the two cannot drift apart: value kinds,
// the integer ranges, zigzag, the exact bound test and prequantization.
// Host and device code (common/host_device.hpp); nothing here allocates or throws.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/host_device.hpp"

namespace fz::lorenzo::rules {

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
};

}  // namespace fz::lorenzo::rules
