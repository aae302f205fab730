// ANS stream layout: the host routines both backends share (format: ans.hpp,
// docs/FORMAT.md). The CPU coder and the CUDA backend call these for the
// encoder's choices (run symbol, normalised tables, method) and for the
// stream's head and its validation, so the bytes they write, and the streams
// they accept, are the same. Implemented in format_cpu.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ans/ans.hpp"
#include "common/bytes.hpp"

namespace fz::ans::format {

// UsageError unless the config is valid (ans.hpp).
void check_config(const Config& config);

// Lanes of a stream of n symbols: ceil(n / S).
uint64_t lane_count(uint64_t n, const Config& config);

// The run symbol: the most frequent, the smallest among equals. counts holds
// one count per symbol of the alphabet, at least one of them non-zero.
uint16_t mode_of(const std::vector<uint64_t>& counts);

// A frequency table over the alphabet of `counts` (one u64 count per symbol):
// f(s) = max(1, floor(count(s) * 2^M / total)) for each counted symbol, 0
// otherwise; then while the sum is below 2^M the most counted symbol (the
// smallest among equals) takes the rest, and while it is above, passes over
// the symbols in order of decreasing f (smaller symbol first among equals,
// the order taken at each pass's start) take 1 from each f > 1 until the sum
// is 2^M. All counts 0: all f 0. UsageError when more symbols are counted than
// 2^M.
std::vector<uint32_t> normalize(const std::vector<uint64_t>& counts, unsigned prob_bits);

// Exclusive prefix sums of f: cum[s] for s in [0, size], cum[size] = 2^M for a
// non-empty table.
std::vector<uint32_t> cumulative(const std::vector<uint32_t>& freq);

// The bytes of a method-1 stream before its state[] array: n, method, m, both
// tables, padding (a multiple of 4 bytes). run_freq has kRunTokens entries,
// symbol_freq A entries (f(m) = 0).
Bytes write_head(uint64_t n, uint16_t mode, const std::vector<uint32_t>& run_freq,
                 const std::vector<uint32_t>& symbol_freq);

// The bytes of a stored (method 0) stream or of an empty one (n == 0).
Bytes write_stored(ByteSpan symbols);

// A method-1 stream's layout, everything but its payload's bits, validated
// by the decoder's checks (FormatError): varint and tables well formed,
// frequencies summing to 2^M, m < A with f(m) = 0, zero padding, word counts
// <= 2S, the stream's size exactly head + 6K + 2 * sum(words).
struct Layout {
  uint64_t n = 0;
  uint8_t method = kMethodStored;
  uint16_t mode = 0;
  std::vector<uint32_t> run_freq, run_cum;        // kRunTokens, kRunTokens + 1 entries
  std::vector<uint32_t> symbol_freq, symbol_cum;  // A, A + 1 entries (method 1)
  uint64_t lanes = 0;
  size_t states_at = 0;   // offset of state[0]
  size_t words_at = 0;    // offset of words[0] (the u16 word counts)
  size_t payload_at = 0;  // offset of lane 0's first word
  std::vector<uint64_t> word_start;  // lanes + 1 entries: words before lane k
  size_t needed = 0;      // non-zero: parse again with this many bytes of prefix
};

// Parses a stream of stream_size bytes from its first prefix_size bytes
// (prefix_size <= stream_size). Throws FormatError for a malformed stream or
// one whose n * 2 exceeds max_bytes. When the prefix ends before payload_at
// (the head, tables and lane arrays are not all in it), returns a layout with
// `needed` set to a prefix size that holds them (at most stream_size; an
// upper bound while the tables are not whole in the prefix), and nothing else
// checked beyond that; a GPU decoder reads that much back and calls again.
// A prefix of at least min(stream_size, 10) bytes holds n, and then one more
// call with `needed` bytes never asks again. With the whole stream
// (prefix_size == stream_size) it never asks for more. For method 0 only n,
// method and payload_at are set (an empty stream: n and payload_at).
Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const Config& config, size_t max_bytes);

}  // namespace fz::ans::format
