// Device primitives of the LORENZO CUDA encoder, per element: the packed
// (p, value kind) word, fast coordinates from an element index, the Lorenzo
// delta from the prequantized neighbours, and an element's code and record.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "lorenzo/common_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;


// A prequantized value and its value kind in one word: the kind in the top
// two bits, p (|p| <= PMAX, far below 2^(bits-3)) in two's complement below.
// One word per element instead of two arrays: a quarter less traffic.
template <typename U>
__device__ __forceinline__ U pack_element(U p, uint8_t kind) {
  return (p & (~U{0} >> 2)) | (static_cast<U>(kind) << (8 * sizeof(U) - 2));
}
template <typename U>
__device__ __forceinline__ U p_of(U word) {
  using I = typename std::make_signed<U>::type;
  return static_cast<U>(static_cast<I>(word << 2) >> 2);
}
template <typename U>
__device__ __forceinline__ uint8_t value_kind_of(U word) {
  return static_cast<uint8_t>(word >> (8 * sizeof(U) - 2));
}

// Division by a fixed 32-bit divisor as a multiply-high and a shift (the
// round-up method with a 33-bit multiplier), exact for every 32-bit dividend:
// the coordinates of an element cost a few instructions, not two 64-bit
// divisions.
struct Divisor {
  uint32_t d = 1, magic = 1, shift = 0;
  __device__ __forceinline__ uint32_t divide(uint32_t v) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(__umulhi(magic, v)) + v) >> shift);
  }
};

inline Divisor divisor_for(uint32_t d) {
  Divisor r;
  r.d = d;
  r.shift = 0;
  while ((uint64_t{1} << r.shift) < d) ++r.shift;  // ceil(log2 d)
  r.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << r.shift) - d)) / d + 1);
  return r;
}

// An element's coordinates; 32-bit arithmetic when every index fits.
struct Grid {
  Shape s;
  Divisor nx, ny;
  bool small;  // n < 2^32
};

__device__ __forceinline__ void coordinates(const Grid& g, size_t i, size_t& x, size_t& y, size_t& z) {
  if (g.small) {
    const uint32_t v = static_cast<uint32_t>(i);
    const uint32_t row = g.nx.divide(v);
    const uint32_t plane = g.ny.divide(row);
    x = v - row * g.nx.d;
    y = row - plane * g.ny.d;
    z = plane;
  } else {
    x = i % g.s.nx;
    const size_t row = i / g.s.nx;
    y = row % g.s.ny;
    z = row / g.s.ny;
  }
}

inline Grid grid_of(const Shape& s) {
  Grid g;
  g.s = s;
  g.small = s.n < (uint64_t{1} << 32);
  if (g.small) {
    g.nx = divisor_for(static_cast<uint32_t>(s.nx));
    g.ny = divisor_for(static_cast<uint32_t>(s.ny));
  }
  return g;
}

// The Lorenzo delta of element i = (z, y, x), modulo 2^bits.
template <typename U>
__device__ inline U lorenzo_delta(const U* p, const Grid& g, size_t i) {
  size_t x, y, z;
  coordinates(g, i, x, y, z);
  const size_t sy = g.s.nx, sz = g.s.nx * g.s.ny;
  const bool left = x > 0, up = y > 0, back = z > 0;
  U d = p_of(p[i]);
  if (left) d -= p_of(p[i - 1]);
  if (up) d -= p_of(p[i - sy]);
  if (left && up) d += p_of(p[i - sy - 1]);
  if (back) {
    d -= p_of(p[i - sz]);
    if (left) d += p_of(p[i - sz - 1]);
    if (up) d += p_of(p[i - sz - sy]);
    if (left && up) d -= p_of(p[i - sz - sy - 1]);
  }
  return d;
}

// Packed per-element counts: records (bits 0-20), stored deltas (21-41), raws
// (42-62); a tile holds at most 2048 of each.
__device__ inline uint64_t packed_counts(bool record, uint8_t kind) {
  if (!record) return 0;
  return 1ull | (static_cast<uint64_t>((kind & kHasDelta) != 0) << 21) |
         (static_cast<uint64_t>((kind & kValueMask) == kValueRaw) << 42);
}

template <typename U>
struct ElementInfo {
  U delta;
  uint16_t code;
  uint8_t kind;  // record kind
  bool record;
};

template <typename U>
__device__ inline ElementInfo<U> element_info(const U* p, const Grid& g, size_t i, U code_limit) {
  ElementInfo<U> e;
  e.delta = lorenzo_delta(p, g, i);
  const U z = zigzag(e.delta);
  const bool fits = z < code_limit;
  e.code = fits ? static_cast<uint16_t>(z) : uint16_t{0};
  e.kind = static_cast<uint8_t>((fits ? 0 : kHasDelta) | value_kind_of(p[i]));
  e.record = e.kind != 0;
  return e;
}

}  // namespace fz::lorenzo::cuda::detail
