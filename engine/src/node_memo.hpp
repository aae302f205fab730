// A node's outputs computed ahead of Pipeline::forward, kept per thread.
// cuszhi-cr's predictor choice (presets/predictor_choice.hpp) runs both
// candidate pipelines on a sample, and for a chunk of at most 65536 elements
// (every chunk h5py picks by default) the sample is the chunk itself: the
// spline stage's work on it is exactly what the chunk's own compression does
// next, and was done twice (a third of a small chunk's write). The sample
// remembers the spline node's outputs here, against the cached pipeline
// (pipeline_cache.hpp) the chunk is then compressed with, and forward takes
// them when the node's inputs are byte for byte those they came from. A
// stage's outputs are a function of its inputs and its construction alone
// (docs/ADDING_A_STAGE.md), which one pipeline object fixes, so the frame is
// the same bytes either way.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "pipeline.hpp"

namespace fz::engine {

// Remembers, for this thread, that node `node` of `pipeline` made `outputs`
// from `inputs` (copied); replaces what was remembered before. The pipeline
// is held until then, so its address names it.
void remember_node_outputs(std::shared_ptr<const Pipeline> pipeline, size_t node,
                           const std::vector<ByteSpan>& inputs, std::vector<Bytes> outputs);

// The outputs remembered on this thread for node `node` of `pipeline`, when
// `inputs` equal those they came from; taken (the memo is then empty).
std::optional<std::vector<Bytes>> take_node_outputs(const Pipeline* pipeline, size_t node,
                                                    const std::vector<ByteSpan>& inputs);

// Empties this thread's memo.
void forget_node_outputs();

}  // namespace fz::engine
