// The quantizer's host-side setup (quantize_plan.hpp, plan_cpu.hpp): NOA's
// bound, the plan handed to the GPU encoder and the 40 params bytes.
#include <cfloat>
#include <cmath>

#include "common/bytes.hpp"
#include "common/float_state.hpp"
#include "quantize/plan_cpu.hpp"
#include "quantize/quantize_plan.hpp"

namespace fz::quantize::detail {
namespace {

template <typename T>
HostPlan host_plan_typed(Mode mode, double bound) {
  FloatStateGuard env;
  const Plan<T> plan = mode == Mode::kRel ? rel_plan<T>(bound) : abs_plan<T>(bound);
  HostPlan out;
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

}  // namespace fz::quantize::detail
