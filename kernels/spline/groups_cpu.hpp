// The code groups on the CPU (spline.hpp, spline_code_rules.hpp): the tiles write
// each code straight to its place in its group stream and read it from
// there, row by row, with the closed forms the GPU uses too (code_row and
// code_place from the global coordinates), so no pass over element-order
// codes is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

// The three group streams and how their codes are stored.
template <typename Byte>
struct GroupStreams {
  Byte* at[kCodeGroups] = {};
  rules::CodeGroups groups;
  unsigned code_bytes = 2;
  unsigned form = 0;  // a CodeForm's value (spline_code_rules.hpp, stored_code)
  uint32_t radius = 0;
};

// codes[0 .. count) (offset form) -> their places in the streams: the
// points (z, y, x0 .. x0 + count - 1) of the chunk. Returns how many of the
// codes are 0.
size_t write_code_row(const rules::Grid& grid, const GroupStreams<uint8_t>& streams, size_t z, size_t y, size_t x0,
                      size_t count, const uint16_t* codes);

// What read_code_row saw: how many codes were 0, and the largest.
struct CodeRowStats {
  size_t zeros = 0;
  uint32_t largest = 0;
};

// The inverse: the codes of those points, back in the offset form.
CodeRowStats read_code_row(const rules::Grid& grid, const GroupStreams<const uint8_t>& streams, size_t z, size_t y,
                           size_t x0, size_t count, uint16_t* codes);

}  // namespace fz::spline::detail
