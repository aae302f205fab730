// BSWAP on the GPU: the stream format of byteswap.hpp, byte for byte the CPU's.
//
// Device-resident: `in` and `out` are device pointers of `size` bytes each (not
// overlapping), any alignment. Work is enqueued on `stream`; the return value
// reports launch errors only (cudaErrorInvalidValue for a width other than 1,
// 2, 4, 8, where the CPU throws UsageError; width 1 copies). No memory is
// allocated. The transform is its own inverse, so one function serves both
// directions; every input is valid, so there is no status word.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::byteswap::cuda {

cudaError_t apply(const uint8_t* in, size_t size, unsigned width, uint8_t* out, cudaStream_t stream);

}  // namespace fz::byteswap::cuda
