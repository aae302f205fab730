// Chunks and streams between the caller's (pageable) host memory and device
// memory, through a lane's pinned staging buffer (device_context.hpp) in
// overlapped pieces, or handed to the driver (fz::Options::gpu_copies).
// Only compiled with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"
#include "cuda/device_context.hpp"
#include "fz/fz.hpp"

namespace fz::engine::cuda {

// A host-to-host copy in parallel parts on `exec`.
void parallel_copy(uint8_t* dst, const uint8_t* src, size_t bytes, const Executor& exec);

// Enqueues `host` into device memory on the lane's stream.
void upload(Lane& lane, ByteSpan host, uint8_t* device, const Executor& exec, GpuCopies copies);

// Device memory into host memory; returns when everything enqueued on the
// lane's stream before it is done, too.
void download(Lane& lane, const uint8_t* device, size_t bytes, uint8_t* host, const Executor& exec,
              GpuCopies copies);

}  // namespace fz::engine::cuda
