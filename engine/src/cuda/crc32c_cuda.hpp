// CRC32C on the GPU: the same checksum as crc32c() (crc32c.hpp) of the bytes
// in device memory, so that a frame whose payload never leaves the device can
// still carry its payload CRC (docs/FORMAT.md: the CRC of the stored buffers,
// concatenated).
//
// All data pointers are device pointers, any alignment; span descriptions
// (pointers and sizes) are host values. Work is enqueued on `stream`; the
// return value reports launch errors only (cudaErrorInvalidValue for a null
// pointer where bytes or a result are needed). Nothing is allocated: temporary
// memory comes from `scratch`, 256-byte aligned (as cudaMalloc returns), of the
// size crc32c_scratch_bytes gives (may be 0: then scratch may be null).
//
// The result is written to *result (device memory), so a caller can read it
// back together with other small values in one copy. `crc` continues a
// previous checksum as crc32c(data, size, crc) does: the result of the spans
// equals crc32c() of their concatenation, and crc32c_spans(A, B) equals
// crc32c(B, crc32c(A)).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::engine::cuda {

// `size` bytes of device memory (data may be null when size is 0).
struct DeviceSpan {
  const void* data = nullptr;
  size_t size = 0;
};

// Scratch for a message of `total_bytes` in `span_count` spans (empty ones
// included); a larger total or more spans never need less.
size_t crc32c_scratch_bytes(size_t total_bytes, size_t span_count = 1);

// CRC32C of the concatenation of spans[0], ..., spans[count - 1] (any may be
// empty); `spans` is a host array and may be null when count is 0.
cudaError_t crc32c_spans(const DeviceSpan* spans, size_t count, uint32_t* result, void* scratch,
                         cudaStream_t stream, uint32_t crc = 0);

// CRC32C of one device range.
cudaError_t crc32c(const void* data, size_t size, uint32_t* result, void* scratch, cudaStream_t stream,
                   uint32_t crc = 0);

}  // namespace fz::engine::cuda
