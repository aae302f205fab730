// ANS: zero-run tokens, then static rANS in independent lanes, over u16
// symbols (stage type 14, "ans"; docs/FORMAT.md). Built for the spline's
// codes at loose bounds, where three codes in four are the most frequent one
// and a Huffman code cannot spend less than a bit on each: a run of that
// symbol becomes one token, and rANS codes every token in its information
// content (issue 30 item 2; tools/bench/code_entropy_bench.cpp measures it
// against today's Huffman > rze).
//
// Config (9 bytes): u32 A, the alphabet size (symbols lie in [0, A), 2..65536);
// u8 M, the probability bits (2^M >= A, 2^M >= 64, M <= 16); u32 S, the
// symbols of one lane (1..kMaxLaneSymbols).
//
// Stream (little-endian; "varint" is unsigned LEB128, at most 10 bytes, no
// redundant trailing 0x80 groups):
//
//   varint n              number of symbols; n == 0: the stream ends here
//   u8 method             0: stored, 1: coded
//   -- method 0 --
//   u16 symbols[n]        the symbols as they are; the stream ends after them
//   -- method 1 --
//   u16 mode              the run symbol m (< A)
//   tables                one LSB-first bit string (bit b is bit b%8 of its
//                         byte b/8): the run table, then the symbol table;
//                         then zero bits up to a multiple of 4 bytes counted
//                         from the start of the stream
//   u32 state[K]          K = ceil(n / S): lane k's final encoder state, in [2^16, 2^32)
//   u16 words[K]          16-bit words lane k holds (0..2S)
//   u16 payload[...]      lane 0's words, then lane 1's, ..., each lane's in the
//                         order its decoder reads them; the stream ends after them
//
// A table gives frequencies f to the symbols it lists (every other symbol
// has f = 0): gamma(u + 1), u the number of symbols listed, then for each of
// them in increasing order gamma(s - p + 1), p the previous listed symbol
// + 1 (0 for the first), and gamma(f(s)), f >= 1. gamma(v), v >= 1: with
// b = floor(log2 v), b zero bits, then the b + 1 bits of v from the most
// significant down. The symbols lie in the table's alphabet, and a table with
// u > 0 sums to exactly T = 2^M. The run table lists run tokens of 0..63
// (u > 0 always); the symbol table lists symbols of [0, A), never m, and is
// empty (u == 0) exactly when every symbol is m.
// cum(s) = the sum of f(t) over t < s in the same table.
//
// Lanes: lane k holds symbols [k*S, min((k+1)*S, n)). Its tokens, as its
// decoder reads them (p = symbols produced so far in the lane, len its length):
//   while p < len: read a run token t (run table); output t copies of m
//   (p + t > len is an error); if t < 63 and p < len: read a symbol token s
//   (symbol table) and output s.
// So a run of L copies of m followed by another symbol s is floor(L / 63)
// tokens 63, then the token L mod 63, then s; a lane's final run is
// floor(L / 63) tokens 63, then L mod 63 when that is not 0.
//
// rANS, per lane, state x: u32, T = 2^M. The encoder starts at x = 2^16 and
// codes the lane's tokens from the last to the first; a token of frequency f
// and cumulative frequency c (from its table):
//   if x >= f << (32 - M): emit the word x & 0xFFFF; x >>= 16
//   x = (x / f) * T + (x mod f) + c
// state[k] is the final x; the emitted words, last emitted first, are the
// lane's payload. The decoder starts at x = state[k]; per token:
//   slot = x mod T; the token is the one with cum <= slot < cum + f;
//   x = f * (x / T) + slot - cum; if x < 2^16: x = (x << 16) | the next word.
// A lane decodes exactly: every word read (no more, no fewer), and x ends at 2^16.
//
// The encoder's choices (shared host code in ans_format.hpp, so the CPU and
// the CUDA backend write the same bytes): m is the most frequent symbol (the
// smallest among equals); each table is normalize() of its integer
// histogram over the whole input (every lane's tokens); method 1 unless its
// stream would not be smaller than method 0's.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::ans {

struct Config {
  uint32_t alphabet = 8192;
  uint8_t prob_bits = 14;
  uint32_t lane_symbols = 8192;
};

constexpr uint32_t kRunCap = 63;          // the run token that says "63 more, and go on"
constexpr uint32_t kRunTokens = kRunCap + 1;
constexpr uint32_t kStateLow = 1u << 16;  // x in [kStateLow, 2^32)
constexpr unsigned kMaxProbBits = 16;
constexpr unsigned kMinProbBits = 6;      // 2^M >= kRunTokens
constexpr uint32_t kMaxLaneSymbols = 32767;  // a lane's words (<= 2S) fit a u16
constexpr uint8_t kMethodStored = 0;
constexpr uint8_t kMethodCoded = 1;

// Codes `symbols` (u16 little-endian, even length, each < A) into `out`
// (replaced). UsageError for a bad config, an odd length or a symbol >= A.
// Lanes are coded in parallel on `exec`; the bytes do not depend on it.
void encode(ByteSpan symbols, const Config& config, Bytes& out, const Executor& exec = serial_executor());

// The inverse: `out` (replaced) gets the symbols. FormatError for any stream
// the format above does not allow, and for one that would decode to more
// than max_bytes; never reads outside `stream`. Lanes are decoded in parallel
// on `exec`.
void decode(ByteSpan stream, const Config& config, Bytes& out, size_t max_bytes,
            const Executor& exec = serial_executor());

}  // namespace fz::ans
