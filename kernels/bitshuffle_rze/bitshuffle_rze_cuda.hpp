// Bit-shuffle then RZE of bytes on the GPU as one pass: the stream of
// rze::cuda::encode(word size 1) over bitshuffle::cuda::encode(width) of the
// input, byte for byte, without the shuffled stream ever going through global
// memory (each 16 KiB block is shuffled in shared memory and coded there;
// decode expands a sub-chunk in shared memory and unshuffles it there). Not a
// stage of its own: the engine runs two adjacent stages, BIT then RZE1, this
// way when the shuffled stream is not stored (kernels/common/stage/
// stage_device.hpp, FusedDevicePair), and the frame is what the two stages
// write one after the other.
//
// The pointers, scratch, size words and decode status are those of
// elimination/elimination_cuda.hpp; `width` is the bit-shuffle's word width
// (1, 2, 4 or 8). Encode's `in` and decode's `out` must be 16-byte aligned
// (cudaMalloc and the engine's pool give 256): cudaErrorInvalidValue
// otherwise, as for a bad width, with nothing enqueued.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace fz::bitshuffle_rze::cuda {

// Whether encode takes `in` / decode takes `out` (16-byte aligned).
inline bool takes_pointer(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// out: elimination::cuda::max_encoded_bytes(n) bytes.
size_t encode_scratch_bytes(size_t n);
cudaError_t encode(const uint8_t* in, size_t n, unsigned width, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream);

size_t decode_scratch_bytes(size_t in_size, size_t max_out);
cudaError_t decode(const uint8_t* in, size_t in_size, unsigned width, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream);

// The same with DIFFNB of the same width before the bit-shuffle, in the same
// pass (width 4 or 8): the stream of rze(bitshuffle(diffnb(in))), each 16 KiB
// sub-chunk differenced on its way into shared memory and summed on its way
// out, so neither the differences nor the shuffled stream go through global
// memory. Decode takes decode_scratch_bytes.
size_t encode_differenced_scratch_bytes(size_t n);
cudaError_t encode_differenced(const uint8_t* in, size_t n, unsigned width, uint8_t* out, uint64_t* encoded_size,
                               void* scratch, cudaStream_t stream);
cudaError_t decode_differenced(const uint8_t* in, size_t in_size, unsigned width, uint8_t* out, size_t max_out,
                               uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream);

}  // namespace fz::bitshuffle_rze::cuda
