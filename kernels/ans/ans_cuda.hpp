// ANS on the GPU: the stream format of ans.hpp, byte for byte the CPU's.
//
// The encoder's choices (run symbol, normalised tables, head bytes) and the
// validation of a stream's head, tables and lane arrays are the shared host
// routines of ans_format.hpp; the device counts, codes the lanes (one thread
// per lane, its tokens derived last to first from a bit mask of the symbols
// other than m) and decodes them (one thread per lane, tables in shared
// memory when they fit). Device pointers throughout; work is enqueued on
// `stream` and the return value reports launch errors only
// (cudaErrorInvalidValue for bad arguments). Nothing is allocated: temporary
// memory comes from `scratch`, 256-byte aligned (as cudaMalloc returns), of
// the size the matching *_scratch_bytes function gives. Host data the device
// needs (head bytes, table entries) travels as kernel arguments, so no host
// buffer has to outlive a call.
//
// Encoding takes two trips to the host:
//   symbol_histogram -> counts back -> plan_tokens (m) -> count_run_tokens
//   (run-token counts and the mask) -> counts back -> plan_encode (tables,
//   head, method 0 when the head alone is too big) -> encode: *encoded_size
//   (device) holds the stream's length; method 0 when coded is not smaller.
//
// Decoding: the host parses the stream's head, tables and lane arrays
// (plan_decode: format::parse's checks; `needed` asks for a longer prefix),
// then decode() decodes every lane on the device and sets *status nonzero
// where the CPU decoder refuses a lane (or a stored symbol).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ans/ans.hpp"
#include "common/bytes.hpp"

namespace fz::ans::cuda {

// One listed token of a table: its id (run token or symbol), f - 1, cum.
struct TableEntry {
  uint16_t token;
  uint16_t freq_minus_1;
  uint16_t cum;
};

// ---- encode ----

// counts[s] (alphabet u64 words) = occurrences of symbol s among the n u16
// little-endian symbols (any alignment); *bad_symbols nonzero when a symbol is
// >= alphabet (the CPU encoder throws UsageError). Both overwritten.
cudaError_t symbol_histogram(const uint8_t* symbols, size_t n, uint32_t alphabet, uint64_t* counts,
                             uint32_t* bad_symbols, cudaStream_t stream);

struct TokenPlan {
  uint64_t n = 0;
  uint64_t lanes = 0;
  uint16_t mode = 0;
  std::vector<uint64_t> symbol_counts;  // the alphabet's counts with count(m) = 0
};
// counts: the alphabet's symbol counts (host), or nullptr when n == 0.
// UsageError for a bad config.
TokenPlan plan_tokens(const uint64_t* counts, uint64_t n, const Config& config);

// The mask count_run_tokens writes: ceil(S / 32) u32 words per lane.
size_t mask_bytes(uint64_t n, const Config& config);
// run_counts (kRunTokens u64, overwritten): the run tokens of every lane;
// mask: bit b of lane k's word j says symbol k*S + 32j + b is not m.
cudaError_t count_run_tokens(const uint8_t* symbols, const TokenPlan& tokens, const Config& config, uint32_t* mask,
                             uint64_t* run_counts, cudaStream_t stream);

struct EncodePlan {
  uint64_t n = 0;
  uint64_t lanes = 0;
  Config config;
  bool stored = false;       // method 0 decided on the host (the head alone is not smaller)
  Bytes head;                // the stream up to state[] (format::write_head)
  Bytes stored_prefix;       // method 0's bytes before the symbols (the empty stream's byte when n == 0)
  size_t stored_size = 0;    // method 0's length
  size_t states_at = 0, words_at = 0, payload_at = 0;
  std::vector<TableEntry> run_entries, symbol_entries;
  size_t max_encoded_bytes = 0;  // what `out` must hold
};
// run_counts: kRunTokens counts from count_run_tokens (unused when n == 0).
EncodePlan plan_encode(const TokenPlan& tokens, const uint64_t* run_counts, const Config& config);

size_t encode_scratch_bytes(const EncodePlan& plan);
// symbols: plan.n u16 symbols below the alphabet; mask: count_run_tokens'
// (unused when plan.stored); out: plan.max_encoded_bytes bytes, 4-byte
// aligned. *encoded_size receives the stream's length.
cudaError_t encode(const uint8_t* symbols, const uint32_t* mask, const EncodePlan& plan, uint8_t* out,
                   uint64_t* encoded_size, void* scratch, cudaStream_t stream);

// ---- decode ----

// Bytes from the stream's start a first read back takes; plan_decode then
// says in `needed` whether it wants more (once at most).
constexpr size_t kFirstPrefixBytes = size_t{16} << 10;

struct DecodePlan {
  Config config;
  uint64_t n = 0;
  uint64_t lanes = 0;
  uint8_t method = kMethodStored;
  uint16_t mode = 0;
  bool has_symbols = false;
  size_t stream_size = 0;
  size_t states_at = 0, words_at = 0, payload_at = 0;
  std::vector<TableEntry> run_entries, symbol_entries;
  size_t needed = 0;  // nonzero: call again with this many bytes of prefix
};
// prefix: the stream's first prefix_size bytes (min(stream_size, 10) at least
// for a single retry). FormatError exactly where ans::decode refuses the
// head, tables or lane arrays (max_out: its limit, in bytes).
DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const Config& config,
                       size_t max_out);

size_t decode_scratch_bytes(const DecodePlan& plan);
// in: the whole stream (plan.stream_size bytes), any alignment; out: 2 * n
// bytes, 16-byte aligned. *status is ORed with 1 where the CPU decoder would
// throw FormatError (the caller zeroes it); out is then unspecified.
cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream);

}  // namespace fz::ans::cuda
