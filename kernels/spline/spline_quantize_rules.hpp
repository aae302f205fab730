// The spline stage's quantization of one element (spline.hpp): which values
// may be coded (finite, not -0, not denormal), what later predictions read,
// the per-level quantizer, the code and reconstruction of an element, a fill
// element's code, and the fill mask's bit. Split from spline_rules.hpp
// (which includes it): with the predictor, this is what the CPU and the GPU
// must compute identically per element; the exact bound test is the Lorenzo
// stage's (lorenzo_rules.hpp). Host and device code, except
// make_level_quantizer (it sets the float state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/float_state.hpp"
#include "common/host_device.hpp"
#include "lorenzo/lorenzo_rules.hpp"  // within_bound, magnitude, Traits: the exact bound test is shared


namespace fz::spline::rules {

using lorenzo::rules::magnitude;
using lorenzo::rules::within_bound;

// Finite (by the exponent bits: no libm, no numeric_limits in device code).
template <typename T>
FZ_HOST_DEVICE inline bool is_finite(T x) {
  using Traits = lorenzo::rules::Traits<T>;
  typename Traits::U bits;
  memcpy(&bits, &x, sizeof(T));
  return ((bits >> Traits::kMantissaBits) & Traits::kExponentMask) != Traits::kExponentMask;
}

// An element the quantizer may code: finite, not -0 and not denormal (NaN,
// +-Inf, -0 and denormals are outliers, stored exactly: docs/FORMAT.md,
// section 0, rule 6). +0 is an ordinary value.
template <typename T>
FZ_HOST_DEVICE inline bool is_codable(T x) {
  using Traits = lorenzo::rules::Traits<T>;
  typename Traits::U bits;
  memcpy(&bits, &x, sizeof(T));
  const auto magnitude_bits = bits & ~(typename Traits::U{1} << (8 * sizeof(T) - 1));
  const bool denormal = magnitude_bits != 0 && ((bits >> Traits::kMantissaBits) & Traits::kExponentMask) == 0;
  return is_finite(x) && !denormal && bits != (typename Traits::U{1} << (8 * sizeof(T) - 1));
}

// What later predictions read for an element stored exactly: the value, or 0
// when it is not finite.
template <typename T>
FZ_HOST_DEVICE inline T prediction_value(T x) {
  return is_finite(x) ? x : T(0);
}

// x' of code q: fl_T(p + fl_T(q * step)) (q converts to T exactly: |q| < 2^15).
template <typename T>
FZ_HOST_DEVICE inline T reconstruct(T p, int32_t q, T step) {
  return p + static_cast<T>(q) * step;
}

// One level's quantizer: step, inv = fl_T(1 / step) (computed under the
// kernels' float state), the radius and the user's bound.
template <typename T>
struct LevelQuantizer {
  T step;
  T inv;
  uint32_t radius;
  double bound;
};

template <typename T>
LevelQuantizer<T> make_level_quantizer(T step, uint32_t radius, double bound) {
  FloatStateGuard guard;
  return LevelQuantizer<T>{step, T(1) / step, radius, bound};
}

// Quantizes x against prediction p (spline.hpp): returns the code (q +
// radius, or 0 for an outlier) and sets `value` to what later predictions
// read (x', or the exact value, 0 if not finite). q is rounded half away
// from zero without libm: |s| < radius <= 2^15, so the truncation and
// a - t are exact.
template <typename T>
FZ_HOST_DEVICE inline uint32_t quantize(T x, T p, const LevelQuantizer<T>& lq, T& value, int32_t& q) {
  q = 0;
  value = prediction_value(x);
  if (!is_codable(x)) return 0;
  const T s = (x - p) * lq.inv;
  const T a = magnitude(s);
  if (!(a < static_cast<T>(lq.radius))) return 0;  // also NaN (an overflowing prediction)
  int32_t t = static_cast<int32_t>(a);
  t += a - static_cast<T>(t) >= T(0.5) ? 1 : 0;
  if (t >= static_cast<int32_t>(lq.radius)) return 0;
  const int32_t candidate = s < 0 ? -t : t;
  const T r = reconstruct(p, candidate, lq.step);
  if (!within_bound(static_cast<double>(x), static_cast<double>(r), lq.bound)) return 0;
  q = candidate;
  value = r;
  return static_cast<uint32_t>(candidate + static_cast<int32_t>(lq.radius));
}

// A fill element (spline.hpp, the fill mask): code q = 0, so that x' is
// the prediction itself, fl_T(p + 0 * step), whatever x (the fill mask stage
// puts the fill value back after decoding, and the decoder, told nothing,
// computes the same x'). Land and missing data then cost one frequent code
// each and continue the field smoothly for the predictions of their
// neighbours, where a replaced value (the fill mask stage's carry-forward)
// would put a step at every coast. Only when x' is not finite (an
// overflowing prediction) is the element quantized as any other: the code
// and value quantize set are left alone. Sets q to 0 when it codes.
template <typename T>
FZ_HOST_DEVICE inline void code_fill(T p, const LevelQuantizer<T>& lq, T& value, uint32_t& code, int32_t& q) {
  const T r = reconstruct(p, 0, lq.step);
  if (!is_finite(r)) return;
  value = r;
  code = lq.radius;
  q = 0;
}

// Bit i % 8 of byte i / 8 of a fill mask (fillmask.hpp's mask stream).
FZ_HOST_DEVICE inline bool is_fill(const uint8_t* mask, size_t i) { return ((mask[i >> 3] >> (i & 7)) & 1u) != 0; }

}  // namespace fz::spline::rules
