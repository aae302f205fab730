// Presets: which pipeline compresses a chunk, given its data type, shape and
// options (and, for NOA bounds, its values).
#pragma once

#include "common/executor.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"

namespace fz::engine {

// The element width the lossless stages work on: the element size where it is
// 1, 2, 4 or 8 bytes, else single bytes (compound, array and odd-sized types).
unsigned lossless_word_width(const DataType& dtype);

// Builds the forward pipeline for `options.preset` (already validated). Lossy
// presets compress what they cannot quantize (non-float types, float16, chunks
// without a usable bound) with the lossless chain instead.
Pipeline build_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec);

}  // namespace fz::engine
