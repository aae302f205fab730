// RRE on the GPU: the shared elimination coder with the rule of rre.hpp.
#include "rre/rre_cuda.hpp"

namespace fz::rre::cuda {

size_t encode_scratch_bytes(size_t n) { return elimination::cuda::encode_scratch_bytes(n); }

cudaError_t encode(const uint8_t* in, size_t n, unsigned word_size, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream) {
  return elimination::cuda::encode(in, n, word_size, elimination::Rule::kChanged, out, encoded_size, scratch, stream);
}

size_t decode_scratch_bytes(size_t in_size, size_t max_out) {
  return elimination::cuda::decode_scratch_bytes(in_size, max_out);
}

cudaError_t decode(const uint8_t* in, size_t in_size, unsigned word_size, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  return elimination::cuda::decode(in, in_size, word_size, elimination::Rule::kChanged, out, max_out, decoded_size,
                                   status, scratch, stream);
}

}  // namespace fz::rre::cuda
