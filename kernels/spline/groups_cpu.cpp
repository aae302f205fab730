// The code groups on the CPU (groups_cpu.hpp).
#include "spline/groups_cpu.hpp"

#include <type_traits>

namespace fz::spline::detail {
namespace {

// Calls lane(group, offset, first, step) for each group the row segment
// (z, y, x0 .. x0 + count - 1) has codes in: its codes are the segment's
// points first, first + step, ... (below count), consecutive in the group
// from `offset` on (a group holds a row's codes in x order).
template <typename Lane>
void for_each_lane(const rules::Grid& grid, const rules::CodeGroups& groups, size_t z, size_t y, size_t x0,
                   size_t count, Lane&& lane) {
  const rules::CodeRow r = rules::code_row(grid, groups, z, y);
  // Class 0 rows: every x in group 0. Class 2: even x in group 1, odd x in
  // group 0. Class 4: x = 0 mod 4 in group 2, x = 2 mod 4 in group 1, odd x
  // in group 0.
  const size_t period = r.row_class == 0 ? 1 : r.row_class == 2 ? 2 : 4;
  bool odd_done = false;
  for (size_t first = 0; first < period && first < count; ++first) {
    const size_t x = x0 + first;
    size_t step = period;
    if (period == 4 && x % 2 != 0) {
      if (odd_done) continue;
      odd_done = true;
      step = 2;
    }
    size_t offset;
    const unsigned g = rules::code_place(r, x, offset);
    lane(g, offset, first, step);
  }
}

template <unsigned kCodeBytes>
uint32_t load_code(const uint8_t* at) {
  return kCodeBytes == 1 ? *at : load_le<uint16_t>(at);
}

template <unsigned kCodeBytes>
void store_code(uint8_t* at, uint32_t stored) {
  if (kCodeBytes == 1) *at = static_cast<uint8_t>(stored);
  else store_le<uint16_t>(at, static_cast<uint16_t>(stored));
}

// One lane: codes[first], codes[first + kStep], ... (below count) to the
// consecutive stored codes from `at`; returns how many are 0. The step is a
// constant so that the loops vectorise (class 0 rows are one lane of step 1).
template <unsigned kCodeBytes, unsigned kForm, size_t kStep>
size_t write_lane(uint8_t* at, const uint16_t* codes, size_t first, size_t count, uint32_t radius) {
  unsigned zeros = 0;
  for (size_t i = first, j = 0; i < count; i += kStep, ++j) {
    zeros += codes[i] == 0;
    store_code<kCodeBytes>(at + j * kCodeBytes, rules::stored_code(codes[i], radius, kForm, kCodeBytes));
  }
  return zeros;
}

// The inverse: the stored codes from `at` to codes[first], codes[first +
// kStep], ...; adds to `stats`.
template <unsigned kCodeBytes, unsigned kForm, size_t kStep>
void read_lane(const uint8_t* at, uint16_t* codes, size_t first, size_t count, uint32_t radius, CodeRowStats& stats) {
  unsigned zeros = 0;
  uint16_t largest = 0;
  for (size_t i = first, j = 0; i < count; i += kStep, ++j) {
    const auto code = static_cast<uint16_t>(
        rules::code_of_stored(load_code<kCodeBytes>(at + j * kCodeBytes), radius, kForm, kCodeBytes));
    codes[i] = code;
    zeros += code == 0;
    largest = code > largest ? code : largest;
  }
  stats.zeros += zeros;
  stats.largest = largest > stats.largest ? largest : stats.largest;
}

template <unsigned kCodeBytes, unsigned kForm>
size_t write_row(const rules::Grid& grid, const GroupStreams<uint8_t>& s, size_t z, size_t y, size_t x0,
                 size_t count, const uint16_t* codes) {
  size_t zeros = 0;
  for_each_lane(grid, s.groups, z, y, x0, count, [&](unsigned g, size_t offset, size_t first, size_t step) {
    uint8_t* at = s.at[g] + offset * kCodeBytes;
    if (step == 1) zeros += write_lane<kCodeBytes, kForm, 1>(at, codes, first, count, s.radius);
    else if (step == 2) zeros += write_lane<kCodeBytes, kForm, 2>(at, codes, first, count, s.radius);
    else zeros += write_lane<kCodeBytes, kForm, 4>(at, codes, first, count, s.radius);
  });
  return zeros;
}

template <unsigned kCodeBytes, unsigned kForm>
CodeRowStats read_row(const rules::Grid& grid, const GroupStreams<const uint8_t>& s, size_t z, size_t y, size_t x0,
                      size_t count, uint16_t* codes) {
  CodeRowStats stats;
  for_each_lane(grid, s.groups, z, y, x0, count, [&](unsigned g, size_t offset, size_t first, size_t step) {
    const uint8_t* at = s.at[g] + offset * kCodeBytes;
    if (step == 1) read_lane<kCodeBytes, kForm, 1>(at, codes, first, count, s.radius, stats);
    else if (step == 2) read_lane<kCodeBytes, kForm, 2>(at, codes, first, count, s.radius, stats);
    else read_lane<kCodeBytes, kForm, 4>(at, codes, first, count, s.radius, stats);
  });
  return stats;
}

}  // namespace

namespace {

// Calls run(code bytes, form) with both as compile-time constants
// (std::integral_constant), so that each stored form gets its own loop.
template <typename Run>
auto with_code_layout(unsigned code_bytes, unsigned form, Run&& run) {
  using One = std::integral_constant<unsigned, 1>;
  using Two = std::integral_constant<unsigned, 2>;
  using Offset = std::integral_constant<unsigned, rules::kOffsetForm>;
  using Signed = std::integral_constant<unsigned, rules::kSignedForm>;
  using Zigzag = std::integral_constant<unsigned, rules::kZigzagForm>;
  switch (code_bytes * 4 + form) {
    case 4 + rules::kOffsetForm: return run(One{}, Offset{});
    case 4 + rules::kSignedForm: return run(One{}, Signed{});
    case 4 + rules::kZigzagForm: return run(One{}, Zigzag{});
    case 8 + rules::kOffsetForm: return run(Two{}, Offset{});
    case 8 + rules::kSignedForm: return run(Two{}, Signed{});
    default: return run(Two{}, Zigzag{});
  }
}

}  // namespace

size_t write_code_row(const rules::Grid& grid, const GroupStreams<uint8_t>& streams, size_t z, size_t y, size_t x0,
                      size_t count, const uint16_t* codes) {
  return with_code_layout(streams.code_bytes, streams.form, [&](auto bytes, auto form) {
    return write_row<decltype(bytes)::value, decltype(form)::value>(grid, streams, z, y, x0, count, codes);
  });
}

CodeRowStats read_code_row(const rules::Grid& grid, const GroupStreams<const uint8_t>& streams, size_t z, size_t y,
                           size_t x0, size_t count, uint16_t* codes) {
  return with_code_layout(streams.code_bytes, streams.form, [&](auto bytes, auto form) {
    return read_row<decltype(bytes)::value, decltype(form)::value>(grid, streams, z, y, x0, count, codes);
  });
}

}  // namespace fz::spline::detail
