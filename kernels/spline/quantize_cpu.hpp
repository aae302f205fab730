// The spline quantizer over a batch of points on the CPU (encoder and tuner):
// rules::quantize element by element, with SSE2 / AVX2 loops for float32 and
// an AVX2 loop for float64 (common/cpu_features.hpp) that compute every lane
// by the same operations,
// so the codes and values never depend on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

// For every i < n: code[i] = rules::quantize(x[i], p[i], lq, value[i], q).
// `avx2`: cpu_has_avx2() on the calling thread.
template <typename T>
void quantize_batch(const T* x, const T* p, size_t n, const rules::LevelQuantizer<T>& lq, bool avx2, T* value,
                    uint32_t* code);

}  // namespace fz::spline::detail
