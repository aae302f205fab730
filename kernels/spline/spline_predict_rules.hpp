// The spline stage's 1-D predictor (spline.hpp's table): which neighbours a
// point has along the pass axis (its stencil) and the stencil's formula in
// T, one rounding per operation. Split from spline_rules.hpp (which includes
// it): the CPU tiles (tile_cpu.hpp) and the GPU walk (tiles_cuda.cuh) must
// predict bit for bit alike, and this is the arithmetic they share. Host and
// device code; reads only the working buffer it is given.
#pragma once

#include "common/host_device.hpp"
#include "spline/spline_grid_rules.hpp"  // Interpolation

namespace fz::spline::rules {

// The 1-D prediction along the pass axis (spline.hpp's table) in two steps:
// which neighbours the point has, its stencil (a function of its index
// alone, so a CPU pass classifies each index once and runs the points of a
// stencil in a loop without branches), then the stencil's formula.
enum Stencil : unsigned {
  kStencilB = 0,         // no c (then no d either): b
  kStencilBC = 1,        // linear, or cubic with neither a nor d: (b + c) / 2
  kStencilNotAKnot = 2,  // not-a-knot cubic, a and d: (-3a + 23b + 23c - 3d) / 40
  kStencilNatural = 3,   // natural cubic, a and d: (-a + 9b + 9c - d) / 16
  kStencilABC = 4,       // cubic, a, no d: (-a + 6b + 3c) / 8
  kStencilBCD = 5,       // cubic, d, no a: (3b + 6c - d) / 8
};

// The stencil at local index i (an odd multiple of u), tile size B, global
// index g of extent n. Index: size_t on the CPU; the GPU's walk passes tile
// local indices in 32 bits (below 2^9, so nothing wraps), which halves the
// instructions of these compares.
template <typename Index>
FZ_HOST_DEVICE inline Stencil stencil_of(Index i, Index u, Index tile, Index g, Index n, unsigned interpolation) {
  if (!(g + u < n)) return kStencilB;
  if (interpolation == kLinear) return kStencilBC;
  const bool has_a = i >= 3 * u;
  const bool has_d = i + 3 * u <= tile && g + 3 * u < n;
  if (has_a && has_d) return interpolation == kNaturalCubic ? kStencilNatural : kStencilNotAKnot;
  if (has_a) return kStencilABC;
  if (has_d) return kStencilBCD;
  return kStencilBC;
}

// Stencil S's prediction of the point `at` (a slot of a tile's working
// buffer), whose neighbours along the pass axis lie `stride` slots apart (u
// points). In T, left to right, one rounding per operation (no contraction:
// -ffp-contract=off, -fmad=false). Reads only the neighbours S has.
template <unsigned S, typename T, typename Stride>
FZ_HOST_DEVICE inline T predict_stencil(const T* at, Stride stride) {
  const T b = at[-stride];
  if constexpr (S == kStencilB) {
    return b;
  } else {
    const T c = at[stride];
    if constexpr (S == kStencilBC) {
      return (b + c) / T(2);
    } else if constexpr (S == kStencilNotAKnot) {
      const T a = at[-3 * stride];
      const T d = at[3 * stride];
      return (T(-3) * a + T(23) * b + T(23) * c - T(3) * d) / T(40);
    } else if constexpr (S == kStencilNatural) {
      const T a = at[-3 * stride];
      const T d = at[3 * stride];
      return (-a + T(9) * b + T(9) * c - d) / T(16);
    } else if constexpr (S == kStencilABC) {
      const T a = at[-3 * stride];
      return (-a + T(6) * b + T(3) * c) / T(8);
    } else {
      static_assert(S == kStencilBCD, "unknown stencil");
      const T d = at[3 * stride];
      return (T(3) * b + T(6) * c - d) / T(8);
    }
  }
}

// predict_stencil with the stencil known only at run time.
template <typename T, typename Stride>
FZ_HOST_DEVICE inline T predict_with(Stencil stencil, const T* at, Stride stride) {
  switch (stencil) {
    case kStencilB: return predict_stencil<kStencilB>(at, stride);
    case kStencilBC: return predict_stencil<kStencilBC>(at, stride);
    case kStencilNotAKnot: return predict_stencil<kStencilNotAKnot>(at, stride);
    case kStencilNatural: return predict_stencil<kStencilNatural>(at, stride);
    case kStencilABC: return predict_stencil<kStencilABC>(at, stride);
    default: return predict_stencil<kStencilBCD>(at, stride);
  }
}

// The 1-D prediction of the point `at` along the pass axis, its neighbours
// `stride` slots apart: local index i, tile size B, global index g of extent
// n (stencil_of, then predict_stencil).
template <typename T>
FZ_HOST_DEVICE inline T predict_along(const T* at, int stride, unsigned i, unsigned u, unsigned tile, unsigned g,
                                      unsigned n, unsigned interpolation) {
  return predict_with(stencil_of<unsigned>(i, u, tile, g, n, interpolation), at, stride);
}

}  // namespace fz::spline::rules
