// From a chunk and its options to the preset's pipeline (presets.hpp): what a
// lossy preset must know of the chunk first, then the builder of its row in
// the preset table (preset_table.cpp).
#include "lossy_common.hpp"
#include "predictor_choice.hpp"
#include "preset_table.hpp"
#include "presets.hpp"

namespace fz::engine {
namespace {

bool quantizable(const DataType& dtype) {
  return dtype.element_class == ElementClass::Float && (dtype.size == 4 || dtype.size == 8);
}

}  // namespace

Pipeline pipeline_from_row(const PresetRow* row, const DataType& dtype, const std::vector<uint64_t>& dims,
                           const Options& options, const FiniteRange& range) {
  // A lossy preset's builder takes only the floats it quantizes: what it
  // cannot quantize gets the lossless chain. A lossless preset's own builder
  // takes every type, and no facts (it needs none).
  if (row && row->info.lossy && !quantizable(dtype)) return lossless_pipeline(dtype);
  if (!row || !row->build)
    throw Error(std::string("preset '") + preset_name(options.preset) + "' is not available in this build");
  return row->build(dtype, dims, options, row->info.lossy ? facts_from_range(options, range) : ChunkFacts{});
}

FiniteRange chunk_values(const DataType& dtype, const Options& options, ByteSpan chunk, const Executor& exec) {
  const FactsNeeded needed = facts_needed(dtype, options);
  if (needed == FactsNeeded::kNone) return {};
  const auto fill = fill_bits(dtype, options);
  const auto missing = special_missing_bits(dtype, options);
  const bool big_endian = dtype.order == ByteOrder::Big;
  if (needed == FactsNeeded::kRangeAndFill) return finite_range(chunk, dtype.size, big_endian, fill, missing, exec);
  FiniteRange values;
  values.has_fill = fill && contains_element(chunk, dtype.size, big_endian, *fill);
  values.has_missing = missing && contains_element(chunk, dtype.size, big_endian, *missing);
  return values;
}

FiniteRange chunk_facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec) {
  FiniteRange values = chunk_values(dtype, options, chunk, exec);
  if (chooses_predictor(dtype, options)) {
    const std::vector<size_t> shape = predictor_dims(dims);
    const PredictorChoice choice = choose_predictor(dtype, dims, options, values, [&](const SampleBox& box, uint8_t* dst) {
      read_host_box(chunk, shape, dtype.size, box, dst);
    }, exec);
    values.lorenzo = choice.lorenzo;
    values.fold = choice.fold;
  }
  return values;
}

FactsNeeded facts_needed(const DataType& dtype, const Options& options) {
  if (!preset_is_lossy(options.preset) || !quantizable(dtype)) return FactsNeeded::kNone;
  const PresetRow* row = preset_row(options.preset);
  if (options.mode == ErrorMode::Noa || (row && row->tunes_to_range)) return FactsNeeded::kRangeAndFill;
  return fill_bits(dtype, options) || missing_bits(dtype, options) ? FactsNeeded::kFillOnly : FactsNeeded::kNone;
}

Pipeline build_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec) {
  return build_pipeline_from_range(dtype, dims, options, chunk_facts(dtype, dims, options, chunk, exec));
}

Pipeline build_pipeline_from_range(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                   const FiniteRange& range) {
  const PresetRow* row = preset_row(options.preset);
  // An id this build does not know (a frame's, never a validated option's)
  // counts as lossy, as preset_is_lossy says: its non-float chunks are lossless.
  if (!row && !quantizable(dtype)) return lossless_pipeline(dtype);
  return pipeline_from_row(row, dtype, dims, options, range);
}

}  // namespace fz::engine
