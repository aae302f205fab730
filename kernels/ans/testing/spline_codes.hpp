// The codes the ANS tests (ans_test.cpp, ans_cuda_test.cpp, interleaved_test.cpp) code: the
// spline's code groups of a real field as cuszhi-cr makes them (radius 4096,
// offset form, ratio-first; tools/bench/code_entropy_bench.cpp makes the
// same), NOA taken as an absolute bound over the field's finite range.
#pragma once

#include <algorithm>
#include <cmath>

#include "common/testing/test_data.hpp"
#include "spline/spline.hpp"

namespace fz::testing {

inline double finite_range(const RealField& field) {
  double lo = INFINITY, hi = -INFINITY;
  for (const double v : field_values<double>(field)) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  return hi - lo;
}

inline spline::Streams spline_codes(const RealField& field, double noa) {
  spline::Config c;
  c.width = field.f64 ? 8 : 4;
  c.code_bytes = 2;
  c.radius = 4096;
  c.code_form = spline::CodeForm::kOffset;
  c.alpha = 1;
  c.beta = 1;
  c.tuning = spline::Tuning::kRatioFirst;
  spline::Streams st;
  spline::encode(read_field(field.name), field.dims, c, noa * finite_range(field), st);
  return st;
}

}  // namespace fz::testing
