// The quantize stage's rules, shared by the CPU (encode_cpu.cpp, decode_cpu.cpp)
// and the GPU (quantize_cuda.cu), so the two cannot drift apart: IEEE field
// layout, the code limits of quantize.hpp, zigzag, the exact acceptance tests
// (within_abs / within_rel), Lg / Pw, and what a valid encoder config is.
// The element rules are host and device code (common/host_device.hpp). They are
// written with plain operators: the build has -ffp-contract=off (host) and
// -fmad=false (CUDA), so each operation is one IEEE rounding on both sides;
// the only fused operation is the explicit fma of within_rel.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/host_device.hpp"
#include "quantize/quantize.hpp"

namespace fz::quantize::rules {

template <typename T>
struct Traits;
template <>
struct Traits<float> {
  using U = uint32_t;
  static constexpr int kMantissaBits = 23;
  static constexpr int kBias = 127;
  static constexpr int kMaxBiased = 254;  // largest biased exponent of a finite value
};
template <>
struct Traits<double> {
  using U = uint64_t;
  static constexpr int kMantissaBits = 52;
  static constexpr int kBias = 1023;
  static constexpr int kMaxBiased = 2046;
};

template <typename T>
using UintOf = typename Traits<T>::U;

template <typename T>
constexpr UintOf<T> kSignBit = UintOf<T>{1} << (8 * sizeof(T) - 1);
template <typename T>
constexpr UintOf<T> kMantissaMask = (UintOf<T>{1} << Traits<T>::kMantissaBits) - 1;
template <typename T>
constexpr UintOf<T> kExponentMask = static_cast<UintOf<T>>(~kSignBit<T> & ~kMantissaMask<T>);

// Code limits (leave headroom so that code + 1 never wraps, see quantize.hpp).
// |s| below kAbsLimit makes the integer conversion defined and |b| <= 2^(8W-3).
template <typename T>
constexpr uint64_t kAbsMaxZigzag = (uint64_t{1} << (8 * sizeof(T) - 2)) - 1;
template <typename T>
constexpr uint64_t kRelMaxZigzag = (uint64_t{1} << (8 * sizeof(T) - 3)) - 1;
template <typename T>
constexpr T kAbsLimit = static_cast<T>(uint64_t{1} << (8 * sizeof(T) - 3));
template <typename T>
constexpr T kRelLimit = static_cast<T>(uint64_t{1} << (8 * sizeof(T) - 4));

FZ_HOST_DEVICE inline uint64_t zigzag(int64_t b) {
  return (static_cast<uint64_t>(b) << 1) ^ static_cast<uint64_t>(b >> 63);
}
FZ_HOST_DEVICE inline int64_t unzigzag(uint64_t z) {
  return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
}

template <typename T>
FZ_HOST_DEVICE inline T from_bits(UintOf<T> u) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) return __uint_as_float(u);
  else return __longlong_as_double(static_cast<long long>(u));
#else
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}
template <typename T>
FZ_HOST_DEVICE inline UintOf<T> to_bits(T v) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) return __float_as_uint(v);
  else return static_cast<uint64_t>(__double_as_longlong(v));
#else
  UintOf<T> u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}

template <typename T>
FZ_HOST_DEVICE inline bool is_nan_or_inf(UintOf<T> bits) {
  return (bits & kExponentMask<T>) == kExponentMask<T>;
}
// Zero exponent field and not +0: -0 or a denormal.
template <typename T>
FZ_HOST_DEVICE inline bool is_denormal_or_negative_zero(UintOf<T> bits) {
  return (bits & kExponentMask<T>) == 0 && bits != 0;
}

// zigzag(b) + 1, or 0 (outlier) when it would not fit the ABS code range.
template <typename T>
FZ_HOST_DEVICE inline UintOf<T> abs_code(int64_t b) {
  const uint64_t z = zigzag(b);
  return z <= kAbsMaxZigzag<T> ? static_cast<UintOf<T>>(z + 1) : UintOf<T>{0};
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
FZ_HOST_DEVICE inline bool within_abs(double x, double xr, double bound) {
  const double d = x - xr;
  const double ad = fabs(d);
  if (ad < bound) return true;
  if (!(ad == bound)) return false;
  const double bb = d - x;  // TwoSum(x, -xr)
  double dl = (x - (d - bb)) + (-xr - bb);
  if (d < 0) dl = -dl;
  return dl <= 0;
}

// True iff |a - r| <= eb * a exactly, for a > 0.
FZ_HOST_DEVICE inline bool within_rel(double a, double r, double eb) {
  const double d = a - r;
  const double ad = fabs(d);
  const double ph = eb * a;
  if (ad < ph) return true;
  if (!(ad == ph)) return false;
  if (ph < 0x1p-900) return false;  // fma's error term might not be representable
  const double pl = fma(eb, a, -ph);
  const double bb = d - a;  // TwoSum(a, -r)
  double dl = (a - (d - bb)) + (-r - bb);
  if (d < 0) dl = -dl;
  return dl <= pl;
}

// ---------------------------------------------------------------------------
// Lg / Pw of docs/FORMAT.md (the quantize stage's REL mode): Mitchell's log2
// and its inverse by bit manipulation, IEEE additions only (no libm).

// a: positive normal. Lg(a) = float(1.M) + (E - bias - 1) = (E - bias) + 0.M, one rounding.
template <typename T>
FZ_HOST_DEVICE inline T lg(T a) {
  const UintOf<T> bits = to_bits(a);
  const int e = static_cast<int>(bits >> Traits<T>::kMantissaBits);
  const T one_m = from_bits<T>((UintOf<T>{Traits<T>::kBias} << Traits<T>::kMantissaBits) | (bits & kMantissaMask<T>));
  return one_m + static_cast<T>(e - (Traits<T>::kBias + 1));
}

// t = l + bias; E' = trunc(t); f = t - (E' - 1) in [1, 2]; bits = E' << mant | mantissa(f).
// Returns false when E' is not the exponent of a finite normal (the integer
// conversion is only done once t is known to be in range).
template <typename T>
FZ_HOST_DEVICE inline bool pw(T l, T& out) {
  const T t = l + static_cast<T>(Traits<T>::kBias);
  if (!(t >= T(1) && t < static_cast<T>(Traits<T>::kMaxBiased + 1))) return false;
  const int64_t e = static_cast<int64_t>(t);
  const T f = t - static_cast<T>(e - 1);
  out = from_bits<T>((static_cast<UintOf<T>>(e) << Traits<T>::kMantissaBits) | (to_bits(f) & kMantissaMask<T>));
  return true;
}

// ---------------------------------------------------------------------------
// Why the encoder refuses a config of an input of in_size bytes, as the
// message of its UsageError; empty when it is valid. (The GPU encoder takes
// the valid configs of ABS and REL.)
inline std::string config_problem(size_t in_size, const Config& config) {
  if (config.width != 4 && config.width != 8)
    return "quantize: element width must be 4 or 8 bytes, got " + std::to_string(config.width);
  if (config.mode != Mode::kAbs && config.mode != Mode::kNoa && config.mode != Mode::kRel)
    return "quantize: unknown error-bound mode";
  if (!(std::isfinite(config.bound) && config.bound > 0)) return "quantize: the error bound must be finite and positive";
  if (in_size % config.width != 0) return "quantize: input is not a whole number of elements";
  if (config.fill && config.width == 4 && (*config.fill >> 32) != 0) return "quantize: fill value wider than a float32";
  return {};
}

}  // namespace fz::quantize::rules
