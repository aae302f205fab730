// The code groups on the GPU (spline.hpp, spline_rules.hpp): the kernels of
// encode and decode work on codes in element order in scratch memory; these
// move them to and from the three group streams, one thread per element,
// with the closed forms the CPU uses (groups_cpu.cpp), so the bytes match.
// The kernels are static: encode_cuda.cu and decode_cuda.cu each get a copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spline/spline_rules.hpp"
#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

constexpr unsigned kGroupThreads = 256;

struct GroupStreams {
  uint8_t* at[kCodeGroups];
};

// Blocks: x covers a row in kGroupThreads pieces, y walks the rows (grid-stride,
// since a grid's y extent is at most 65535).
inline dim3 group_blocks(const Grid& grid) {
  const size_t rows = grid.n[0] * grid.n[1];
  const size_t pieces = (grid.n[2] + kGroupThreads - 1) / kGroupThreads;
  return dim3(static_cast<unsigned>(pieces), static_cast<unsigned>(rows < 65535 ? rows : 65535));
}

__device__ __forceinline__ void store_code_word(uint8_t* at, unsigned code_bytes, uint32_t code) {
  if (code_bytes == 1) *at = static_cast<uint8_t>(code);
  else store_word<uint16_t>(at, static_cast<uint16_t>(code));
}

// element-order codes -> the three groups, in the stored form.
static __global__ void __launch_bounds__(kGroupThreads)
    group_codes(Grid grid, CodeGroups groups, const uint8_t* codes, unsigned code_bytes, bool is_signed,
                uint32_t radius, GroupStreams out) {
  const size_t x = static_cast<size_t>(blockIdx.x) * kGroupThreads + threadIdx.x;
  if (x >= grid.n[2]) return;
  const size_t rows = grid.n[0] * grid.n[1];
  for (size_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const CodeRow r = code_row(grid, groups, row / grid.n[1], row % grid.n[1]);
    size_t offset;
    const unsigned g = code_place(r, x, offset);
    const uint32_t code = code_at(codes, code_bytes, row * grid.n[2] + x);
    store_code_word(out.at[g] + offset * code_bytes, code_bytes, stored_code(code, radius, is_signed, code_bytes));
  }
}

// The three groups -> element-order codes in the offset form. The radius
// comes from the side stream (*radius, read on the device); a bad one is
// reported by the header's check, and the codes it gives are never used.
static __global__ void __launch_bounds__(kGroupThreads)
    ungroup_codes(Grid grid, CodeGroups groups, const GroupStreams in, unsigned code_bytes, bool is_signed,
                  const uint32_t* radius, uint8_t* codes) {
  const size_t x = static_cast<size_t>(blockIdx.x) * kGroupThreads + threadIdx.x;
  if (x >= grid.n[2]) return;
  const uint32_t r_value = is_signed ? *radius : 0;
  const size_t rows = grid.n[0] * grid.n[1];
  for (size_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const CodeRow r = code_row(grid, groups, row / grid.n[1], row % grid.n[1]);
    size_t offset;
    const unsigned g = code_place(r, x, offset);
    const uint32_t stored = code_at(in.at[g], code_bytes, offset);
    store_code_word(codes + (row * grid.n[2] + x) * code_bytes, code_bytes,
                    code_of_stored(stored, r_value, is_signed, code_bytes));
  }
}

}  // namespace fz::spline::cuda::detail
