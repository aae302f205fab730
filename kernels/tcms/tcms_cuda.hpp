// TCMS on the GPU: the stream format of tcms.hpp, byte for byte the CPU's.
//
// Device-resident: `in` and `out` are device pointers of `size` bytes each (not
// overlapping), any alignment. Work is enqueued on `stream`; the return value
// reports launch errors only (cudaErrorInvalidValue for a width other than 1,
// 2, 4, 8, where the CPU throws UsageError). No memory is allocated. Every
// input decodes (the map is a bijection on words), so there is no status word.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::tcms::cuda {

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);
cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);

}  // namespace fz::tcms::cuda
