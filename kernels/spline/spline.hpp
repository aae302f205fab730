// SPLINE: the G-Interp predictor of cuSZ-Hi (stage type 13, work in progress:
// no preset uses it yet; CPU and CUDA write the same bytes), float32 /
// float64, 1-D/2-D/3-D, in independent tiles, with the bound strictly
// checked inside the level loop. docs/FORMAT.md (stage type 13) holds this
// text too.
//
// Tiles. The chunk (dims slowest first, extents n_k, N = product) is cut into
// tiles of B points per axis: B = 16 for 3 axes, 64 for 2, 256 for 1. A tile
// computes its points at local coordinates 0..B on every axis (the points at
// local B, its "halo", belong to the next tile, which computes them the same
// way) whose global coordinate is < n_k. It never reads another tile's work.
// Anchors: the points whose every coordinate is a multiple of B, stored exactly.
//
// Levels. Unit u runs B/2, B/4, ..., 1 (level l = log2(u): 3..0 in 3-D, 5..0
// in 2-D, 7..0 in 1-D). At level u the points of the 2u-grid are known; the
// passes give the others, one axis at a time. With reverse = 0 (3-D), axes
// slowest to fastest: pass along axis 0 for points with axes 1, 2 on the
// 2u-grid and axis 0 an odd multiple of u; then along axis 1 (axis 2 on the
// 2u-grid, axis 0 on the u-grid); then along axis 2 (axes 0, 1 on the u-grid).
// reverse = 1 runs the axes fastest to slowest. 2-D and 1-D likewise.
//
// 1-D prediction along the pass axis at local index i (an odd multiple of u),
// global index g, extent n, neighbours a = v[i-3u], b = v[i-u], c = v[i+u],
// d = v[i+3u], in the element type T, left to right:
//   hasC = g+u < n; hasD = i+3u <= B and g+3u < n; hasA = i >= 3u
//   hasA and hasD:          cubic: natural = 0: (-3a + 23b + 23c - 3d) / 40
//                                  natural = 1: (-a + 9b + 9c - d) / 16
//   hasA, !hasD, hasC:      (-a + 6b + 3c) / 8
//   !hasA, hasD:            (3b + 6c - d) / 8
//   !hasA, !hasD, hasC:     (b + c) / 2
//   !hasC:                  b
// The values v are the reconstructed ones (what the decoder has); a value
// that is not finite stands as 0 in predictions.
//
// Steps (encoder only; the decoder reads them): step_l = 2 * eb / min(alpha^l,
// beta) in double, clamped to [smallest normal, largest finite] of T, then
// rounded toward zero into T. A step clamped up to the smallest normal (eb
// below it) only makes more elements fail the check below, never the bound.
//
// Quantization of element x with prediction p at level l: step_l (a value of
// T, stored in the side stream), inv_l = fl_T(1 / step_l);
//   q = round-half-away(fl_T((x - p) * inv_l)), x' = fl_T(p + fl_T(q * step_l)),
// accepted iff x is finite, x is not -0, |q| < radius, and |x - x'| <= eb
// exactly (the user's absolute bound, checked in double). Accepted: code =
// q + radius (1 .. 2*radius-1), and x' is what later predictions read. Not
// accepted: code 0, the element is an outlier stored exactly, and its exact
// value is what later predictions read (0 if it is not finite).
//
// Streams:
//   codes: N codes, `code_bytes` (1 or 2) little-endian bytes each, in element
//          (C) order. Anchors and outliers have code 0; any other code 0 is
//          malformed.
//   side:  u8 rank | u8 levels L | u32 radius | per level l = L-1 .. 0: u8 flags (bit 0
//          reverse, bit 1 natural; other bits 0) and step_l (W bytes, T) |
//          anchors (W bytes each, anchor-grid C order) |
//          u64 outlier count K | K indices (u32 if N <= 2^32, else u64;
//          strictly increasing) | K values (W bytes each, the element's bits)
// The side stream has no bytes after the outlier values; a chunk with no
// elements still has the header and L levels, no anchors and K = 0.
// The same bytes for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::spline {

enum class Tuning : uint8_t {
  kOff = 0,         // every level: reverse 0, natural 0
  // Per level, coarsest first, with the coarser levels' choices applied: the
  // flags (0..3) with the smallest integer sum of |q| (an outlier counting as
  // the radius) over every point that the sample tiles compute at that level,
  // halo included; ties to the lowest flags. Sample: S = ceil(tiles / 16)
  // tiles, tile (j * 2654435761) mod tiles for j < S (tiles in C order).
  kRatioFirst = 1,
};

// What the encoder is told; the decoder reads all it needs from the side stream.
struct Config {
  unsigned width = 4;        // 4 (float32) or 8 (float64)
  unsigned code_bytes = 2;   // 1 (radius <= 128) or 2 (radius <= 32768)
  uint32_t radius = 512;     // codes 1 .. 2*radius-1 carry q = -(radius-1) .. radius-1
  double alpha = 1.5;        // per-level bound: eb_l = eb / min(alpha^l, beta) (l = 0 finest)
  double beta = 4.0;         //   alpha >= 1, beta >= 1
  Tuning tuning = Tuning::kRatioFirst;
};

struct Streams {
  Bytes codes;
  Bytes side;
};

// dims: 1 to 3 extents, slowest first. eb: the user's absolute bound, > 0 and
// finite; every element that is not an outlier satisfies |x - x'| <= eb
// exactly. Throws UsageError on bad arguments (in.size != N * width, a config
// out of range).
void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double eb, Streams& out,
            const Executor& exec = serial_executor());

// Throws FormatError on malformed or hostile streams (never reads out of
// bounds, allocates at most about the output), UsageError on bad dims or
// width. `code_bytes` and `width` are the encoder's (the engine stores them
// in the stage config).
void decode(ByteSpan codes, ByteSpan side, const std::vector<size_t>& dims, unsigned width, unsigned code_bytes,
            Bytes& out, const Executor& exec = serial_executor());

}  // namespace fz::spline
