// Presets: which pipeline compresses a chunk, given its data type, shape and
// options (and, for NOA bounds, its values). What each preset is (name, lossy,
// modes, builder) is one row of the preset table (preset_table.hpp); this is
// what the rest of the engine asks of presets.
#pragma once

#include <optional>

#include "common/executor.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "preset_table.hpp"
#include "value_range.hpp"

namespace fz::engine {

// The element width the lossless stages work on: the element size where it is
// 1, 2, 4 or 8 bytes, else single bytes (compound, array and odd-sized types).
unsigned lossless_word_width(const DataType& dtype);

// Builds the forward pipeline for `options.preset` (already validated). Lossy
// presets compress what they cannot quantize (non-float types, float16, chunks
// without a usable bound) with the lossless chain instead.
Pipeline build_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec);

// What a lossy preset must know of the chunk's values before it can build its
// pipeline: the chunk's NOA range (mode NOA) and whether it holds the fill
// value and the missing value, as a FiniteRange (value_range.hpp; for other
// modes only has_fill and has_missing count). build_pipeline finds them on the CPU; the GPU path finds them on
// the device (cuda/value_range_cuda.hpp) and calls build_pipeline_from_range.
// Which of them `options` needs for this data type: none (lossless, or not
// quantizable), the range (NOA), or only the fill test (a fill or a missing
// value is set).
enum class FactsNeeded { kNone, kFillOnly, kRangeAndFill };
FactsNeeded facts_needed(const DataType& dtype, const Options& options);
// The fill value's bits as a native-order integer, if the dataset has one.
std::optional<uint64_t> fill_bits(const DataType& dtype, const Options& options);
// The missing value's bits likewise; empty when there is none or it equals
// the fill value (then it is the fill value: one special value, one mask).
std::optional<uint64_t> missing_bits(const DataType& dtype, const Options& options);
// The second special value the lossy presets mask: the missing value when one
// is given; else, when the chunk's facts come from a range pass (NOA, or a
// preset that tunes to the range) in ABS or NOA mode, -0.0. The error bound
// allows any value within it for -0.0, but this project returns it exactly
// (docs/FORMAT.md), and as an outlier each cost a code and 4-8 raw bytes: a
// field with many -0.0 (iris space_weather Ne: 216 of 27,869) spent half its
// cuszhi-cr frame on them. Masked like a missing value it costs its mask's
// RRE runs (ratio 44 -> 93 at NOA 1e-2 there). Found by the range pass the
// chunk already takes, on the CPU and on the GPU alike; empty when the fill
// value is -0.0 (then it is the fill value).
std::optional<uint64_t> special_missing_bits(const DataType& dtype, const Options& options);
Pipeline build_pipeline_from_range(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                   const FiniteRange& range);

// The facts found on the host, as build_pipeline finds them: NOA's pass over
// the chunk also finds fill values; the other modes look for them separately;
// nothing when facts_needed says none. build_pipeline equals
// build_pipeline_from_range of these.
FiniteRange chunk_values(const DataType& dtype, const Options& options, ByteSpan chunk, const Executor& exec);
// chunk_values and, for cuszhi-cr under ratio-first, its predictor choice
// from the chunk's sample (predictor_choice.hpp): what the compress flow
// builds the pipeline from (build_pipeline equals build_pipeline_from_range
// of these).
FiniteRange chunk_facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec);

}  // namespace fz::engine
