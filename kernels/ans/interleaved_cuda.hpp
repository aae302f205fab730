// ANS, interleaved (stage type 15) on the GPU: the stream format of
// interleaved.hpp, byte for byte the CPU's (interleaved_encode_cpu.cpp).
//
// The encoder's choices (m, C, W, S, the tables, the head) and a stream's
// validation are the shared host routines of interleaved_format.hpp; the
// device counts, tokenises, codes and decodes. Device pointers throughout;
// work is enqueued on `stream` and the return value reports launch errors
// only (cudaErrorInvalidValue for bad arguments). Nothing is allocated:
// temporary memory comes from `scratch`, 256-byte aligned, of the size the
// matching *_scratch_bytes function gives. Host data the device needs (head
// bytes, table entries) travels as kernel arguments, so no host buffer has to
// outlive a call.
//
// Encoding takes two trips to the host:
//   ans::cuda::symbol_histogram (type 14's) -> counts back -> plan_tiles (m)
//   -> count_tiles (both caps' token counts, a warp per tile of 4096) ->
//   histograms back -> plan_encode (interleaved_format::plan) -> encode:
//   the tiles tokenised into pairs at offsets from a scan of their pair
//   counts, each lane coded by a warp (state j = thread j), the payload
//   placed by a scan of the lanes' word counts; *encoded_size (device) holds
//   the stream's length, method 0 when the coded stream is not smaller.
//
// Decoding: the host parses the head, tables and lane records
// (plan_decode: interleaved_format::parse's checks; `needed` asks for a
// longer prefix, at most twice), then decode() decodes each lane with a warp
// and sets *status nonzero where the CPU decoder refuses a lane (or a
// stored symbol).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ans/ans_cuda.hpp"
#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "common/bytes.hpp"

namespace fz::ans::interleaved_cuda {

using cuda::TableEntry;

// ---- encode ----

// After the symbol counts (ans::cuda::symbol_histogram, A u64 words, read
// back): n and m. counts: the host's copy, or nullptr when n == 0.
// UsageError for a bad config.
struct TilePlan {
  uint64_t n = 0;
  uint64_t tiles = 0;  // ceil(n / kTileSymbols)
  uint16_t mode = 0;
  std::vector<uint64_t> counts;  // A entries
};
TilePlan plan_tiles(const uint64_t* counts, uint64_t n, const InterleavedConfig& config);

// Device memory count_tiles fills: the histograms (read back into an
// interleaved_format::TileHistograms, the same layout) and each tile's pair
// count for both caps (kept on the device for encode).
size_t tile_counts_bytes(const TilePlan& tiles);
// Where the histograms start in the tile counts (offset 0) and their size.
constexpr size_t kHistogramBytes = sizeof(interleaved_format::TileHistograms);
cudaError_t count_tiles(const uint8_t* symbols, const TilePlan& tiles, uint8_t* tile_counts, cudaStream_t stream);

struct EncodePlan {
  uint64_t n = 0;
  InterleavedConfig config;
  bool stored = false;       // method 0 decided on the host (the head and records alone are not smaller)
  Bytes stored_prefix;       // method 0's bytes before the symbols (the empty stream's byte when n == 0)
  size_t stored_size = 0;    // method 0's length
  interleaved_format::Plan plan;  // m, C, W, S, K, tables, head (n > 0)
  uint64_t tiles = 0;
  std::vector<TableEntry> run_entries, symbol_entries;
  size_t max_encoded_bytes = 0;  // what `out` must hold
};
// histograms: read back from count_tiles (unused when n == 0).
EncodePlan plan_encode(const TilePlan& tiles, const interleaved_format::TileHistograms& histograms,
                       const InterleavedConfig& config);

size_t encode_scratch_bytes(const EncodePlan& plan);
// symbols: plan.n u16 symbols below the alphabet (any alignment);
// tile_counts: count_tiles' (unused when plan.stored); out:
// plan.max_encoded_bytes bytes, 4-byte aligned. *encoded_size receives the
// stream's length.
cudaError_t encode(const uint8_t* symbols, const uint8_t* tile_counts, const EncodePlan& plan, uint8_t* out,
                   uint64_t* encoded_size, void* scratch, cudaStream_t stream);

// ---- decode ----

// Bytes from the stream's start a first read back takes; plan_decode then
// says in `needed` whether it wants more (twice at most).
constexpr size_t kFirstPrefixBytes = size_t{16} << 10;

struct DecodePlan {
  InterleavedConfig config;
  uint64_t n = 0;
  uint8_t method = kMethodStored;
  uint16_t mode = 0;
  uint32_t states = 0;
  uint64_t lane_symbols = 0;
  uint64_t lanes = 0;
  size_t stream_size = 0;
  size_t records_at = 0, record_bytes = 0, payload_at = 0;
  std::vector<TableEntry> run_entries, symbol_entries;
  size_t needed = 0;  // nonzero: call again with this many bytes of prefix
};
// prefix: the stream's first prefix_size bytes. FormatError exactly where
// decode_interleaved refuses the head, tables or lane records (max_out: its
// limit, in bytes).
DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size,
                       const InterleavedConfig& config, size_t max_out);

size_t decode_scratch_bytes(const DecodePlan& plan);
// in: the whole stream (plan.stream_size bytes), any alignment; out: 2n
// bytes, 16-byte aligned. *status is ORed with 1 where the CPU decoder would
// throw FormatError (the caller zeroes it); out is then unspecified.
cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream);

}  // namespace fz::ans::interleaved_cuda
