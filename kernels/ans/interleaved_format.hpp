// ANS, interleaved (stage type 15): the host routines both backends share
// (format: interleaved.hpp, docs/FORMAT.md "ANS, interleaved (stage type
// 15)"). The CPU coder (interleaved_encode_cpu.cpp, interleaved_decode_cpu.cpp)
// and the CUDA backend call these for the encoder's choices (m, C, W, S and
// the tables, from the symbol counts and the tile histograms), the stream's
// head and lane records, and a stream's validation, so the bytes they write
// and the streams they accept are the same. Implemented in
// interleaved_format.cpp; the tables' normalisation and bit strings are type
// 14's (ans_format.hpp), reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ans/ans.hpp"
#include "ans/interleaved.hpp"
#include "common/bytes.hpp"

namespace fz::ans::interleaved_format {

constexpr uint32_t kCapSmall = 63;   // the two run caps the encoder chooses from
constexpr uint32_t kCapLarge = 255;
constexpr uint32_t kMaxAlphabet = 65535;  // ESC = A must be a u16
constexpr unsigned kMinProbBitsInterleaved = 8;
constexpr unsigned kPairsPerState = 2048;   // N >= ceil(PT / 2048)
constexpr unsigned kBitsPerState = 4096;    // N >= floor(B / 4096)
constexpr size_t kRecordFixedBytes = 8;     // u32 P, u32 Q; then u32 state[W]

// UsageError unless 2 <= A <= 65535, 8 <= M <= 16 and 2^M >= A + 1.
void check_config(const InterleavedConfig& config);

// floor-ish 16 * log2(v) for 1 <= v < 2^32, exactly the format's integer
// algorithm (b = floor(log2 v); y = v << (31 - b); r = 16 b; four squarings
// of y, each adding 8, 4, 2, 1 to r when y >= 2^32 and then halving y).
// Both backends' costs, hence C, depend on it bit for bit. UsageError for v
// outside [1, 2^32).
uint32_t lg16(uint64_t v);

// Token counts of the tile tokenization (the format's pairs) for both caps,
// for a given run symbol m: run tokens over [0, C] (their sum is the pair
// count PT(C)) and the symbol tokens that are ESC. The other symbol tokens
// are the same for both caps: one per symbol s != m, i.e. counts[s]. Sums of
// histograms of disjoint whole-tile ranges (+=) are the histogram of their
// union, so a backend may count tiles in parallel and add.
struct TileHistograms {
  uint64_t run63[kCapSmall + 1] = {};
  uint64_t run255[kCapLarge + 1] = {};
  uint64_t esc63 = 0;
  uint64_t esc255 = 0;
  TileHistograms& operator+=(const TileHistograms& other);
};

// The reference count (the CPU encoder's): the n symbols at `symbols` (u16
// little-endian; no alignment needed) cut into tiles of kTileSymbols from
// the first, tokenised with run symbol m. n may be 0 (all counts 0).
TileHistograms tile_histograms(const uint8_t* symbols, size_t n, uint16_t mode);

// The encoder's choices for n >= 1 symbols (format, "Encoder's choices"),
// from counts (A entries: each symbol's count over all n; their sum is n)
// and the histograms of tile_histograms(symbols, n, m) for m = the most
// frequent symbol, the smallest among equals (format::mode_of(counts)).
// UsageError for a bad config, n == 0, counts.size() != A or counts not
// summing to n. Deterministic integer rules only, so every backend gets the
// same plan from the same counts.
struct Plan {
  uint64_t n = 0;
  uint16_t mode = 0;           // m
  uint32_t cap = 0;            // C: 63 or 255
  uint32_t states = 0;         // W: 1..32
  uint64_t lane_symbols = 0;   // S: 1..n; a multiple of kTileSymbols when lanes > 1
  uint64_t lanes = 0;          // K = ceil(n / S)
  uint64_t pairs = 0;          // PT(C): pairs over all lanes
  uint64_t cost_small = 0;     // cost(63) and cost(255) in bits (tables + floor(P / 16))
  uint64_t cost_large = 0;
  // The chosen cap's tables: run tokens [0, C] (C + 1 and C + 2 entries),
  // symbol tokens [0, A] with A = ESC (A + 1 and A + 2 entries; f(m) = 0).
  std::vector<uint32_t> run_freq, run_cum;
  std::vector<uint32_t> symbol_freq, symbol_cum;
  std::vector<uint32_t> symbol_listed;  // the symbol tokens with f > 0, increasing
  Bytes head;                  // varint n, u8 1, u16 m, u8 C, u8 W, varint S, tables, zero padding to 4
  size_t records_at = 0;       // head.size()
  size_t record_bytes = 0;     // 8 + 4W
  size_t payload_at = 0;       // records_at + K * record_bytes
};
Plan plan(uint64_t n, const std::vector<uint64_t>& counts, const TileHistograms& histograms,
          const InterleavedConfig& config);

// Lane k's symbols: [k S, min((k + 1) S, n)).
inline uint64_t lane_length(uint64_t n, uint64_t lane_symbols, uint64_t k) {
  const uint64_t start = k * lane_symbols;
  return n - start < lane_symbols ? n - start : lane_symbols;
}

// Writes lane k's record (u32 pairs, u32 words, u32 state[W]) at `at`
// (record_bytes bytes).
void put_record(uint8_t* at, uint32_t pairs, uint32_t words, const uint32_t* state, uint32_t states);

// The size of the method-0 stream of n >= 1 symbols (varint n, u8 0, 2n
// bytes); the stream itself is type 14's format::write_stored. The encoder
// writes method 1 only when its size (payload_at + 2 * all words) is smaller.
uint64_t stored_size(uint64_t n);

// A stream's layout, everything but its payload's bits, validated
// (FormatError): varints well formed and not redundant, n <= max_bytes / 2
// (checked first), method 0 or 1, m < A, 1 <= C <= 255, 1 <= W <= 32,
// 1 <= S <= n, both tables well formed with u > 0 and sums of exactly 2^M,
// f(m) = 0 in the symbol table, zero padding, each record's 1 <= P <= its
// lane's length, Q <= 2P, states >= 2^16, and the stream's size exactly
// payload_at + 2 * sum(Q). Method 0: the size is exactly 2n after the method
// byte (the symbols' range is the decoder's check). n = 0: the stream is
// exactly the one byte 0x00.
struct Layout {
  uint64_t n = 0;
  uint8_t method = kMethodStored;
  uint16_t mode = 0;
  uint32_t cap = 0;
  uint32_t states = 0;
  uint64_t lane_symbols = 0;
  uint64_t lanes = 0;
  std::vector<uint32_t> run_freq, run_cum;        // C + 1, C + 2 entries
  std::vector<uint32_t> symbol_freq, symbol_cum;  // A + 1, A + 2 entries (A = ESC)
  std::vector<uint32_t> symbol_listed;            // the symbol tokens with f > 0, increasing
  size_t records_at = 0;     // lane k's record at records_at + k * record_bytes
  size_t record_bytes = 0;   // 8 + 4W
  size_t payload_at = 0;     // lane 0's first word (method 0: the first symbol)
  std::vector<uint64_t> word_start;  // lanes + 1 entries: words before lane k
  size_t needed = 0;         // non-zero: parse again with this many bytes of prefix
};

// Parses a stream of stream_size bytes from its first prefix_size bytes
// (prefix_size <= stream_size); never reads prefix[prefix_size] or beyond.
// When the prefix ends before what is needed, returns a layout with only
// `needed` set (and n once read): prefix_size < needed <= stream_size. A
// prefix of min(stream_size, 10) bytes holds n; after that at most two more
// asks: a bound that holds the whole head (tables and padding), then exactly
// payload_at (the head and every lane record). With the whole stream
// (prefix_size == stream_size) it never asks. A GPU decoder reads that much
// back and calls again.
Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const InterleavedConfig& config,
             size_t max_bytes);

}  // namespace fz::ans::interleaved_format
