// BIT on the GPU: the stream format of bitshuffle.hpp, byte for byte the CPU's.
//
// Device-resident: `in` and `out` are device pointers of `size` bytes each (not
// overlapping), any alignment. Work is enqueued on `stream`; the return value
// reports launch errors only (cudaErrorInvalidValue for a width other than 1,
// 2, 4, 8). No memory is allocated. Every input is valid for both directions
// (the transform is a bijection on each block), so there is no status word.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::bitshuffle::cuda {

cudaError_t encode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);
cudaError_t decode(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);

}  // namespace fz::bitshuffle::cuda
