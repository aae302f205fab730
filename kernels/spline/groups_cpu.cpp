// The code groups on the CPU (groups_cpu.hpp).
#include "spline/groups_cpu.hpp"

namespace fz::spline::detail {
namespace {

// Calls visit(element index, group, offset in the group) for every element,
// rows in parallel (each row's places come from the closed forms alone).
template <typename Visit>
void for_each_place(const rules::Grid& grid, const Executor& exec, Visit visit) {
  const rules::CodeGroups groups = rules::code_groups(grid);
  const size_t rows = grid.elements == 0 ? 0 : grid.n[0] * grid.n[1];
  const size_t width = grid.n[2];
  constexpr size_t kRowsPerTask = 64;
  exec.parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](size_t task) {
    const size_t end = task * kRowsPerTask + kRowsPerTask < rows ? task * kRowsPerTask + kRowsPerTask : rows;
    for (size_t row = task * kRowsPerTask; row < end; ++row) {
      const rules::CodeRow r = rules::code_row(grid, groups, row / grid.n[1], row % grid.n[1]);
      for (size_t x = 0; x < width; ++x) {
        size_t offset;
        const unsigned g = rules::code_place(r, x, offset);
        visit(row * width + x, g, offset);
      }
    }
  });
}

uint32_t load_code(const uint8_t* at, unsigned code_bytes) {
  return code_bytes == 1 ? *at : load_le<uint16_t>(at);
}

void store_code(uint8_t* at, unsigned code_bytes, uint32_t code) {
  if (code_bytes == 1) *at = static_cast<uint8_t>(code);
  else store_le<uint16_t>(at, static_cast<uint16_t>(code));
}

}  // namespace

void group_codes(const rules::Grid& grid, const uint8_t* codes, const CodeFormat& format, uint32_t radius,
                 Bytes (&groups)[kCodeGroups], const Executor& exec) {
  const rules::CodeGroups sizes = rules::code_groups(grid);
  const unsigned cb = format.code_bytes;
  const bool is_signed = format.code_form == CodeForm::kSigned;
  uint8_t* out[kCodeGroups];
  for (unsigned g = 0; g < kCodeGroups; ++g) {
    groups[g].resize(sizes.size[g] * cb);
    out[g] = groups[g].data();
  }
  for_each_place(grid, exec, [&](size_t element, unsigned g, size_t offset) {
    const uint32_t code = load_code(codes + element * cb, cb);
    store_code(out[g] + offset * cb, cb, rules::stored_code(code, radius, is_signed, cb));
  });
}

void ungroup_codes(const rules::Grid& grid, const ByteSpan (&groups)[kCodeGroups], const CodeFormat& format,
                   uint32_t radius, uint8_t* codes, const Executor& exec) {
  const unsigned cb = format.code_bytes;
  const bool is_signed = format.code_form == CodeForm::kSigned;
  for_each_place(grid, exec, [&](size_t element, unsigned g, size_t offset) {
    const uint32_t stored = load_code(groups[g].data + offset * cb, cb);
    store_code(codes + element * cb, cb, rules::code_of_stored(stored, radius, is_signed, cb));
  });
}

}  // namespace fz::spline::detail
