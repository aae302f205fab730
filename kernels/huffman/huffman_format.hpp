// Huffman stream layout: the host routines that write and read a stream's
// header, code-length table and block table (format: huffman/huffman.hpp,
// docs/FORMAT.md). The CPU coder and the CUDA backend both call these, so the
// header bytes they write, and the streams they accept, are the same.
// Implemented in format_cpu.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "huffman/huffman.hpp"

namespace fz::huffman::format {

constexpr size_t kHeaderBytes = 17;      // n, A, S, L
constexpr size_t kTableAt = kHeaderBytes + 4;  // after lo, hi
constexpr unsigned kLengthBits = 5;      // a stored code length, 0..31 (<= kMaxLengthLimit)

inline size_t table_bytes(size_t symbols) { return (symbols * kLengthBits + 7) / 8; }
inline size_t align4(size_t x) { return (x + 3) & ~size_t{3}; }
// Where the block table starts for a code-length table of symbols lo..hi.
inline size_t ends_at(uint32_t lo, uint32_t hi) { return align4(kTableAt + table_bytes(size_t{hi} - lo + 1)); }
// The block table holds one u32 per block (words before the block's end); the
// first block's payload follows it.
constexpr size_t kBlockEntryBytes = 4;
inline size_t payload_offset(size_t ends_at, uint64_t blocks) { return ends_at + kBlockEntryBytes * blocks; }

// What encoder and decoder derive from the lengths: the symbols in canonical
// order and, per length, the first code and the first index.
struct Canonical {
  std::vector<uint16_t> sorted;                        // symbols by (length, symbol)
  std::array<uint32_t, kMaxLengthLimit + 2> count{};   // codes of each length
  std::array<uint32_t, kMaxLengthLimit + 2> first{};   // first code value of each length
  std::array<uint32_t, kMaxLengthLimit + 2> index{};   // position in `sorted` of that code
  unsigned max_used = 0;
};

// From the lengths of symbols lo..hi (all others unused), each <= kMaxLengthLimit.
Canonical make_canonical(const uint8_t* lengths, uint32_t lo, uint32_t hi);

// Per symbol of the alphabet: (code << 5) | length, 0 for symbols without a
// code; lo..hi are the first and last symbols with one.
std::vector<uint32_t> encode_table(const std::vector<uint8_t>& lengths, uint32_t lo, uint32_t hi);

// The checks of an alphabet size and a length limit (UsageError, as
// huffman::encode and code_lengths say).
void check_code_config(uint32_t alphabet, unsigned max_length);

// The encoder's checks of its config (UsageError, as huffman::encode says).
void check_encoder_config(const Config& config);

// The first and last symbol with a non-zero length (lengths must hold one).
void code_range(const std::vector<uint8_t>& lengths, uint32_t& lo, uint32_t& hi);

// The stream's bytes before its block table: header, lo, hi, packed lengths,
// alignment (ends_at(lo, hi) bytes), or the 17 header bytes when n == 0
// (lengths unused then). The config must be valid.
Bytes write_head(uint64_t n, const Config& config, const std::vector<uint8_t>& lengths);

// A stream's layout, validated by the CPU decoder's own checks: everything
// but the blocks' bitstreams.
struct Layout {
  uint64_t n = 0;
  uint32_t alphabet = 0;
  uint32_t block_symbols = 0;
  unsigned max_length = 0;
  uint32_t lo = 0, hi = 0;
  std::vector<uint8_t> lengths;  // alphabet entries (empty when n == 0)
  uint64_t blocks = 0;
  size_t ends_at = 0;            // the block table's offset
  size_t payload_at = 0;         // the first block's first word
  std::vector<uint64_t> start;   // blocks + 1 entries: words before block b
};

// Validates a stream of stream_size bytes from its first prefix_size bytes,
// which must be at least min(stream_size, prefix_bytes(...)): the header, the
// code-length table (limit, Kraft, tight range, zero padding) and the block
// table (increasing, enough bits per block, the payload's exact length).
// Throws FormatError as huffman::decode does (the same checks, in the same
// order, with max_out its limit); reads nothing at or past prefix_size.
Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, size_t max_out);

// Bytes a stream's prefix needs to hold for parse(): at most stream_size.
// `head` holds the stream's first head_size >= min(stream_size, kTableAt)
// bytes (header, lo, hi); a malformed header gives a length parse() refuses
// within.
size_t prefix_bytes(const uint8_t* head, size_t head_size, size_t stream_size);

}  // namespace fz::huffman::format
