// Huffman: canonical, length-limited Huffman coding of u16 symbols (stage type
// 11, "huffman"; docs/FORMAT.md section 0, rule 8). Exact format with a worked
// example: docs/FORMAT.md. In short (all fields little-endian):
//
//   u64 n                 number of symbols
//   u32 A                 alphabet size, 1..65536 (symbols lie in [0, A))
//   u32 S                 block size in symbols, 1..kMaxBlockSymbols
//   u8  L                 length limit, 1..kMaxLengthLimit, with 2^L >= A
//   -- if n == 0 the stream ends here --
//   u16 lo, u16 hi        first and last symbol with a code (lo <= hi < A)
//   lengths               the code lengths of symbols lo..hi, 5 bits each, packed
//                         LSB-first (value i in bits [5i, 5i+5) of the byte string,
//                         bit b in bit b%8 of byte b/8); 0 = no code; unused high
//                         bits of the last byte are 0
//   0..3 zero bytes       so that what follows starts at a multiple of 4 bytes
//   u32 end[B]            B = ceil(n / S); end[b] = 32-bit words in blocks 0..b
//   u32 words[end[B-1]]   the blocks' bitstreams, block b in words [end[b-1], end[b])
//
// Block b holds symbols [b*S, min((b+1)*S, n)). Its codes are written MSB-first
// into 32-bit little-endian words: the first bit of the block is bit 31 of its
// first word. Every block starts on a fresh word; the unused low bits of its last
// word are 0. A block never has an unused whole word.
//
// Code lengths (code_lengths below, shared host code: the CUDA backend calls the
// same routine, so both backends write the same lengths and bytes):
//   * the histogram is integer (u64 counts of each symbol over the whole input);
//   * the m symbols with a non-zero count are sorted by (count, symbol), ascending;
//   * m == 1: that symbol gets length 1 (code "0"); m == 0: no codes;
//   * m >= 2: first an ordinary Huffman code of the sorted leaves, built with
//     two queues (leaves, and internal nodes in the order they are made):
//     each step joins the two lightest nodes, a leaf before an internal node
//     of equal weight; the tree's leaf depths, longest first, go to the leaves
//     in (count, symbol) order. If the longest is <= L these are the lengths
//     (optimal among all prefix codes, hence under the limit too). Otherwise
//     package-merge (Larmore and Hirschberg) with limit D = min(L, m-1),
//     which gives an optimal code whose lengths never exceed L:
//       list[D] = the sorted leaves;
//       for j = D-1 down to 1: packages = sums of the items (2k, 2k+1) of list[j+1]
//         (an odd last item is dropped); list[j] = merge of the sorted leaves and
//         the packages by weight, a leaf before a package of equal weight;
//       select the first 2m-2 items of list[1]; a package selected in list[j]
//         selects the two items of list[j+1] it was made of (these are always
//         a prefix of list[j+1]);
//       a symbol's length = the number of lists in which its leaf is selected.
//     The result is a complete code (Kraft sum exactly 1).
// Canonical codes (canonical_codes): symbols ordered by (length, symbol); the
// first code of length l is (first[l-1] + count[l-1]) << 1 with first[1] = 0, and
// the following symbols of the same length take consecutive values.
//
// A decoder accepts exactly: n == 0 with nothing after the header, or a table
// with lengths <= L whose Kraft sum is 1 (two or more codes) or a single code
// of length 1; lengths at lo and hi non-zero; end[] strictly increasing with
// end[b] - end[b-1] words holding at least as many bits as the block has
// symbols; the stream ending exactly after the last word; each block decoding
// to its symbols with no invalid code, no whole unused word and zero padding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::huffman {

constexpr unsigned kMaxLengthLimit = 24;
constexpr uint32_t kMaxAlphabet = 65536;
constexpr uint32_t kMaxBlockSymbols = uint32_t{1} << 24;

struct Config {
  uint32_t alphabet = 1024;         // A: symbols must lie in [0, A)
  unsigned max_length = 16;         // L: no code is longer; 2^L >= A
  uint32_t block_symbols = 16384;   // S: symbols per independently decodable block
};

// `in` is u16 little-endian symbols (even length). Throws UsageError on a bad
// config, an odd input length or a symbol >= A. Same bytes for any executor.
void encode(ByteSpan in, const Config& config, Bytes& out, const Executor& exec = serial_executor());

// Throws FormatError on a malformed stream or one that decodes to more than
// max_out bytes (2 bytes per symbol); nothing is allocated before that check.
void decode(ByteSpan in, Bytes& out, size_t max_out, const Executor& exec = serial_executor());

// The shared host routines (see above). code_lengths: histogram[s] for s in
// [0, alphabet) -> lengths (0 = unused). Throws UsageError unless 1 <= alphabet
// <= kMaxAlphabet, 1 <= max_length <= kMaxLengthLimit and 2^max_length >= alphabet.
std::vector<uint8_t> code_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length);
// Package-merge alone, for every m >= 2 (what code_lengths did before it tried
// an ordinary Huffman code first): same contract, same total coded bits as
// code_lengths, though the lengths may differ where codes tie. Kept for tests.
std::vector<uint8_t> package_merge_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length);
// lengths -> code values (right-aligned, `length` bits each; 0 for unused).
// The lengths must satisfy Kraft (sum of 2^-l <= 1), as code_lengths' do.
std::vector<uint32_t> canonical_codes(const std::vector<uint8_t>& lengths);

}  // namespace fz::huffman
