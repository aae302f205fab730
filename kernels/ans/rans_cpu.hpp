// CPU rANS pieces shared by the ANS coders of stage types 14 (encode_cpu.cpp,
// decode_cpu.cpp) and 15 (interleaved_encode_cpu.cpp,
// interleaved_decode_cpu.cpp): the encoder's per-token constants (division
// by a reciprocal), the decoder's slot tables, and the symbol histogram.
// Internal to kernels/ans; the formats are ans.hpp and interleaved.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::ans::cpu {

// The division of rANS as a multiplication, for states x in [1, 2^32):
// q = the high 64 bits of x * rcp, rcp = ceil(2^64 / f), is floor(x / f) for
// 2 <= f <= 2^16 (Granlund-Montgomery: 2^64 <= rcp * f <= 2^64 + 2^32). For
// f = 1 rcp is 2^64 - 1, q is x - 1, and the bias takes back the T - 1 it
// costs (ryg_rans' trick): x + bias + q * (T - f) is (x / f) * T + x mod f + c
// either way.
struct EncSymbol {
  uint64_t rcp = 0;
  uint32_t x_above = 0;  // emit a word when x > x_above, i.e. x >= f << (32 - M)
  uint32_t bias = 0;     // c, or c + T - 1 when f = 1
  uint32_t cmpl = 0;     // T - f
};

inline EncSymbol make_symbol(uint32_t f, uint32_t c, unsigned prob_bits) {
  EncSymbol e;
  if (f == 0) return e;
  const uint32_t total = uint32_t{1} << prob_bits;
  e.rcp = f == 1 ? ~uint64_t{0} : static_cast<uint64_t>(((static_cast<unsigned __int128>(1) << 64) + f - 1) / f);
  e.x_above = static_cast<uint32_t>((uint64_t{f} << (32 - prob_bits)) - 1);
  e.bias = f == 1 ? c + total - 1 : c;
  e.cmpl = total - f;
  return e;
}

// One token coded: x = (x / f) * T + (x mod f) + c, after emitting a word
// when x >= f << (32 - M). Words are written downwards from `ptr` (the slot
// below it is always writable, so the store is unconditional).
inline void put(uint32_t& x, uint16_t*& ptr, const EncSymbol& e) {
  const bool emit = x > e.x_above;
  ptr[-1] = static_cast<uint16_t>(x);
  ptr -= emit;
  x = emit ? x >> 16 : x;
  const uint32_t q = static_cast<uint32_t>((static_cast<unsigned __int128>(x) * e.rcp) >> 64);
  x = x + e.bias + q * e.cmpl;
}

// A table for the decoder: each slot's token (u8 for the run table, u16 for
// the symbol table), and each token's f and cum. Two small loads per token
// instead of one 8-byte slot: the slot arrays are 2^M or 2^(M+1) bytes (for
// M = 14 the run table's stays in L1, and most symbols' (f, cum) do), where
// 8-byte slots (2^(M+4) bytes for both tables) miss L1 on every token.
struct FreqCum {
  uint32_t freq, cum;
};
template <typename Token>
struct Table {
  const Token* token = nullptr;
  const FreqCum* fc = nullptr;
};

// Fills `token` (2^M entries) and `fc` (one per token) from a parsed table;
// the vectors are kept per thread, so a call neither allocates nor faults in
// pages. An empty table (all f 0) leaves token[] all 0 and fc[] all (0, 0).
template <typename Token>
Table<Token> make_table(const std::vector<uint32_t>& freq, const std::vector<uint32_t>& cum, unsigned prob_bits,
                        std::vector<Token>& token, std::vector<FreqCum>& fc) {
  token.resize(size_t{1} << prob_bits);
  fc.resize(freq.size());
  if (cum.back() == 0) std::fill(token.begin(), token.end(), Token{0});
  for (size_t s = 0; s < freq.size(); ++s) {
    fc[s] = FreqCum{freq[s], cum[s]};
    std::fill(token.begin() + cum[s], token.begin() + cum[s] + freq[s], static_cast<Token>(s));
  }
  return Table<Token>{token.data(), fc.data()};
}

// The same from the table's list of symbols with f > 0 (increasing; the
// table not empty): only their fc[] entries are set (no slot holds another)
// and their slot ranges filled, which cover all 2^M slots, so the cost is
// the slots and the listed symbols, not the alphabet.
template <typename Token>
Table<Token> make_table(const std::vector<uint32_t>& freq, const std::vector<uint32_t>& cum,
                        const std::vector<uint32_t>& listed, unsigned prob_bits, std::vector<Token>& token,
                        std::vector<FreqCum>& fc) {
  token.resize(size_t{1} << prob_bits);
  fc.resize(freq.size());
  for (const uint32_t s : listed) {
    fc[s] = FreqCum{freq[s], cum[s]};
    std::fill(token.begin() + cum[s], token.begin() + cum[s] + freq[s], static_cast<Token>(s));
  }
  return Table<Token>{token.data(), fc.data()};
}

// Each symbol's count over the n = symbols.size / 2 u16 symbols (A
// entries), counted in parallel on `exec`. UsageError naming the largest
// symbol when one is >= A.
std::vector<uint64_t> count_symbols(ByteSpan symbols, uint32_t alphabet, const Executor& exec);

}  // namespace fz::ans::cpu
