// LORENZO: dual-quantization Lorenzo predictor (stage type 10), float32/float64,
// 1-D/2-D/3-D over the whole chunk (no tiles). Full format with a worked example:
// docs/FORMAT.md (stage type 10).
//
// Element i (C order, dims slowest first, N = product of extents, W = width):
//   eb2 = 2*eb (exact, type T), inv = fl_T(1 / eb2)
//   prequantization p_i: an integer, |p_i| <= PMAX (2^24 for f32, 2^53 for f64,
//     so (T)p is exact), chosen by the encoder such that x'_i = fl_T((T)p_i * eb2)
//     satisfies |x_i - x'_i| <= user bound exactly; elements that are not
//     quantizable (fill value, NaN, +-Inf, denormal, -0, |x*inv| >= PMAX, failed
//     check) are "special" and have p_i = 0.
//   delta_i = p_i - Lorenzo(p) (neighbours outside the data are 0), modulo 2^(8W):
//     1-D p[x-1]; 2-D p[y][x-1] + p[y-1][x] - p[y-1][x-1]; 3-D the seven-term
//     inclusion-exclusion. The inverse is an inclusive prefix sum along x, then y, then z.
//   codes: N little-endian u16; code = zigzag(delta) if zigzag(delta) < 2R (a zero
//     delta is code 0), else the element is an outlier: code 0, and the delta is
//     stored in the outlier stream. The decoder finds outliers only through the
//     records (bit 2), never through the codes; a nonzero code there is malformed.
//   outliers: [u64 n][u64 a][u64 b][index x n][kind u8 x n][delta x a][raw x b]
//     index: u32 if N <= 2^32 else u64, strictly increasing element indices;
//     kind: bits 0-1 value (0 quantized, 1 raw bits, 2 fill value, 3 -0),
//           bit 2 delta present (exactly the elements whose zigzag(delta) >= 2R;
//           their code must be 0), other bits 0,
//           kind 0 is invalid (a record must say something);
//     delta: W-byte two's complement, for the records with bit 2, in record order;
//     raw: W-byte element bits, for the records with value 1, in record order.
// Decoding: x'_i = fl_T((T)p_i * eb2) for quantized elements, else the stored bits.
// The same bytes for any thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::lorenzo {

// What the decoder needs; the engine stores it in the frame.
struct Config {
  unsigned width = 4;       // element width in bytes: 4 (float32) or 8 (float64)
  double eb = 0;            // working bound: exactly a value of the element type, normal, 2*eb finite
  uint32_t radius = 32768;  // R in [1, 32768]: codes 0 .. 2R-1 carry deltas -R .. R-1
  bool has_fill = false;    // elements whose bits equal fill_bits are stored as "fill"
  uint64_t fill_bits = 0;   // the fill value's bits (low `width` bytes; the rest must be 0)
};

struct Streams {
  Bytes codes;     // u16 per element
  Bytes outliers;  // see above
};

// dims: 1 to 3 extents, slowest first (an extent of 0 gives an empty chunk).
// user_bound: the user's absolute bound, > 0 and finite; every quantized element
// satisfies |x - x'| <= user_bound exactly. Throws UsageError on bad arguments
// (including in.size != N * width). Gives up with NotSmallerError as soon as
// the outliers stream would reach max_outlier_bytes (a caller that stores it
// as it is passes the chunk's size: the frame could not be smaller then), so
// an incompressible chunk costs no more memory than the stream would.
void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double user_bound, Streams& out,
            const Executor& exec = serial_executor(), size_t max_outlier_bytes = SIZE_MAX);

// Throws FormatError on malformed or hostile streams (never reads out of bounds,
// allocates at most a few times codes.size), UsageError on bad config/dims.
void decode(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config, Bytes& out,
            const Executor& exec = serial_executor());
// decode() into dst, which holds product(dims) * config.width bytes (the
// caller has checked that size against its limits).
void decode_into(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config,
                 uint8_t* dst, const Executor& exec = serial_executor());

}  // namespace fz::lorenzo
