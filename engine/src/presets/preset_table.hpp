// The preset table: every preset id the format knows (fz::Preset), with its
// name, whether it is lossy, the error-bound modes it honours strictly and the
// builder of its pipeline (none: listed but not in this build). The public
// fz::preset_table() (fz.hpp) is this table's read-only view; validation,
// frame checks, the filter's cd_values, h5fz and the Python helper all read it
// (docs/ADDING_A_STAGE.md, "Adding a preset").
#pragma once

#include <string>
#include <vector>

#include "fz/fz.hpp"
#include "lossy_common.hpp"
#include "pipeline.hpp"

namespace fz::engine {

// A preset's pipeline for a chunk it can quantize (a float32/float64 chunk of
// a lossy preset), given what is known of the chunk's values; a chunk without
// a usable bound gets the lossless chain (lossless_pipeline). For the lossless
// presets `facts` is empty and the data type may be anything.
using PipelineBuilder = Pipeline (*)(const DataType& dtype, const std::vector<uint64_t>& dims,
                                     const Options& options, const ChunkFacts& facts);

struct PresetRow {
  PresetInfo info;
  // Why the preset refuses the modes it does not honour, finishing "preset
  // 'name' ..." (validate_preset adds which presets and modes to use instead).
  const char* refused_mode_reason;
  PipelineBuilder build;  // null: not available in this build
  // The builder tunes to the chunk's value range (ChunkFacts::range) in
  // every mode, not only in NOA, so the range is taken for ABS chunks too.
  bool tunes_to_range = false;
};

// The row of preset `id`; null for an id the format does not know.
const PresetRow* preset_row(Preset id);

// The pipeline `row` builds for a chunk (build_pipeline_from_range passes
// the row of options.preset): a lossless row's builder for every type, with
// no facts; a lossy row's builder for float32/float64, with the chunk's facts
// from `range`, and the lossless chain for other types. Throws fz::Error when
// the builder it needs is missing (a null row: an id this build does not know).
Pipeline pipeline_from_row(const PresetRow* row, const DataType& dtype, const std::vector<uint64_t>& dims,
                           const Options& options, const FiniteRange& range);

// The preset part of fz::validate: a known, available preset, a known mode
// that the preset honours, and a positive finite bound for a lossy preset.
// Throws fz::Error with the messages documented in docs/CD_VALUES.md.
void validate_preset(const Options& options);

// "0 default, 1 lossless, ..." over every known id: error messages list these.
std::string known_presets_text();

}  // namespace fz::engine
