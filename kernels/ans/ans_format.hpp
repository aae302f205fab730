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
// The same over counts[0, size): f[i] for counts[i]. Called with only the
// counted symbols, in increasing symbol order (zeros allowed: f 0), it gives
// their f as the whole alphabet's table would (the rules look only at the
// counted symbols, their order and the total), at a cost that scales with
// them rather than with A (stage type 15's plan, interleaved_format.cpp).
std::vector<uint32_t> normalize(const uint64_t* counts, size_t size, unsigned prob_bits);

// Exclusive prefix sums of f: cum[s] for s in [0, size], cum[size] = 2^M for a
// non-empty table.
std::vector<uint32_t> cumulative(const std::vector<uint32_t>& freq);
// The same for a table over `size` symbols given as a list: symbols[i]
// (increasing, < size) has f freq[i] (0: unlisted), every other symbol f 0.
std::vector<uint32_t> cumulative(size_t size, const uint32_t* symbols, const uint32_t* freq, size_t count);

// The bytes of a method-1 stream before its state[] array: n, method, m, both
// tables, padding (a multiple of 4 bytes). run_freq has kRunTokens entries,
// symbol_freq A entries (f(m) = 0).
Bytes write_head(uint64_t n, uint16_t mode, const std::vector<uint32_t>& run_freq,
                 const std::vector<uint32_t>& symbol_freq);

// The format's varint (unsigned LEB128, at most 10 bytes, no redundant
// trailing group), shared with stage type 15. read_varint reads one from
// data[at, end): returns the offset just past it, or 0 when data ends first
// (nothing at or past `end` is read); FormatError for one of more than 10
// bytes, over 64 bits, or with a redundant group.
void append_varint(Bytes& out, uint64_t v);
size_t read_varint(const uint8_t* data, size_t at, size_t end, uint64_t& value);

// The tables' bit string, shared with stage type 15 (interleaved_format.hpp,
// whose tables are over other alphabets: [0, C] and [0, A] with ESC): each
// table is one std::vector of frequencies, its size the table's alphabet.
// table_bits: the exact bit length of one table (gamma(u + 1), then per
// listed symbol its gap and f). append_tables: both tables' bit string
// appended to `out` (the stream so far), then zero bits up to a multiple of
// 4 bytes of out's whole size; write_head is n, method, m, then this.
uint64_t table_bits(const std::vector<uint32_t>& freq);
void append_tables(Bytes& out, const std::vector<uint32_t>& first, const std::vector<uint32_t>& second);
// The same with a table given as a list (symbols[i] increasing, f freq[i],
// 0: unlisted), for large alphabets of which few symbols occur: same bits.
uint64_t table_bits(const uint32_t* symbols, const uint32_t* freq, size_t count);
void append_tables(Bytes& out, const std::vector<uint32_t>& first, const uint32_t* second_symbols,
                   const uint32_t* second_freq, size_t second_count);

// Reads two tables (first over `first_size` symbols, u > 0 required; second
// over `second_size`, u == 0 allowed only with second_may_be_empty) from the
// bit string starting at byte `begin` of data[0, end), and checks the zero
// padding up to the next multiple of 4 bytes. FormatError for a malformed
// table (too long a gamma, a symbol outside its alphabet, sums other than
// 2^M, non-zero padding). Returns 0 when data ends before the tables and
// their padding do (nothing past `end` is read); else the offset just past
// the padding. freq gets size entries, cum size + 1.
size_t read_tables(const uint8_t* data, size_t begin, size_t end, unsigned prob_bits, size_t first_size,
                   std::vector<uint32_t>& first_freq, std::vector<uint32_t>& first_cum, size_t second_size,
                   bool second_may_be_empty, std::vector<uint32_t>& second_freq, std::vector<uint32_t>& second_cum);
// The same, also listing the second table's symbols with f > 0, increasing,
// in *second_listed (when not null), so a caller need not scan the alphabet.
size_t read_tables(const uint8_t* data, size_t begin, size_t end, unsigned prob_bits, size_t first_size,
                   std::vector<uint32_t>& first_freq, std::vector<uint32_t>& first_cum, size_t second_size,
                   bool second_may_be_empty, std::vector<uint32_t>& second_freq, std::vector<uint32_t>& second_cum,
                   std::vector<uint32_t>* second_listed);

// An upper bound of the bytes two tables over these alphabets take, padding
// to 4 bytes included, whatever they list.
uint64_t tables_bytes_bound(uint64_t first_size, uint64_t second_size);

// A method-0 stream's n symbols at `symbols` into `out` (replaced, 2n
// bytes); FormatError when one is >= alphabet. Shared with stage type 15.
void read_stored(const uint8_t* symbols, uint64_t n, uint32_t alphabet, Bytes& out);

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
