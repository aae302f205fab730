// How a decoded array compares with its original: bit-exactness for every type,
// and for IEEE float32/float64 the error statistics of a lossy round trip (max
// absolute and point-wise relative error, PSNR, NRMSE) and the number of
// elements outside a requested error bound. Used by `h5fz compress --verify`
// and `h5fz decompress --compare`.
#pragma once

#include <cstdint>
#include <string>

#include "fz/fz.hpp"

namespace h5fz {

// The bound a round trip is checked against. ABS: |x - x'| <= bound; NOA:
// the engine's rule (fz::chunk_bound): |x - x'| <= bound * (max - min), min
// and max over the original's finite elements other than the fill and
// missing values and +0.0, rounded down (the whole array is one chunk here);
// REL: |x - x'| <= bound * |x|. Non-finite elements and fill- or
// missing-valued elements must come back bit for bit. The check runs in long
// double, so it never loosens the bound through rounding.
struct BoundSpec {
  bool known = false;
  fz::ErrorMode mode = fz::ErrorMode::Abs;
  double bound = 0;
  bool has_fill = false;
  uint64_t fill_bits = 0;  // the fill element's bits, native order, low bytes
  bool has_missing = false;  // a second special value, kept exactly and left out of the range like the fill
  uint64_t missing_bits = 0;
  std::string source;      // where the bound came from, for the report
};

// The bound recorded in a frame: the quantize stage's mode and user bound, or
// (predictor presets, whose frames keep only the absolute bound enforced) the
// lorenzo stage's enforced absolute bound, which is never larger than the
// user's. known = false when the frame has neither (lossless chains).
BoundSpec bound_from_frame(const fz::FrameInfo& info);

struct Quality {
  uint64_t bytes = 0;
  bool bit_exact = false;
  size_t first_differing_byte = 0;  // when !bit_exact

  bool float_stats = false;  // IEEE float32/float64: the fields below are set
  uint64_t elements = 0, differing = 0, finite = 0;
  uint64_t non_finite_mismatch = 0;  // NaN/Inf in the original not reproduced bit for bit
  double min_value = 0, max_value = 0;  // over finite original values
  double max_abs_error = 0;
  bool any_nonzero = false;
  double max_rel_error = 0;  // over finite x != 0
  double rmse = 0, psnr = 0, nrmse = 0;  // psnr = +inf when rmse = 0

  bool bound_checked = false;
  double abs_bound = 0;       // ABS/NOA: the absolute bound used (bound * range for NOA)
  double noa_range = 0;       // NOA: max - min over the originals the rule keeps (finite, not special, not +0.0)
  uint64_t violations = 0;    // elements outside the bound (must be 0)
};

bool is_ieee_float(const fz::DataType& dtype);  // float32 or float64, either byte order

Quality assess(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
               const BoundSpec& spec);

// What h5fz repack needs of each chunk, about 5x faster than assess(): the
// largest absolute error over finite elements (double precision), and the
// elements outside the bound or changed where they must not (NaN/Inf, fill
// values, and every byte of non-float or lossless data). The bound is
// checked against the chunk's own range (noa) in double; only a chunk whose
// error comes within a relative 1e-9 of its bound, or over it, is checked
// again element by element by assess() in long double, which decides.
struct ChunkCheck {
  double max_abs_error = 0;
  uint64_t violations = 0;  // elements outside the bound (lossy floats)
  uint64_t mismatches = 0;  // elements that had to come back exactly and did not
};
ChunkCheck check_chunk(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
                       const BoundSpec& spec);
// The same against exactly the bound the filter guarantees for this chunk
// under `options` (fz::chunk_bound, the engine's one rule: HDF5's fill value
// and the missing value exact, NOA's range over the chunk's elements without
// them, +0.0 and non-finite values; edge-chunk padding, HDF5's fill value or
// zeros, never widens it). `original` is the chunk as the filter saw it,
// edge chunks padded with HDF5's fill value. What h5fz repack checks with.
ChunkCheck check_chunk(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
                       const fz::Options& options);

// Prints the report lines (indented by two spaces). `label` names the original.
void print_quality(const Quality& q, const BoundSpec& spec, const std::string& label);

// Whether a round trip passes: lossless presets and non-float data must be bit
// for bit; lossy float data must have no element outside a known bound and
// every NaN/Inf preserved.
bool quality_passes(const Quality& q, bool lossy);

}  // namespace h5fz
