// Host-side setup of the quantizer that every backend shares: the plan of the
// ABS and REL modes (what abs_plan / rel_plan of plan_cpu.hpp compute,
// including the LOSSLESS fall-back when the bound cannot be represented) and
// the 40 params bytes. Defined in plan_cpu.cpp, from the very functions the
// CPU encoder uses, so a GPU encoder built on them writes the CPU's params and
// uses the CPU's step, inverse and exact-test bound.
#pragma once

#include <cstdint>

#include "quantize/quantize.hpp"

namespace fz::quantize::detail {

struct HostPlan {
  Method method = Method::kQuantized;  // kQuantized or kLossless
  uint64_t step_bits = 0;              // bits of a T (width 4: low 32 bits); 0 when LOSSLESS
  uint64_t inverse_bits = 0;           // bits of the encoder's T inverse
  double check = 0;                    // the bound of the exact test (ABS: B, REL: eb)
  double enforced = 0;                 // params' enforced bound (0 when LOSSLESS)
};

// mode must be kAbs or kRel (NOA needs the data's range: the CPU encoder's
// business); width 4 or 8; bound finite and > 0. Runs under the CPU encoder's
// floating-point state (FloatStateGuard).
HostPlan host_plan(unsigned width, Mode mode, double bound);

// The params stream exactly as the CPU encoder writes it.
void write_params_bytes(uint8_t out[kParamsBytes], Mode mode, unsigned width, Method method, uint64_t count,
                        uint64_t step_bits, double user_bound, double enforced);

}  // namespace fz::quantize::detail
