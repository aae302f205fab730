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
// Host dispatch here (scratch layout, launches, streams); the kernels are in
// encode_kernels_cuda.cuh and decode_kernels_cuda.cuh, their block pieces in
// block_helpers_cuda.cuh and elimination_cuda.cuh.
#include "elimination/elimination_cuda.hpp"

#include <cub/device/device_scan.cuh>

#include "elimination/block_helpers_cuda.cuh"
#include "elimination/decode_kernels_cuda.cuh"
#include "elimination/elimination_cuda.cuh"
#include "elimination/encode_kernels_cuda.cuh"

namespace fz::elimination::cuda {
namespace {

using namespace fz::elimination::cuda_detail;

// ---- host dispatch -----------------------------------------------------------

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

size_t scan_storage_bytes(size_t items) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                static_cast<int>(items));
  return bytes;
}

// Scratch = sizes[items] | offsets[items] | scan storage | (decode) header status.
struct ScratchLayout {
  uint64_t* sizes;
  uint64_t* offsets;
  void* scan;
  size_t scan_bytes;
  uint32_t* header_status;
};

size_t scratch_bytes_for(size_t items) {
  return 2 * aligned(items * sizeof(uint64_t)) + aligned(scan_storage_bytes(items)) + kAlign;
}

ScratchLayout layout(void* scratch, size_t items) {
  auto* base = static_cast<uint8_t*>(scratch);
  ScratchLayout s;
  s.sizes = reinterpret_cast<uint64_t*>(base);
  base += aligned(items * sizeof(uint64_t));
  s.offsets = reinterpret_cast<uint64_t*>(base);
  base += aligned(items * sizeof(uint64_t));
  s.scan = base;
  s.scan_bytes = scan_storage_bytes(items);
  base += aligned(s.scan_bytes);
  s.header_status = reinterpret_cast<uint32_t*>(base);
  return s;
}

// Encode scratch = the sub-chunks' chained-scan states | the ticket counter, all zeroed.
struct EncodeScratch {
  uint64_t* states;
  unsigned* ticket;
  size_t bytes;
};

EncodeScratch encode_scratch(void* scratch, size_t chunks) {
  auto* base = static_cast<uint8_t*>(scratch);
  EncodeScratch s;
  s.states = reinterpret_cast<uint64_t*>(base);
  s.ticket = reinterpret_cast<unsigned*>(base + aligned(chunks * sizeof(uint64_t)));
  s.bytes = aligned(chunks * sizeof(uint64_t)) + sizeof(unsigned);
  return s;
}

// The most sub-chunks a stream of in_size bytes decoding to at most max_out
// bytes can have (its size table must fit in the stream).
size_t table_capacity(size_t in_size, size_t max_out) {
  const size_t by_stream = in_size >= 8 ? (in_size - 8) / 2 : 0;
  const size_t by_output = chunks_of(max_out);
  return by_stream < by_output ? by_stream : by_output;
}

bool valid_word_size(unsigned k) { return k == 1 || k == 2 || k == 4 || k == 8; }

// The grid covers length.capacity bytes (= n for a length on the host).
template <typename Word, bool kChanged>
cudaError_t encode_typed(const uint8_t* in, InputLength length, uint8_t* out, uint64_t* encoded_size, void* scratch,
                         cudaStream_t stream) {
  const size_t chunks = chunks_of(length.capacity);
  if (chunks == 0) {
    encode_empty<<<1, 1, 0, stream>>>(out, encoded_size);
    return cudaGetLastError();
  }
  if (chunks > 0xFFFFFFFFu) return cudaErrorInvalidValue;  // the ticket counter is 32-bit
  const EncodeScratch s = encode_scratch(scratch, chunks);
  cudaError_t err = cudaMemsetAsync(scratch, 0, s.bytes, stream);
  if (err != cudaSuccess) return err;
  const bool aligned_input = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  encode_subchunks<Word, kChanged><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(
      in, length, aligned_input, out, s.states, s.ticket, encoded_size);
  return cudaGetLastError();
}

template <typename Word, bool kRepeat>
cudaError_t decode_typed(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out, uint64_t* decoded_size,
                         uint32_t* status, void* scratch, cudaStream_t stream) {
  const size_t capacity = table_capacity(in_size, max_out);
  const ScratchLayout s = layout(scratch, capacity);
  if (capacity <= kFewSubchunks) {
    decode_few<Word, kRepeat><<<1, kThreads, 0, stream>>>(in, in_size, max_out, capacity, out, s.sizes, s.offsets,
                                                          s.header_status, status, decoded_size);
    return cudaGetLastError();
  }
  if (capacity <= kSmallTableItems) {
    read_small_table<<<1, kThreads, 0, stream>>>(in, in_size, max_out, capacity, s.sizes, s.offsets,
                                                 s.header_status, status);
  } else {
    cudaError_t err = cudaMemsetAsync(status, 0, sizeof(uint32_t), stream);
    if (err == cudaSuccess) err = cudaMemsetAsync(s.header_status, 0, sizeof(uint32_t), stream);
    if (err != cudaSuccess) return err;
    const unsigned blocks = static_cast<unsigned>((capacity + kThreads - 1) / kThreads);
    read_size_table<<<blocks, kThreads, 0, stream>>>(in, in_size, max_out, capacity, s.sizes, s.header_status,
                                                      status);
    size_t scan_bytes = s.scan_bytes;
    err = cub::DeviceScan::ExclusiveSum(s.scan, scan_bytes, s.sizes, s.offsets, static_cast<int>(capacity), stream);
    if (err != cudaSuccess) return err;
    check_header<<<1, 1, 0, stream>>>(in, in_size, max_out, s.sizes, s.offsets, s.header_status, status);
  }
  if (capacity > 0) {
    decode_subchunks<Word, kRepeat><<<static_cast<unsigned>(capacity), kThreads, 0, stream>>>(
        in, out, s.sizes, s.offsets, s.header_status, status);
  }
  finish_decode<<<1, 1, 0, stream>>>(in, status, decoded_size);
  return cudaGetLastError();
}

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
