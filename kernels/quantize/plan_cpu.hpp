// The CPU encoder's plans (what encoder and decoder agree on) for the ABS, REL
// and NOA modes: step, inverse and the bound of the exact test, or the
// LOSSLESS fall-back when the bound cannot be represented. host_plan
// (quantize_plan.hpp) hands the same plan to the GPU encoder.
#pragma once

#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "quantize/quantize.hpp"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize::detail {

using namespace rules;  // format constants, lg and pw, shared with the GPU

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
inline T round_down(double v) {
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
double noa_bound(double eb, double max, double min);

}  // namespace fz::quantize::detail
