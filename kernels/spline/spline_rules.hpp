// The rules of the spline stage that the CPU (encode_cpu.cpp, decode_cpu.cpp)
// and a later GPU version share, so that the two cannot drift apart: tile size
// and level count per rank, the chunk's tile and anchor grids, the 1-D
// predictor, the quantization of one element, the per-level steps, the side
// stream's layout and what a valid config is (spline.hpp states the format).
// The per-element rules are host and device code (common/host_device.hpp);
// nothing here allocates or throws.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/float_state.hpp"
#include "common/host_device.hpp"
#include "lorenzo/lorenzo_rules.hpp"  // within_bound, magnitude, Traits: the exact bound test is shared
#include "spline/spline.hpp"

namespace fz::spline::rules {

using lorenzo::rules::magnitude;
using lorenzo::rules::within_bound;

// Tile edge B per rank (spline.hpp): 16 in 3-D, 64 in 2-D, 256 in 1-D, and
// the level count L = log2(B): units B/2 .. 1.
FZ_HOST_DEVICE constexpr size_t tile_size(unsigned rank) { return rank == 3 ? 16 : rank == 2 ? 64 : 256; }
FZ_HOST_DEVICE constexpr unsigned level_count(unsigned rank) { return rank == 3 ? 4 : rank == 2 ? 6 : 8; }
constexpr unsigned kMaxLevels = 8;

// The largest radius code_bytes can carry: codes run up to 2 * radius - 1.
FZ_HOST_DEVICE constexpr uint32_t max_radius(unsigned code_bytes) { return code_bytes == 1 ? 128 : 32768; }

// Level flags (spline.hpp): bit 0 reverse (axes fastest to slowest); bits
// 1-2 the interpolation: 0 not-a-knot cubic (-3, 23, 23, -3) / 40, 1 natural
// cubic (-1, 9, 9, -1) / 16, 2 linear (b + c) / 2; 3 and bits 3-7 are malformed.
constexpr uint8_t kFlagReverse = 1;
enum Interpolation : unsigned { kNotAKnotCubic = 0, kNaturalCubic = 1, kLinear = 2 };
FZ_HOST_DEVICE constexpr unsigned interpolation_of(uint8_t flags) { return (flags >> 1) & 3u; }
FZ_HOST_DEVICE constexpr bool flags_are_valid(uint8_t flags) { return flags < 8 && interpolation_of(flags) != 3; }

// The chunk as three axes, slowest first: a rank-r chunk gets 3 - r leading
// axes of extent 1 (one tile of one point each, which no pass ever visits).
struct Grid {
  unsigned rank = 1;
  size_t tile = 256;        // B
  size_t n[3] = {1, 1, 1};  // extents
  size_t tiles[3] = {0, 0, 0};  // ceil(n / B) per axis; also the anchor grid's extents
  size_t elements = 0;
  size_t tile_count = 0;  // also the anchor count

  // True at the points whose every coordinate is a multiple of B.
  FZ_HOST_DEVICE bool is_anchor(size_t z, size_t y, size_t x) const {
    return z % tile == 0 && y % tile == 0 && x % tile == 0;
  }
};

enum class GridCheck { kOk, kBadRank, kTooManyElements };

// dims (1 to 3 extents, slowest first) as a Grid; an extent of 0 gives no
// elements and no tiles. Bounded so that N * 16 never overflows.
inline GridCheck grid_of(const std::vector<size_t>& dims, Grid& g) {
  if (dims.empty() || dims.size() > 3) return GridCheck::kBadRank;
  g = Grid{};
  g.rank = static_cast<unsigned>(dims.size());
  g.tile = tile_size(g.rank);
  for (size_t k = 0; k < dims.size(); ++k) g.n[3 - dims.size() + k] = dims[k];
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t elements = 1;
  for (size_t e : g.n) {
    if (e != 0 && elements > kMaxElements / e) return GridCheck::kTooManyElements;
    elements *= e;
  }
  g.elements = elements;
  g.tile_count = 1;
  for (int k = 0; k < 3; ++k) {
    g.tiles[k] = (g.n[k] + g.tile - 1) / g.tile;
    g.tile_count *= g.tiles[k];
  }
  return GridCheck::kOk;
}

// One tile (spline.hpp): where it lies in the chunk and the slots of its
// private working buffer of (B+1)^rank values. Host and device: the CPU's
// tiles (tile_cpu.hpp) and the GPU's thread blocks use the same geometry.
struct TileFrame {
  size_t origin[3] = {0, 0, 0};  // global coordinates of local 0
  size_t extent[3] = {1, 1, 1};  // local points the tile computes: min(B + 1, n - origin)
  size_t stride[3] = {0, 0, 1};  // working-buffer strides (B + 1 per real axis, 1 per padded one)
  size_t buffer_size = 1;

  FZ_HOST_DEVICE TileFrame(const Grid& grid, size_t tile_index) {
    size_t rest = tile_index;
    size_t span[3];
    for (int k = 2; k >= 0; --k) {
      const size_t t = rest % grid.tiles[k];
      rest /= grid.tiles[k];
      origin[k] = t * grid.tile;
      const size_t left = grid.n[k] - origin[k];
      extent[k] = left < grid.tile + 1 ? left : grid.tile + 1;
      span[k] = k >= 3 - static_cast<int>(grid.rank) ? grid.tile + 1 : 1;
    }
    stride[2] = 1;
    stride[1] = span[2];
    stride[0] = span[2] * span[1];
    buffer_size = stride[0] * span[0];
  }

  FZ_HOST_DEVICE size_t slot(size_t z, size_t y, size_t x) const {
    return z * stride[0] + y * stride[1] + x * stride[2];
  }
};

// (B+1)^rank: every tile's working buffer has this many slots.
FZ_HOST_DEVICE constexpr size_t tile_buffer_size(unsigned rank) {
  return rank == 3 ? 17 * 17 * 17 : rank == 2 ? 65 * 65 : 257;
}

// True where the tile owns the point (writes its code / output): local < B
// on every axis; the points at local B are the next tile's.
FZ_HOST_DEVICE inline bool owns(const Grid& grid, size_t z, size_t y, size_t x) {
  return z < grid.tile && y < grid.tile && x < grid.tile;
}

FZ_HOST_DEVICE inline size_t global_index(const Grid& grid, const TileFrame& f, size_t z, size_t y, size_t x) {
  return ((f.origin[0] + z) * grid.n[1] + f.origin[1] + y) * grid.n[2] + f.origin[2] + x;
}

// Pass j (0..2) of the level of unit u (spline.hpp): along axis `axis`, that
// axis at odd multiples of u, the axes before it in the pass order on the
// u-grid, those after it on the 2u-grid; local coordinates start[k],
// start[k] + step[k], ... below the tile's extent. `empty` when the axis has
// no odd multiple of u inside the tile (also every padded axis).
struct Pass {
  int axis;
  bool empty;
  size_t start[3];
  size_t step[3];
};
FZ_HOST_DEVICE inline Pass pass_of(const TileFrame& f, size_t u, bool reverse, int j) {
  Pass p;
  p.axis = reverse ? 2 - j : j;
  p.empty = f.extent[p.axis] <= u;
  for (int k = 0; k < 3; ++k) {
    const bool before = reverse ? k > p.axis : k < p.axis;
    p.start[k] = k == p.axis ? u : 0;
    p.step[k] = k == p.axis || !before ? 2 * u : u;
  }
  return p;
}

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

// Tuning::kRatioFirst's sample (spline.hpp): S = min(ceil(tiles / 16), 256)
// tiles, sample j being tile (j * 2654435761) mod tiles. A multiplicative
// stride spreads the sample over the chunk whatever its shape (a plain
// "every 16th tile" hits one column of tiles when a row holds a multiple of
// 16 of them). The cap bounds the tuning's cost for chunks above 64 MiB
// (float32 in 3-D), where it took a fifth of the GPU's time (512 MiB, 2048
// sample tiles: 0.84 of 4.35 ms on the H100; 0.26 ms with 512) to choose a
// few flags that 256 tiles (a million points) choose as well; smaller chunks
// are not affected.
constexpr unsigned kFlagChoices = 6;  // flags 0..5: both axis orders x three interpolations
constexpr size_t kMaxSampleTiles = 256;
FZ_HOST_DEVICE inline size_t sample_count(size_t tile_count) {
  const size_t s = (tile_count + 15) / 16;
  return s < kMaxSampleTiles ? s : kMaxSampleTiles;
}
FZ_HOST_DEVICE inline size_t sample_tile(size_t j, size_t tile_count) {
  return static_cast<size_t>((static_cast<uint64_t>(j) * uint64_t{2654435761u}) % tile_count);
}

// Outlier indices are u32 when N <= 2^32, else u64 (spline.hpp).
FZ_HOST_DEVICE inline size_t index_width_of(size_t n) { return n <= (uint64_t{1} << 32) ? 4 : 8; }

// Byte offsets of the side stream's parts (spline.hpp): u8 rank, u8 L,
// u32 radius, L x (u8 flags, step), anchors, u64 K, indices, values.
struct SideLayout {
  size_t levels_at = 6;
  size_t level_bytes = 0;  // 1 + W
  size_t anchors_at = 0;
  size_t count_at = 0;
  size_t indices_at = 0;  // count_at + 8
  FZ_HOST_DEVICE size_t values_at(size_t outliers, size_t index_width) const {
    return indices_at + outliers * index_width;
  }
};
inline SideLayout side_layout(unsigned rank, unsigned width, size_t anchor_count) {
  SideLayout s;
  s.level_bytes = 1 + width;
  s.anchors_at = s.levels_at + level_count(rank) * s.level_bytes;
  s.count_at = s.anchors_at + anchor_count * width;
  s.indices_at = s.count_at + 8;
  return s;
}

// Why encode refuses a config, as its UsageError's message; nullptr when it is valid.
inline const char* config_problem(const Config& c) {
  if (c.width != 4 && c.width != 8) return "spline: width must be 4 or 8";
  if (c.code_bytes != 1 && c.code_bytes != 2) return "spline: code_bytes must be 1 or 2";
  if (c.radius < 1 || c.radius > max_radius(c.code_bytes)) return "spline: radius must be in [1, 128] for 1-byte codes, [1, 32768] for 2";
  if (!(c.alpha >= 1) || !std::isfinite(c.alpha)) return "spline: alpha must be >= 1 and finite";
  if (!(c.beta >= 1) || !std::isfinite(c.beta)) return "spline: beta must be >= 1 and finite";
  if (c.tuning != Tuning::kOff && c.tuning != Tuning::kRatioFirst) return "spline: unknown tuning";
  if (c.code_form != CodeForm::kOffset && c.code_form != CodeForm::kSigned && c.code_form != CodeForm::kZigzag)
    return "spline: unknown code form";
  return nullptr;
}

// Every step must be a positive, normal, finite value of T (the decoder's check).
template <typename T>
bool step_is_valid(T step) {
  return step >= std::numeric_limits<T>::min() && step <= std::numeric_limits<T>::max();
}

// The per-level steps, steps[l] for level l (0 finest): 2 * eb / min(alpha^l,
// beta) in double, clamped to [smallest normal, largest finite] of T, then
// rounded toward zero into T (so a step never exceeds 2 * eb unless clamped
// up). The clamp keeps every step positive, normal and finite: a step clamped
// up to the smallest normal only makes more elements fail the strict check
// (outliers), never breaks the bound. Host only; the steps travel in the side
// stream, so the decoder never recomputes them.
template <typename T>
void level_steps(double eb, double alpha, double beta, unsigned levels, T* steps) {
  FloatStateGuard guard;
  double power = 1;
  for (unsigned l = 0; l < levels; ++l) {
    const double divisor = power < beta ? power : beta;
    double raw = eb / divisor * 2;
    const double top = static_cast<double>(std::numeric_limits<T>::max());
    const double bottom = static_cast<double>(std::numeric_limits<T>::min());
    if (!(raw <= top)) raw = top;
    if (raw < bottom) raw = bottom;
    T step = static_cast<T>(raw);
    if (static_cast<double>(step) > raw) step = std::nextafter(step, T(0));
    steps[l] = step;
    power *= alpha;
  }
}

// Finite (by the exponent bits: no libm, no numeric_limits in device code).
template <typename T>
FZ_HOST_DEVICE inline bool is_finite(T x) {
  using Traits = lorenzo::rules::Traits<T>;
  typename Traits::U bits;
  memcpy(&bits, &x, sizeof(T));
  return ((bits >> Traits::kMantissaBits) & Traits::kExponentMask) != Traits::kExponentMask;
}

// An element the quantizer may code: finite, not -0 and not denormal (NaN,
// +-Inf, -0 and denormals are outliers, stored exactly: docs/FORMAT.md,
// section 0, rule 6). +0 is an ordinary value.
template <typename T>
FZ_HOST_DEVICE inline bool is_codable(T x) {
  using Traits = lorenzo::rules::Traits<T>;
  typename Traits::U bits;
  memcpy(&bits, &x, sizeof(T));
  const auto magnitude_bits = bits & ~(typename Traits::U{1} << (8 * sizeof(T) - 1));
  const bool denormal = magnitude_bits != 0 && ((bits >> Traits::kMantissaBits) & Traits::kExponentMask) == 0;
  return is_finite(x) && !denormal && bits != (typename Traits::U{1} << (8 * sizeof(T) - 1));
}

// What later predictions read for an element stored exactly: the value, or 0
// when it is not finite.
template <typename T>
FZ_HOST_DEVICE inline T prediction_value(T x) {
  return is_finite(x) ? x : T(0);
}

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

// The 1-D prediction of the point `at` along the pass axis, its neighbours
// `stride` slots apart: local index i, tile size B, global index g of extent
// n (stencil_of, then predict_stencil).
template <typename T>
FZ_HOST_DEVICE inline T predict_along(const T* at, int stride, unsigned i, unsigned u, unsigned tile, unsigned g,
                                      unsigned n, unsigned interpolation) {
  switch (stencil_of<unsigned>(i, u, tile, g, n, interpolation)) {
    case kStencilB: return predict_stencil<kStencilB>(at, stride);
    case kStencilBC: return predict_stencil<kStencilBC>(at, stride);
    case kStencilNotAKnot: return predict_stencil<kStencilNotAKnot>(at, stride);
    case kStencilNatural: return predict_stencil<kStencilNatural>(at, stride);
    case kStencilABC: return predict_stencil<kStencilABC>(at, stride);
    default: return predict_stencil<kStencilBCD>(at, stride);
  }
}

// x' of code q: fl_T(p + fl_T(q * step)) (q converts to T exactly: |q| < 2^15).
template <typename T>
FZ_HOST_DEVICE inline T reconstruct(T p, int32_t q, T step) {
  return p + static_cast<T>(q) * step;
}

// One level's quantizer: step, inv = fl_T(1 / step) (computed under the
// kernels' float state), the radius and the user's bound.
template <typename T>
struct LevelQuantizer {
  T step;
  T inv;
  uint32_t radius;
  double bound;
};

template <typename T>
LevelQuantizer<T> make_level_quantizer(T step, uint32_t radius, double bound) {
  FloatStateGuard guard;
  return LevelQuantizer<T>{step, T(1) / step, radius, bound};
}

// Quantizes x against prediction p (spline.hpp): returns the code (q +
// radius, or 0 for an outlier) and sets `value` to what later predictions
// read (x', or the exact value, 0 if not finite). q is rounded half away
// from zero without libm: |s| < radius <= 2^15, so the truncation and
// a - t are exact.
template <typename T>
FZ_HOST_DEVICE inline uint32_t quantize(T x, T p, const LevelQuantizer<T>& lq, T& value, int32_t& q) {
  q = 0;
  value = prediction_value(x);
  if (!is_codable(x)) return 0;
  const T s = (x - p) * lq.inv;
  const T a = magnitude(s);
  if (!(a < static_cast<T>(lq.radius))) return 0;  // also NaN (an overflowing prediction)
  int32_t t = static_cast<int32_t>(a);
  t += a - static_cast<T>(t) >= T(0.5) ? 1 : 0;
  if (t >= static_cast<int32_t>(lq.radius)) return 0;
  const int32_t candidate = s < 0 ? -t : t;
  const T r = reconstruct(p, candidate, lq.step);
  if (!within_bound(static_cast<double>(x), static_cast<double>(r), lq.bound)) return 0;
  q = candidate;
  value = r;
  return static_cast<uint32_t>(candidate + static_cast<int32_t>(lq.radius));
}

// A fill element (spline.hpp, the fill mask): code q = 0, so that x' is
// the prediction itself, fl_T(p + 0 * step), whatever x (the fill mask stage
// puts the fill value back after decoding, and the decoder, told nothing,
// computes the same x'). Land and missing data then cost one frequent code
// each and continue the field smoothly for the predictions of their
// neighbours, where a replaced value (the fill mask stage's carry-forward)
// would put a step at every coast. Only when x' is not finite (an
// overflowing prediction) is the element quantized as any other: the code
// and value quantize set are left alone. Sets q to 0 when it codes.
template <typename T>
FZ_HOST_DEVICE inline void code_fill(T p, const LevelQuantizer<T>& lq, T& value, uint32_t& code, int32_t& q) {
  const T r = reconstruct(p, 0, lq.step);
  if (!is_finite(r)) return;
  value = r;
  code = lq.radius;
  q = 0;
}

// Bit i % 8 of byte i / 8 of a fill mask (fillmask.hpp's mask stream).
FZ_HOST_DEVICE inline bool is_fill(const uint8_t* mask, size_t i) { return ((mask[i >> 3] >> (i & 7)) & 1u) != 0; }

}  // namespace fz::spline::rules
