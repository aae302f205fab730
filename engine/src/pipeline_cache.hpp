// Pipelines built once and handed out again. Every chunk of a dataset has the
// same data type, shape and options, and the frames of one dataset record the
// same stages, so compressing or decompressing a dataset asks for the same few
// pipelines chunk after chunk. Building one allocates every stage and parses
// its config (1-5 us per chunk in the GPU traces, docs/PERFORMANCE.md).
//
// Each cache keeps the kCachedPipelines pipelines asked for most recently,
// keyed by everything the pipeline is built from, and returns the same
// immutable object for the same key. A pipeline may serve several threads at
// once: its stages keep no state between calls (every Stage method is const).
//
// NOA chunks key on their own value range (the bound the quantizer enforces is
// derived from it), so they rarely meet their pipeline again; every other mode
// and the lossless preset build one pipeline per (preset, type, shape).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "value_range.hpp"

namespace fz::engine {

constexpr size_t kCachedPipelines = 16;

// The pipeline a frame records (its stages in order): pipeline_of_stages(stages),
// cached. Throws FormatError as that does, and then caches nothing.
std::shared_ptr<const Pipeline> cached_pipeline_of_stages(const std::vector<StageInfo>& stages);

// build_pipeline_from_range(dtype, dims, options, values) (presets.hpp), cached.
std::shared_ptr<const Pipeline> cached_forward_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims,
                                                        const Options& options, const FiniteRange& values);

// The key of cached_forward_pipeline: every input of build_pipeline_from_range
// except options.threads, which only says how many CPU threads run it. A new
// input of build_pipeline_from_range must be added here.
std::string forward_pipeline_key(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const FiniteRange& values);

}  // namespace fz::engine
