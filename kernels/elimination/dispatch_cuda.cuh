// Host dispatch of the RZE/RRE CUDA coder (elimination_cuda.cu): the scratch
// layouts and the launches of one encode or decode, for a word type, a rule
// and a block policy (block_helpers_cuda.cuh). Internal to the elimination
// coder: included by elimination_cuda.cu and by the kernels that fuse a stage
// in front of it (bitshuffle_rze/).
#pragma once

#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "elimination/block_helpers_cuda.cuh"
#include "elimination/decode_kernels_cuda.cuh"
#include "elimination/elimination_cuda.cuh"
#include "elimination/elimination_cuda.hpp"
#include "elimination/encode_kernels_cuda.cuh"

namespace fz::elimination::cuda {
namespace {  // internal linkage: each including file instantiates what it launches

using namespace fz::elimination::cuda_detail;

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

// The grid covers length.capacity bytes (= n for a length on the host).
// Block and tail: encode_subchunks'.
template <typename Word, bool kChanged, typename Block = PlainBlock>
cudaError_t encode_typed(const uint8_t* in, InputLength length, uint8_t* out, uint64_t* encoded_size, void* scratch,
                         cudaStream_t stream, const uint8_t* tail = nullptr) {
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
  encode_subchunks<Word, kChanged, Block><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(
      in, length, aligned_input, out, s.states, s.ticket, encoded_size, tail);
  return cudaGetLastError();
}

// Block and tail: decode_subchunks'.
template <typename Word, bool kRepeat, typename Block = PlainBlock>
cudaError_t decode_typed(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out, uint64_t* decoded_size,
                         uint32_t* status, void* scratch, cudaStream_t stream, uint8_t* tail = nullptr) {
  const size_t capacity = table_capacity(in_size, max_out);
  const ScratchLayout s = layout(scratch, capacity);
  if (capacity <= kFewSubchunks) {
    decode_few<Word, kRepeat, Block><<<1, kThreads, 0, stream>>>(in, in_size, max_out, capacity, out, s.sizes,
                                                                 s.offsets, s.header_status, status, decoded_size,
                                                                 tail);
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
    decode_subchunks<Word, kRepeat, Block><<<static_cast<unsigned>(capacity), kThreads, 0, stream>>>(
        in, out, s.sizes, s.offsets, s.header_status, status, tail);
  }
  finish_decode<<<1, 1, 0, stream>>>(in, status, decoded_size);
  return cudaGetLastError();
}

}  // namespace
}  // namespace fz::elimination::cuda
