// SPLINE: the G-Interp predictor of cuSZ-Hi (stage type 13, presets 5 and 6;
// CPU and CUDA write the same bytes), float32 / float64, 1-D/2-D/3-D, in
// independent tiles, with the bound strictly checked inside the level loop.
// docs/FORMAT.md (stage type 13) holds this text too.
//
// Tiles. The chunk (dims slowest first, extents n_k, N = product) is cut into
// tiles of B points per axis: B = 16 for 3 axes, 64 for 2, 256 for 1. A tile
// computes its points at local coordinates 0..B on every axis (the points at
// local B, its "halo", belong to the next tile, which computes them the same
// way) whose global coordinate is < n_k. It never reads another tile's work.
// Anchors: the points whose every coordinate is a multiple of B, stored exactly
// (or, with coarse levels, coded from the root: below).
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
// d = v[i+3u], in the element type T, left to right, by the level's
// interpolation (flags bits 1-2: 0 not-a-knot cubic, 1 natural cubic, 2
// linear):
//   hasC = g+u < n; hasD = i+3u <= B and g+3u < n; hasA = i >= 3u
//   !hasC:                  b
//   linear, hasC:           (b + c) / 2
//   cubic, hasA and hasD:   not-a-knot: (-3a + 23b + 23c - 3d) / 40
//                           natural:    (-a + 9b + 9c - d) / 16
//   cubic, hasA, !hasD:     (-a + 6b + 3c) / 8
//   cubic, !hasA, hasD:     (3b + 6c - d) / 8
//   cubic, !hasA, !hasD:    (b + c) / 2
// The values v are the reconstructed ones (what the decoder has); a value
// that is not finite stands as 0 in predictions.
//
// Steps (encoder only; the decoder reads them): step_l = 2 * eb / min(alpha^l,
// beta) in double, clamped to [smallest normal, largest finite] of T, then
// rounded toward zero into T. A step clamped up to the smallest normal (eb
// below it) only makes more elements fail the check below, never the bound.
// With Config::step_bound > 0 the steps are made from it instead of eb.
//
// Quantization of element x with prediction p at level l: step_l (a value of
// T, stored in the side stream), inv_l = fl_T(1 / step_l);
//   q = round-half-away(fl_T((x - p) * inv_l)), x' = fl_T(p + fl_T(q * step_l)),
// accepted iff x is finite, not -0, not denormal, |q| < radius, and |x - x'| <= eb
// exactly (the user's absolute bound, checked in double). Accepted: code =
// q + radius (1 .. 2*radius-1), and x' is what later predictions read. Not
// accepted: code 0, the element is an outlier stored exactly, and its exact
// value is what later predictions read (0 if it is not finite).
//
// Coarse levels (optional; the decoder is told, by config v2's flag): the
// anchors are not stored but predicted and quantized as every other point,
// by levels over the anchor grid, before any tile level, from one stored
// point, the root (0, 0, 0). The anchor grid has extents A_k = ceil(n_k / B)
// (the multiples of B below n_k; 1 on a padded or n_k = 1 axis). Coarse level
// m = C-1 .. 0 has unit u = B 2^m (v = 2^m anchors), level number l = L + m
// with L = log2(B), its step step_l by the rule below; C is the smallest
// count with 2^C >= max A_k (0 for a chunk of one anchor: the root alone).
// Each coarse level runs the passes of a tile level with flags 0 (axes
// slowest to fastest, not-a-knot cubic; no tuning), on global coordinates:
// the table below with hasA = g - 3u >= 0, hasC = g + u < n, hasD = g + 3u
// < n (no tile bound). Quantization, outliers (listed in the one outlier
// list, their exact value read by later predictions) and fill elements as
// for any point; the codes go to the anchors' slots of code group 2. The
// tiles then start from the anchors' x' (the exact value at the root and
// at outliers, 0 if not finite) as they start from stored anchors without.
//
// Fill elements (encoder only, optional): given a fill mask (the FILLMASK
// stage's mask stream: bit i % 8 of byte i / 8 set iff element i is the
// chunk's fill value), a fill element that is not a stored anchor (every
// anchor, or with coarse levels the root alone) is coded
// q = 0 whatever its value, so x' = fl_T(p + fl_T(0 * step)), its
// prediction; only when that x' is not finite is it quantized as above.
// The decoder is told nothing and computes the same x' (the fill mask stage
// puts the fill value back after it). Land and missing data then cost one
// frequent code each, and the values of their points continue the field
// smoothly for their neighbours' predictions.
//
// Stage config (docs/FORMAT.md, section 2; spline_stage.hpp). v1 starts
// with its width byte (4 or 8; its layout in section 2). v2, the compact
// one (no v1 config starts with 0x82):
//   u8 0x82 | u8 width (4, 8) | u8 code_bytes (1, 2) | u8 code form (0..2) |
//   u8 rank (1..3) | rank x dims, unsigned LEB128 (7 bits a byte, low group
//   first, high bit set = more follow; canonical: no 0 last byte after the
//   first, at most 64 bits) | u8 flags (bit 0 coarse levels, bit 1 a fill
//   input; other bits 0) | f64 the absolute bound enforced (finite, > 0),
//   and no byte after.
// v2 holds what the decoder needs and the bound, which the filter's frame
// check compares with the dataset's cd_values; alpha, beta and the
// tuning are the encoder's, the radius and the steps are in the side
// stream. A stage parsed from v2 only decodes. Coarse levels need v2.
//
// Streams:
//   codes0, codes1, codes2: the codes in three groups by the level of their
//          point (spline_code_rules.hpp, code_groups): group 2 = the points whose
//          every coordinate is a multiple of 4 (levels >= 2, anchors
//          included), group 1 = every coordinate even but not group 2
//          (level 1), group 0 = the rest (level 0). Each group in C order,
//          `code_bytes` (1 or 2) little-endian bytes per code, in the
//          config's code form: offset = the code itself; signed = v = code
//          - R modulo 2^(8 code_bytes) (q in two's complement, -R at anchors
//          and outliers); zigzag = that v, read as a signed word of b = 8
//          code_bytes bits, as 2v (v >= 0) or -2v - 1 (v < 0), i.e. (v << 1)
//          XOR (v >>arithmetic (b - 1)) modulo 2^b. Stored anchors and
//          outliers have code 0; any other code 0 is malformed, and so is
//          any code >= 2R.
//   side:  u8 rank | u8 levels L' (L, or L + C with coarse levels) | u32
//          radius | per level l = L'-1 .. 0: u8 flags (bit 0 reverse; bits
//          1-2 the interpolation, 0..2; other bits 0; 0 at coarse levels)
//          and step_l (W bytes, T) |
//          anchors (W bytes each, anchor-grid C order; with coarse levels
//          the root alone) |
//          u64 outlier count K | K indices (u32 if N <= 2^32, else u64;
//          strictly increasing) | K values (W bytes each, the element's bits)
// The side stream has no bytes after the outlier values; a chunk with no
// elements still has the header and L' levels, no anchors and K = 0.
// The same bytes for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::spline {

enum class Tuning : uint8_t {
  kOff = 0,         // every level: flags 0 (axes slowest first, not-a-knot cubic)
  // Per level, coarsest first, with the coarser levels' choices applied: the
  // flags (0..5) with the smallest integer sum of |q| (an outlier counting as
  // the radius, a fill element coded q = 0 as 0) over every point that the sample tiles compute at that level,
  // halo included; ties to the lowest flags. Sample: S = min(ceil(tiles /
  // 16), 256) tiles, tile (j * 2654435761) mod tiles for j < S (tiles in C
  // order).
  kRatioFirst = 1,
};

// How the code streams store each code (the decoder is told, like code_bytes).
enum class CodeForm : uint8_t {
  kOffset = 0,  // q + R: a compact alphabet, for Huffman
  kSigned = 1,  // q in two's complement: q = 0 is a zero word, for bit planes
  kZigzag = 2,  // q zigzagged (TCMS's map): small |q| small words, for bit planes without a TCMS pass
};

// What the encoder is told; the decoder reads the rest from the side stream.
struct Config {
  unsigned width = 4;        // 4 (float32) or 8 (float64)
  unsigned code_bytes = 2;   // 1 (radius <= 128) or 2 (radius <= 32768)
  uint32_t radius = 512;     // codes 1 .. 2*radius-1 carry q = -(radius-1) .. radius-1
  double alpha = 1.5;        // per-level bound: eb_l = eb / min(alpha^l, beta) (l = 0 finest)
  double beta = 4.0;         //   alpha >= 1, beta >= 1
  Tuning tuning = Tuning::kRatioFirst;
  CodeForm code_form = CodeForm::kOffset;
  // Coarse levels (above): the anchors predicted and coded from the root
  // instead of stored raw. Off by default: the streams of older frames.
  bool coarse_levels = false;
  // The stage's config in the compact layout v2 (spline_stage.hpp); needed
  // for coarse_levels, which the layout v1 cannot say.
  bool compact_config = false;
  // The bound the steps are made from (encoder only; 0: eb itself). The
  // engine passes eb less half an ulp of the chunk's largest magnitude: x' =
  // fl(p + fl(q * step)) rounds, and with steps made from eb itself every
  // element whose quantization error lands within that rounding of eb fails
  // the exact check and becomes an outlier (iris hybrid_height theta, eb 5.7
  // ulps at NOA 1e-4: 4% of the elements, 28% of the frame). The check
  // itself always uses eb.
  double step_bound = 0;
};

constexpr unsigned kCodeGroups = 3;

struct Streams {
  Bytes codes[kCodeGroups];  // groups 0 (finest level), 1, 2 (coarse)
  Bytes side;
};

// What the decoder needs besides the streams (the encoder's config says it).
struct CodeFormat {
  unsigned width = 4;
  unsigned code_bytes = 2;
  CodeForm code_form = CodeForm::kOffset;
  bool coarse_levels = false;
};

// dims: 1 to 3 extents, slowest first. eb: the user's absolute bound, > 0 and
// finite; every element that is not an outlier or a fill element satisfies
// |x - x'| <= eb exactly. fill_mask: empty, or ceil(N / 8) bytes (above).
// Throws UsageError on bad arguments (in.size != N * width, a fill mask of
// another size, a config out of range).
void encode(ByteSpan in, ByteSpan fill_mask, const std::vector<size_t>& dims, const Config& config, double eb,
            Streams& out, const Executor& exec = serial_executor());
inline void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double eb, Streams& out,
                   const Executor& exec = serial_executor()) {
  encode(in, ByteSpan{}, dims, config, eb, out, exec);
}

// Throws FormatError on malformed or hostile streams (never reads out of
// bounds, allocates at most about the output), UsageError on bad dims or a
// bad format. `format` is the encoder's (the engine stores it in the stage
// config).
void decode(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const std::vector<size_t>& dims,
            const CodeFormat& format, Bytes& out, const Executor& exec = serial_executor());
// The same straight into caller memory of `capacity` bytes (UsageError when
// the chunk does not fit), so that a decoded chunk is never held twice;
// returns its bytes. On a FormatError `dst` holds partial output.
size_t decode_into(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const std::vector<size_t>& dims,
                   const CodeFormat& format, uint8_t* dst, size_t capacity, const Executor& exec = serial_executor());

// The same over an encoder's output.
inline CodeFormat format_of(const Config& config) {
  return {config.width, config.code_bytes, config.code_form, config.coarse_levels};
}
inline void decode(const Streams& streams, const std::vector<size_t>& dims, const CodeFormat& format, Bytes& out,
                   const Executor& exec = serial_executor()) {
  const ByteSpan codes[kCodeGroups] = {streams.codes[0], streams.codes[1], streams.codes[2]};
  decode(codes, streams.side, dims, format, out, exec);
}

}  // namespace fz::spline
