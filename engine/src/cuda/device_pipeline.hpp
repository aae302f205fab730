// A pipeline's stages run on the device, one after the other, over device
// buffers (stage.hpp, DeviceBuffer), and the facts a preset needs of a chunk
// in device memory. Only compiled with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/chunk_work.hpp"
#include "cuda/device_context.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "value_range.hpp"

namespace fz::engine::cuda {

// Every stage's forward on the device; returns every buffer of the pipeline.
std::vector<DeviceBuffer> run_forward(const Pipeline& pipeline, DeviceBuffer chunk, DeviceWork& work);

// Every stage's inverse on the device, from the stored streams' views (indexed
// by buffer id); returns the chunk's view.
DeviceBuffer run_inverse(const Pipeline& pipeline, std::vector<DeviceBuffer> view, ChunkWork& work,
                         size_t max_stream_bytes);

// The facts a lossy preset needs of a chunk in device memory
// (presets/presets.hpp), found on the device and read back in one small copy.
FiniteRange device_chunk_values(const uint8_t* chunk, size_t bytes, const DataType& dtype, const Options& options,
                                ChunkWork& work, Lane& lane);

// device_chunk_values and cuszhi-cr's predictor choice (presets/
// predictor_choice.hpp): the sample blocks copied to the host one
// cudaMemcpy3D each and chosen by the CPU's function, so the device chooses
// as the CPU does (chunk_facts).
FiniteRange device_chunk_facts(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                               const std::vector<uint64_t>& dims, const Options& options, ChunkWork& work,
                               Lane& lane);

}  // namespace fz::engine::cuda
