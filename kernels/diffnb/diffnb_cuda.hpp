// DIFFNB on the GPU: the stream format of diffnb.hpp, byte for byte the CPU's.
//
// Device-resident: `in` and `out` are device pointers of `size` bytes each (not
// overlapping), any alignment. Work is enqueued on `stream`; the return value
// reports launch errors only (cudaErrorInvalidValue for a width other than 1,
// 2, 4, 8). No memory is allocated. Every input decodes (there is nothing to
// validate), so there is no status word.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::diffnb::cuda {

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);
cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);

}  // namespace fz::diffnb::cuda
