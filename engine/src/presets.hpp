// Presets: which pipeline compresses a chunk, given its data type and options.
#pragma once

#include "fz/fz.hpp"
#include "pipeline.hpp"

namespace fz::engine {

// The element width the lossless stages work on: the element size where it is
// 1, 2, 4 or 8 bytes, else single bytes (compound, array and odd-sized types).
unsigned lossless_word_width(const DataType& dtype);

// Builds the forward pipeline for `options.preset` (already validated).
Pipeline build_pipeline(const DataType& dtype, const Options& options);

}  // namespace fz::engine
