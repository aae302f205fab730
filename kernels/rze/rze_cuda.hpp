// RZE on the GPU (keeps a word iff it is not zero): the shared elimination
// coder of elimination/elimination_cuda.hpp, which documents the pointers, scratch,
// the encoded/decoded size words and the decode status (0 = valid stream).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "elimination/elimination_cuda.hpp"

namespace fz::rze::cuda {

using elimination::cuda::DecodeStatus;
using elimination::cuda::max_encoded_bytes;

size_t encode_scratch_bytes(size_t n);
// word_size: 1, 2, 4 or 8 bytes. out: max_encoded_bytes(n) bytes.
cudaError_t encode(const uint8_t* in, size_t n, unsigned word_size, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream);

size_t decode_scratch_bytes(size_t in_size, size_t max_out);
cudaError_t decode(const uint8_t* in, size_t in_size, unsigned word_size, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream);

}  // namespace fz::rze::cuda
