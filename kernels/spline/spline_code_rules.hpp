// Where the spline stage's codes go and how they are stored (spline.hpp
// states the format): the three code groups by level, the closed-form offset
// of any element's code in its group, and the code forms (offset, signed,
// zigzag). Split from spline_rules.hpp (which includes it): this is the
// layout of the code streams, which the CPU (groups_cpu.hpp) and the GPU
// (groups_cuda.cuh) both write, and which the tests check against a
// counting reference (testing/spline_inputs.hpp). Host and device code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.hpp"
#include "spline/spline.hpp"  // kCodeGroups
#include "spline/spline_grid_rules.hpp"

namespace fz::spline::rules {

// Code groups (spline.hpp): the codes leave the stage in three streams by
// the level of their point, whose statistics differ (the finest level is
// mostly q = 0, the coarse ones are not), so that a coder after the stage
// gives each its own table. A point's level depends only on its global
// coordinates, whatever the tiles (B is a multiple of 4):
//   group 2: every coordinate a multiple of 4 (levels >= 2 and the anchors);
//   group 1: every coordinate even, one not a multiple of 4 (level 1);
//   group 0: the rest, some coordinate odd (level 0, the finest).
// Each group holds its codes in C order. The offsets are closed forms, so
// any element (a CPU row or a GPU thread) finds its place alone.

struct CodeGroups {
  size_t size[kCodeGroups] = {0, 0, 0};
  size_t even[3] = {1, 1, 1};    // ceil(n_k / 2): the even coordinates per axis
  size_t fourth[3] = {1, 1, 1};  // ceil(n_k / 4): the multiples of 4 per axis
};

FZ_HOST_DEVICE inline CodeGroups code_groups(const Grid& grid) {
  CodeGroups c;
  size_t evens = 1;
  size_t fourths = 1;
  for (int k = 0; k < 3; ++k) {
    c.even[k] = (grid.n[k] + 1) / 2;
    c.fourth[k] = (grid.n[k] + 3) / 4;
    evens *= c.even[k];
    fourths *= c.fourth[k];
  }
  if (grid.elements == 0) evens = fourths = 0;
  c.size[2] = fourths;
  c.size[1] = evens - fourths;
  c.size[0] = grid.elements - evens;
  return c;
}

// Where the codes of one row (z, y, every x) go: the offsets, in each group,
// of the row's first code there, and the row's class (4: z and y multiples
// of 4; 2: both even; 0: otherwise, every code in group 0).
struct CodeRow {
  size_t base[kCodeGroups];
  unsigned row_class;
};

FZ_HOST_DEVICE inline CodeRow code_row(const Grid& grid, const CodeGroups& c, size_t z, size_t y) {
  // Points of the even (fourth) sub-grid before (z, y, 0) in C order.
  const size_t evens = (z + 1) / 2 * c.even[1] * c.even[2] + (z % 2 == 0 ? (y + 1) / 2 * c.even[2] : 0);
  const size_t fourths = (z + 3) / 4 * c.fourth[1] * c.fourth[2] + (z % 4 == 0 ? (y + 3) / 4 * c.fourth[2] : 0);
  CodeRow r;
  r.base[2] = fourths;
  r.base[1] = evens - fourths;
  r.base[0] = (z * grid.n[1] + y) * grid.n[2] - evens;
  r.row_class = z % 4 == 0 && y % 4 == 0 ? 4 : z % 2 == 0 && y % 2 == 0 ? 2 : 0;
  return r;
}

// The group and offset of the code at x in that row.
FZ_HOST_DEVICE inline unsigned code_place(const CodeRow& r, size_t x, size_t& offset) {
  if (r.row_class == 0) {
    offset = r.base[0] + x;
    return 0;
  }
  const size_t evens_before = (x + 1) / 2;
  if (x % 2 != 0) {
    offset = r.base[0] + x - evens_before;
    return 0;
  }
  if (r.row_class == 4) {
    const size_t fourths_before = (x + 3) / 4;
    if (x % 4 == 0) {
      offset = r.base[2] + fourths_before;
      return 2;
    }
    offset = r.base[1] + evens_before - fourths_before;
    return 1;
  }
  offset = r.base[1] + evens_before;
  return 1;
}

// Code forms (spline.hpp), `form` a CodeForm's value: kOffset stores the
// code itself (q + R, 0 for an outlier), what a Huffman coder wants (a
// compact alphabet); kSigned stores v = code - R modulo 2^(8 code_bytes),
// i.e. q in two's complement (and -R for an outlier), so that q = 0 is the
// zero word bit-plane coders want; kZigzag stores v zigzagged, (v << 1) XOR
// (v >> (bits - 1)) with v a signed word of 8 code_bytes bits (TCMS's map,
// stage type 4), so that small |q| are small words, whose high bit planes
// are zero, without a TCMS pass after the stage.
constexpr unsigned kOffsetForm = 0, kSignedForm = 1, kZigzagForm = 2;
FZ_HOST_DEVICE inline uint32_t stored_code(uint32_t code, uint32_t radius, unsigned form, unsigned code_bytes) {
  if (form == kOffsetForm) return code;
  const uint32_t mask = code_bytes == 1 ? 0xFFu : 0xFFFFu;
  const uint32_t v = (code - radius) & mask;
  if (form == kSignedForm) return v;
  const uint32_t sign = (v >> (8 * code_bytes - 1)) != 0 ? mask : 0u;
  return ((v << 1) ^ sign) & mask;
}
FZ_HOST_DEVICE inline uint32_t code_of_stored(uint32_t stored, uint32_t radius, unsigned form, unsigned code_bytes) {
  if (form == kOffsetForm) return stored;
  const uint32_t mask = code_bytes == 1 ? 0xFFu : 0xFFFFu;
  const uint32_t v = form == kSignedForm ? stored : ((stored >> 1) ^ (0u - (stored & 1u))) & mask;
  return (v + radius) & mask;
}

}  // namespace fz::spline::rules
