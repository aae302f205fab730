// What the lossy preset families (pfpl.cpp, lorenzo.cpp) share: the facts a
// chunk's values give them, the buffer they quantize and a predictor's bounds.
#pragma once

#include <optional>
#include <vector>

#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "value_range.hpp"

namespace fz::engine {

// What the lossy presets learn from one look at the chunk: the absolute bound
// to enforce (empty: store the chunk losslessly) and whether any element is the
// fill value or the missing value; and, when the preset asked for it
// (PresetRow::tunes_to_range) or the bound is NOA, the range of the values it
// quantizes (finite, fill and missing left out; empty when there is none).
struct ChunkFacts {
  std::optional<double> enforced;
  bool has_fill = false;
  bool has_missing = false;
  std::optional<double> range;
  // max(|min|, |max|) of those values, with the range: how far rounding
  // near the largest of them reaches (predictor_bound's margin).
  std::optional<double> magnitude;
  // cuszhi-cr only: its Lorenzo pipeline rather than its spline, as the
  // sample of the chunk decided (predictor_choice.hpp).
  bool lorenzo = false;
  // cuszhi-cr only: its spline over the folded shape (fold_dims), as the
  // sample decided.
  bool fold = false;
};

// The chunk's facts from its NOA range and fill test (see facts_from_range in
// lossy_common.cpp for how NOA becomes an absolute bound).
ChunkFacts facts_from_range(const Options& options, const FiniteRange& range);

// The first buffer of every pipeline: the chunk, byte-swapped into native
// order when it is big-endian and its words are wider than a byte.
uint8_t native_order(Pipeline& p, const DataType& dtype, unsigned width);

// The buffer a lossy stage quantizes: the chunk in native order, the fill
// value's and the missing value's elements taken out by a fill mask each
// when the chunk holds any.
uint8_t lossy_source(Pipeline& p, const DataType& dtype, const Options& options, const ChunkFacts& facts);

// The same with the (last) fill mask left to the caller, for a stage that
// reads it (the spline codes fill elements cheaply when it knows them):
// values, and the mask's buffer when the chunk has special elements, which
// the caller must consume and finally pass to store_fill_mask.
struct LossySource {
  uint8_t values;
  std::optional<uint8_t> fill_mask;
};
LossySource lossy_source_and_mask(Pipeline& p, const DataType& dtype, const Options& options,
                                  const ChunkFacts& facts);
// Stores a fill mask buffer in the frame, coded as lossy_source codes it.
void store_fill_mask(Pipeline& p, uint8_t mask);

// A predictor's bounds: the absolute bound it enforces and its working bound
// (a value of the element type, rounded toward zero). Empty when the chunk
// cannot be quantized usefully (see facts_from_range; also a working bound below
// the smallest normal): the preset then stores it losslessly.
struct PredictorBound {
  double enforced = 0;
  double working = 0;
  // The working bound keeps a margin for rounding (lossy_common.cpp,
  // with_rounding_margin): the spline makes its steps from it then.
  bool rounding_margin = false;
  ChunkFacts facts;
};
std::optional<PredictorBound> predictor_bound(const DataType& dtype, const ChunkFacts& facts);

// The chunk's dimensions as a predictor sees them (shape.hpp's predictor_shape).
std::vector<size_t> predictor_dims(const std::vector<uint64_t>& dims);

// Preset 1's chain, also what the lossy presets store a chunk with when they
// cannot quantize it (lossless.cpp).
Pipeline lossless_pipeline(const DataType& dtype);

}  // namespace fz::engine
