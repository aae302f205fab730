// CUDA implementation of the RZE/RRE stream format (elimination/elimination.hpp),
// host interface in elimination/elimination_cuda.hpp.
//
// One thread block codes one sub-chunk, in shared memory. Encoding is one
// kernel: each block measures its sub-chunk's stored size (the CPU's rule:
// raw unless coding is strictly smaller), finds where its payload starts by a
// chained scan over the sub-chunks before it (decoupled look-back: each block
// publishes its size, then its inclusive prefix; blocks take sub-chunks in the
// order they start, from a ticket counter, so every block waited on is
// running), and writes the size table entry and the payload. Offsets are
// prefix sums, so the bytes never depend on scheduling. RZE of bytes over a
// full 16 KiB sub-chunk (the presets' case) is coded from registers: a thread
// owns 64 bytes (B_0 bytes 8t..8t+7, B_1 byte t), the bitmaps come from SIMD
// byte compares and warp ballots, kept bytes and bitmap bytes are placed by
// one block-wide scan, and the coded sub-chunk is assembled in shared memory
// and stored with aligned 32-bit writes. Other word sizes, RRE and the
// partial last sub-chunk build every bitmap level in shared memory and place
// every kept byte and word at its rank among the set bits.
// Decoding validates the header and size table on the device (read_size_table,
// a scan, check_header), then decode_subchunks checks and expands each
// sub-chunk: an element's value is the kept element of its inclusive rank (RRE
// and the upper levels: the last kept one at or before it, 0 if none). A full
// sub-chunk of bytes is staged in shared memory with 16-byte loads and
// expanded per thread (64 output bytes each); raw sub-chunks are copied
// through shared memory.
// The host entry points here; the scratch layouts and launches are in
// dispatch_cuda.cuh, the kernels in encode_kernels_cuda.cuh and
// decode_kernels_cuda.cuh, their block pieces in block_helpers_cuda.cuh and
// elimination_cuda.cuh.
#include "elimination/elimination_cuda.hpp"

#include "elimination/dispatch_cuda.cuh"

namespace fz::elimination::cuda {
namespace {

using namespace fz::elimination::cuda_detail;

bool valid_word_size(unsigned k) { return k == 1 || k == 2 || k == 4 || k == 8; }

template <bool kChanged>
cudaError_t encode_rule(const uint8_t* in, InputLength n, unsigned k, uint8_t* out, uint64_t* encoded_size,
                        void* scratch, cudaStream_t stream) {
  switch (k) {
    case 1: return encode_typed<uint8_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    case 2: return encode_typed<uint16_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    case 4: return encode_typed<uint32_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    default: return encode_typed<uint64_t, kChanged>(in, n, out, encoded_size, scratch, stream);
  }
}

cudaError_t encode_length(const uint8_t* in, InputLength n, unsigned word_size, Rule rule, uint8_t* out,
                          uint64_t* encoded_size, void* scratch, cudaStream_t stream) {
  if (!valid_word_size(word_size)) return cudaErrorInvalidValue;
  return rule == Rule::kChanged ? encode_rule<true>(in, n, word_size, out, encoded_size, scratch, stream)
                                : encode_rule<false>(in, n, word_size, out, encoded_size, scratch, stream);
}

template <bool kRepeat>
cudaError_t decode_rule(const uint8_t* in, size_t in_size, unsigned k, uint8_t* out, size_t max_out,
                        uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  switch (k) {
    case 1: return decode_typed<uint8_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 2: return decode_typed<uint16_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 4: return decode_typed<uint32_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    default: return decode_typed<uint64_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
  }
}

}  // namespace

size_t max_encoded_bytes(size_t n) { return 8 + 2 * chunks_of(n) + n; }

size_t encode_scratch_bytes(size_t n) { return aligned(chunks_of(n) * sizeof(uint64_t)) + kAlign; }

size_t decode_scratch_bytes(size_t in_size, size_t max_out) {
  return scratch_bytes_for(table_capacity(in_size, max_out));
}

cudaError_t encode(const uint8_t* in, size_t n, unsigned word_size, Rule rule, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream) {
  return encode_length(in, InputLength{n, nullptr, n}, word_size, rule, out, encoded_size, scratch, stream);
}

cudaError_t encode_device_length(const uint8_t* in, const uint64_t* n, size_t capacity, unsigned word_size, Rule rule,
                                 uint8_t* out, uint64_t* encoded_size, void* scratch, cudaStream_t stream) {
  if (n == nullptr) return cudaErrorInvalidValue;
  return encode_length(in, InputLength{0, n, capacity}, word_size, rule, out, encoded_size, scratch, stream);
}

cudaError_t decode(const uint8_t* in, size_t in_size, unsigned word_size, Rule rule, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (!valid_word_size(word_size)) return cudaErrorInvalidValue;
  return rule == Rule::kChanged
             ? decode_rule<true>(in, in_size, word_size, out, max_out, decoded_size, status, scratch, stream)
             : decode_rule<false>(in, in_size, word_size, out, max_out, decoded_size, status, scratch, stream);
}

}  // namespace fz::elimination::cuda
