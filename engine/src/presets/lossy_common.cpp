#include "lossy_common.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "byteswap/byteswap_stage.hpp"
#include "fillmask/fillmask_stage.hpp"
#include "presets.hpp"
#include "rre/rre_stage.hpp"
#include "shape.hpp"

namespace fz::engine {

namespace {

// One element in the data's byte order as a native-order integer.
std::optional<uint64_t> element_bits(const DataType& dtype, const Bytes& element) {
  if (element.size() != dtype.size || dtype.size > 8) return std::nullopt;
  uint64_t bits = 0;
  for (unsigned i = 0; i < dtype.size; ++i) {
    const unsigned byte = dtype.order == ByteOrder::Big ? dtype.size - 1 - i : i;
    bits |= uint64_t(element[byte]) << (8 * i);
  }
  return bits;
}

}  // namespace

std::optional<uint64_t> fill_bits(const DataType& dtype, const Options& options) {
  return element_bits(dtype, options.fill_value);
}

std::optional<uint64_t> missing_bits(const DataType& dtype, const Options& options) {
  const auto missing = element_bits(dtype, options.missing_value);
  if (missing && missing == fill_bits(dtype, options)) return std::nullopt;
  return missing;
}

std::optional<uint64_t> special_missing_bits(const DataType& dtype, const Options& options) {
  if (auto missing = missing_bits(dtype, options)) return missing;
  if (options.mode == ErrorMode::Rel || facts_needed(dtype, options) != FactsNeeded::kRangeAndFill)
    return std::nullopt;
  const uint64_t negative_zero = uint64_t(1) << (8 * dtype.size - 1);
  if (fill_bits(dtype, options) == negative_zero) return std::nullopt;
  return negative_zero;
}

// Big-endian words are swapped first so the arithmetic stages see their value.
uint8_t native_order(Pipeline& p, const DataType& dtype, unsigned width) {
  if (dtype.order == ByteOrder::Big && width > 1) return p.add(make_byteswap(width), {Pipeline::kChunk})[0];
  return Pipeline::kChunk;
}

// The fill value's elements come back exactly; stored as outliers they would
// cost 4-9 bytes each, and a land mask is often half a chunk. The mask is
// stored through RRE1: a land mask's bytes are runs of 0x00 (sea) and 0xFF
// (land), which repetition elimination takes and zero elimination does not
// (levitus TEMP, 162,000 mask bytes: 99,401 with RZE1, 54,836 with RRE1;
// RRE1 -> RZE1 would give 48,887, but RZE after RRE cannot run on the GPU
// without the size RRE leaves on the device). A chunk without fill elements skips the mask: it
// would cost a pass each way for nothing (HDF5's default fill value 0.0 rarely
// occurs inside data; decoding a float64 field took 30% longer with the mask).
// Two special values in one chunk (HDF5's fill value pads an edge chunk of a
// variable whose missing value marks land) take two FILLMASK stages in a
// chain, the fill value's first: the second sees the first's values, where
// fill runs repeat a neighbour that may be the missing value, and masks those
// too; decoding puts the missing value back, then the fill value over its own
// elements, so both come back exactly. No new stage type, so every reader
// that decodes one mask decodes two, and a chunk with one special value gets
// the one-mask frame it always had. The caller gets the second (inner) mask:
// the spline codes the elements it marks cheaply; the first is stored here.
LossySource lossy_source_and_mask(Pipeline& p, const DataType& dtype, const Options& options,
                                  const ChunkFacts& facts) {
  uint8_t values = native_order(p, dtype, dtype.size);
  std::optional<uint8_t> outer_mask, mask;
  for (const auto& [bits, present] : {std::pair{fill_bits(dtype, options), facts.has_fill},
                                      std::pair{special_missing_bits(dtype, options), facts.has_missing}}) {
    if (!bits || !present) continue;
    const auto streams = p.add(make_fillmask(dtype.size, *bits), {values});
    values = streams[0];
    if (mask) outer_mask = mask;
    mask = streams[1];
  }
  if (outer_mask) store_fill_mask(p, *outer_mask);
  return {values, mask};
}

void store_fill_mask(Pipeline& p, uint8_t mask) { p.add(make_rre(1), {mask}); }

uint8_t lossy_source(Pipeline& p, const DataType& dtype, const Options& options, const ChunkFacts& facts) {
  const LossySource source = lossy_source_and_mask(p, dtype, options, facts);
  if (source.fill_mask) store_fill_mask(p, *source.fill_mask);
  return source.values;
}

// The absolute bound a lossy preset enforces for this chunk, from what is
// known of its values (`range`: NOA's range and the fill test, found on the
// host by chunk_values or on the GPU): the user's bound (ABS, REL), or the
// largest double <= bound x (max - min) over the chunk's finite values other
// than the fill value, the missing value and +0.0 (NOA; see finite_range). Empty when NOA has
// nothing to be relative to (no such value, or zero range): the chunk is then
// stored losslessly. Resolving NOA here gives every preset one definition of
// the range.
ChunkFacts facts_from_range(const Options& options, const FiniteRange& range) {
  ChunkFacts facts;
  facts.has_fill = range.has_fill;
  facts.has_missing = range.has_missing;
  facts.lorenzo = range.lorenzo;
  facts.fold = range.fold;
  if (range.any) {
    facts.range = range.max - range.min;
    facts.magnitude = std::max(std::fabs(range.min), std::fabs(range.max));
  }
  if (options.mode != ErrorMode::Noa) {
    facts.enforced = options.bound;
    return facts;
  }
  const double eb = noa_absolute_bound(options.bound, range);
  if (eb > 0) facts.enforced = eb;
  return facts;
}

namespace {

// A predictor reconstructs x' = fl(p + fl(q * 2 eb_w)) in T: within eb_w of
// x in exact arithmetic, but the roundings can add up to about half an ulp of
// the largest magnitude, and every element whose quantization error lands
// that close to the bound fails the exact check and costs an outlier (4-8
// raw bytes and its index; its exact value also disturbs the predictions
// around it). When the bound is only a few ulps of the data (temperatures
// in kelvin at NOA 1e-4: eb = 5.7 ulps), that is several percent of the
// elements. So the working bound leaves half an ulp of the magnitude for the
// rounding (rounded toward zero into T again), unless that would take more
// than half the bound; without a known magnitude (no range pass: ABS on the
// presets that do not tune to the range) it stays as it was.
// iris hybrid_height theta, cuszhi-cr NOA 1e-4 / 1e-2: 3.48 -> 4.75 /
// 34.6 -> 39.9 (docs/PERFORMANCE.md).
// x as a float, rounded toward zero (a working bound never exceeds its target).
float float_toward_zero(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) > x) f = std::nextafter(f, 0.0f);
  return f;
}

double with_rounding_margin(const DataType& dtype, const ChunkFacts& facts, double working) {
  if (!facts.magnitude || !std::isfinite(*facts.magnitude)) return working;
  double half_ulp;
  if (dtype.size == 4) {
    const float m = static_cast<float>(*facts.magnitude);
    if (!std::isfinite(m)) return working;
    half_ulp = 0.5 * (double(std::nextafter(m, INFINITY)) - double(m));
  } else {
    const double m = *facts.magnitude;
    half_ulp = 0.5 * (std::nextafter(m, double(INFINITY)) - m);
  }
  if (!(half_ulp < 0.5 * working)) return working;
  const double target = working - half_ulp;
  if (dtype.size == 4) {
    const float f = float_toward_zero(target);
    return f >= FLT_MIN ? double(f) : working;
  }
  return target >= DBL_MIN ? target : working;
}

}  // namespace

std::optional<PredictorBound> predictor_bound(const DataType& dtype, const ChunkFacts& facts) {
  if (!facts.enforced) return std::nullopt;
  PredictorBound b;
  b.enforced = *facts.enforced;
  b.facts = facts;
  if (dtype.size == 4) {
    const float f = float_toward_zero(b.enforced);
    if (!(f >= FLT_MIN) || !std::isfinite(2.0f * f)) return std::nullopt;
    b.working = f;
  } else {
    if (!(b.enforced >= DBL_MIN) || !std::isfinite(2.0 * b.enforced)) return std::nullopt;
    b.working = b.enforced;
  }
  const double plain = b.working;
  b.working = with_rounding_margin(dtype, facts, b.working);
  b.rounding_margin = b.working != plain;
  return b;
}

std::vector<size_t> predictor_dims(const std::vector<uint64_t>& dims) {
  std::vector<size_t> out;
  for (uint64_t d : predictor_shape(dims)) out.push_back(static_cast<size_t>(d));
  return out;
}

}  // namespace fz::engine
