// A pipeline's forward on a CUDA device: the same stored buffers as
// Pipeline::forward, computed on the GPU (design.md, "Backends and devices").
#pragma once

#include <optional>
#include <vector>

#include "common/bytes.hpp"
#include "pipeline.hpp"

namespace fz::engine {

// Runs `pipeline` on `device` when every stage has a GPU forward (and no stage
// needs the size of a stream that only the device knows), returning the stored
// buffers in stored_buffers() order. Returns nothing when it cannot or when
// CUDA fails (out of memory, a sticky error that also retires the device for
// the process): the caller then runs the CPU, so nothing is lost. Failures are
// said on stderr when H5Z_FZ_VERBOSE is set. A build without CUDA always
// returns nothing.
std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device);

// Whether forward_on_device can run this pipeline (every stage on the GPU).
bool runs_on_device(const Pipeline& pipeline);

// The inverse on `device`: rebuilds the chunk from the frame's stored buffers
// into dst (capacity bytes) and returns its length, when every stage has a GPU
// inverse. Returns nothing when it cannot, when CUDA fails, or when a stream
// is malformed: the caller then decodes on the CPU, which reports the error.
std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device);

bool inverse_runs_on_device(const Pipeline& pipeline);

}  // namespace fz::engine
