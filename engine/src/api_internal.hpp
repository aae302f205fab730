// What the public entry points share (api.cpp, batch.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fz/fz.hpp"

namespace fz {

// The chunk's dims (dims_in, or one dimension when empty) after checking that
// they match `bytes` and the limits; throws Error naming what is wrong.
std::vector<uint64_t> checked_chunk_dims(const void* data, size_t bytes, const DataType& dtype,
                                         const std::vector<uint64_t>& dims_in);

// Where a chunk may run: as H5Z_FZ_DEVICE and the chunk's size decide (what
// the public calls do), on the CPU only, or on the GPU whenever the process
// has one (tests compare the two backends' frames in one process).
enum class BackendUse { kChosen, kCpu, kGpu };

// compress() on the backend `use` allows.
Bytes compress_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                    const Options& options, BackendUse use);
// compress_into() on the backend `use` allows.
size_t compress_into_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                          const Options& options, void* frame, size_t capacity, Bytes* spill, BackendUse use);

// decompress_into() with its CPU work on at most `threads` threads (0 = the
// default: H5Z_FZ_THREADS or all cores), on the backend `use` allows.
size_t decompress_into_on(const void* frame, size_t frame_bytes, void* out, size_t capacity, unsigned threads,
                          BackendUse use = BackendUse::kChosen);

}  // namespace fz
