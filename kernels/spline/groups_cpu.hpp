// The code groups on the CPU (spline.hpp, spline_rules.hpp): the encoder and
// decoder work on codes in element order; these move them to and from the
// three group streams, in the config's code form, row by row in parallel.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

// element-order codes (N * code_bytes bytes) -> groups[g] (sized here).
void group_codes(const rules::Grid& grid, const uint8_t* codes, const CodeFormat& format, uint32_t radius,
                 Bytes (&groups)[kCodeGroups], const Executor& exec);

// groups (sizes already checked against code_groups) -> element-order codes
// (N * code_bytes bytes), back in the offset form.
void ungroup_codes(const rules::Grid& grid, const ByteSpan (&groups)[kCodeGroups], const CodeFormat& format,
                   uint32_t radius, uint8_t* codes, const Executor& exec);

}  // namespace fz::spline::detail
