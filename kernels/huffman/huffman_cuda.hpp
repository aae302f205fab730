// HUFFMAN on the GPU: the stream format of huffman.hpp, byte for byte the CPU's.
//
// The code lengths, the header bytes and the validation of a stream's header,
// code-length table and block table are the CPU's own host routines
// (huffman::code_lengths, huffman_format.hpp); the device counts symbols,
// writes and reads the blocks' bitstreams. Device pointers throughout; work is
// enqueued on `stream` and the return value reports launch errors only
// (cudaErrorInvalidValue for bad arguments). Nothing is allocated: temporary
// memory comes from `scratch`, 256-byte aligned (as cudaMalloc returns), of
// the size the matching *_scratch_bytes function gives. Host data the device
// needs (code tables, header bytes) travels as kernel arguments, so no host
// buffer has to outlive a call.
//
// Encoding a stream takes one trip to the host:
//   histogram(symbols) -> copy `counts` back -> plan_encode(counts) on the host
//   -> encode(symbols, plan) -> *encoded_size (device) holds the stream's length.
//
// Decoding: the host validates the stream's first bytes (plan_decode, the
// CPU's checks; decode_prefix_bytes says how many it needs), then decode()
// decodes every block on the device and reports in *status what the CPU would
// refuse in a block's bitstream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_segments.hpp"

namespace fz::huffman::cuda {

// ---- encode ----

// counts[s] (alphabet u64 words) = occurrences of symbol s among the n u16
// little-endian symbols (any alignment); *bad_symbols = 0 if every symbol is
// below the alphabet, nonzero otherwise (the CPU encoder throws UsageError).
// Both are overwritten, not accumulated. alphabet: 1..kMaxAlphabet.
cudaError_t histogram(const uint8_t* symbols, size_t n, uint32_t alphabet, uint64_t* counts, uint32_t* bad_symbols,
                      cudaStream_t stream);

// What the host decides from the histogram, with the CPU's routines.
struct EncodePlan {
  uint64_t n = 0;
  uint32_t block_symbols = 1;
  uint64_t blocks = 0;
  Bytes head;                   // the stream up to its block table (format::write_head)
  std::vector<uint32_t> table;  // per symbol: (code << 5) | length (format::encode_table)
  unsigned max_used = 0;        // longest code
  size_t max_encoded_bytes = 0; // what `out` must hold: head, block table, the longest payload
};

// histogram: the alphabet's counts on the host, summing to n. Throws
// UsageError where huffman::encode does (bad config), with the same lengths.
EncodePlan plan_encode(const uint64_t* histogram, uint64_t n, const Config& config);

size_t encode_scratch_bytes(const EncodePlan& plan);
// symbols: plan.n u16 symbols, each below the alphabet (histogram's check);
// out: plan.max_encoded_bytes bytes, 4-byte aligned. *encoded_size receives the
// stream's length, or 0 when the stream would need more than 2^32 words (the
// CPU encoder throws UsageError there).
cudaError_t encode(const uint8_t* symbols, const EncodePlan& plan, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream);

// ---- decode ----

// Bytes from the stream's start that the host reads first: the header and lo,
// hi; decode_prefix_bytes then says how many plan_decode needs.
constexpr size_t kPrefixProbeBytes = 21;
// head: the stream's first min(stream_size, kPrefixProbeBytes) bytes or more.
size_t decode_prefix_bytes(const uint8_t* head, size_t head_size, size_t stream_size);

struct DecodePlan {
  uint64_t n = 0;
  uint32_t block_symbols = 1;
  uint64_t blocks = 0;
  size_t stream_size = 0;
  size_t ends_at = 0;     // the block table (u32 ends), read by the device
  size_t payload_at = 0;  // the first block's first word
  segments::CanonicalCode code{};
  std::vector<uint16_t> sorted;  // used symbols by (length, symbol)
};

// prefix: the stream's first prefix_size >= min(stream_size, decode_prefix_bytes)
// bytes. Throws FormatError exactly where huffman::decode refuses the header,
// the code-length table or the block table (max_out: its limit, in bytes).
DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size, size_t max_out);

size_t decode_scratch_bytes(const DecodePlan& plan);
// in: the whole stream (plan.stream_size bytes, the bytes plan_decode saw at
// its start), any alignment; out: 2 * plan.n bytes, any alignment. Nothing
// outside in[0, stream_size) is read, nothing outside out[0, 2n) written.
// *status receives 0 when every block decodes as the CPU accepts it, else the
// OR of segments::BlockStatus bits of the blocks' failures; then the CPU
// decoder throws FormatError for the stream, and out's content is unspecified.
cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream);

}  // namespace fz::huffman::cuda
