// ANS, interleaved (stage type 15, "ansi"): type 14's model (zero-run tokens
// of the most frequent symbol m, a run table and a symbol table, M-bit rANS
// with 16-bit renormalisation, the same gamma-coded tables) with the tokens
// paired as (run token, symbol token) and each lane coded by W interleaved
// rANS states, so that a GPU warp decodes a lane together (issue 30 item 2).
// The normative text, every byte, is docs/FORMAT.md "ANS, interleaved (stage
// type 15)"; in short:
//
//   varint n | u8 method | method 0: u16 symbols[n] (type 14's stored layout)
//   method 1: u16 m | u8 C | u8 W | varint S | run table over [0, C], symbol
//   table over [0, A] (A = ESC), zero-padded to 4 bytes | K = ceil(n / S)
//   lane records (u32 pairs P, u32 words Q, u32 state[W]) | u16 payload.
//
// Tokens: the input is cut into tiles of kTileSymbols; inside a tile a symbol
// s != m after R = a*C + b copies of m gives a pairs (C, ESC) and (b, s); the
// tile's final run gives a pairs (C, ESC) then (b, ESC) when b > 0. Pair p of
// a lane is coded by state p mod W (run token, then symbol token).
//
// Config (not repeated in the stream): A, the alphabet (symbols in [0, A),
// 2..65535, ESC = A); M, the probability bits (8..16, 2^M >= A + 1). The
// encoder chooses m, C (63 or 255), W, S per stream (interleaved_format.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::ans {

struct InterleavedConfig {
  uint32_t alphabet = 8192;  // A
  uint8_t prob_bits = 14;    // M
};

constexpr uint32_t kTileSymbols = 4096;  // tokenization never crosses a tile
constexpr unsigned kMaxStates = 32;      // W <= 32: one state per thread of a warp

// Codes `symbols` (u16 little-endian, even length, each < A) into `out`
// (replaced). UsageError for a bad config (interleaved_format::check_config),
// an odd length or a symbol >= A. Lanes are coded in parallel on `exec`; the
// bytes do not depend on it, and are the ones any backend following
// interleaved_format::plan and the format writes.
void encode_interleaved(ByteSpan symbols, const InterleavedConfig& config, Bytes& out,
                        const Executor& exec = serial_executor());

// The inverse: `out` (replaced) gets the symbols (2n bytes). FormatError for
// any stream the format does not allow (interleaved_format::parse's checks,
// then per lane: a pair (0, ESC), a pair passing the lane's end, a lane
// reading more or fewer than Q words, a state not ending at 2^16), and for
// one that would decode to more than max_bytes (checked before anything is
// sized by n); never reads outside `stream`. UsageError for a bad config.
// Lanes are decoded in parallel on `exec`.
void decode_interleaved(ByteSpan stream, const InterleavedConfig& config, Bytes& out, size_t max_bytes,
                        const Executor& exec = serial_executor());

}  // namespace fz::ans
