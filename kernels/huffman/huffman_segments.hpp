// The per-thread pieces of the CUDA Huffman coder, written once for host and
// device (huffman_cuda.cu runs them in kernels; huffman_segments_test.cpp runs
// the same code on the host against the CPU coder, so the method is checked
// where no GPU is present).
//
// Decoding a block in parallel. The block's bits [0, 32 * words) are cut into
// segments, one per thread. A thread decodes the codes that *start* in its
// segment: from the first code boundary at or after the segment's start to the
// first boundary at or after its end (its exit). That first boundary is not
// known in advance, so each thread first guesses the segment's start; then,
// repeatedly, every thread whose predecessor's exit differs from its start
// decodes again from that exit, until no start changes. Thread 0 starts at
// bit 0, so after round k threads 0..k decode from true boundaries: the rounds
// end, and at the fixed point every thread decodes the block's own codes (a
// canonical code resynchronises within a few codes, so one or two rounds are
// usual). An invalid code ends a thread's segment with kInvalid as its exit,
// which its successors inherit.
//
// Acceptance, the CPU's exactly (huffman.hpp): the CPU decodes `count` codes
// from bit 0 (zeros past the last word) and then wants fewer than 32 unused
// bits, all zero. Here every code starting before 32 * words is decoded. An
// invalid code among the first `count` is the CPU's invalid code; one after
// them starts at or past the CPU's end, and since the all-zero bit string
// always begins a valid code (the first canonical code is 0...0), its bits
// hold a one before 32 * words: the CPU refuses that block's padding or unused
// word. So a block is valid iff no code is invalid, at least `count` codes
// start before 32 * words, and the end of code `count` leaves fewer than 32
// bits, all zero.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.hpp"
#include "huffman/huffman.hpp"

namespace fz::huffman::segments {

// Bits looked up at once: 2^12 u32 entries (16 KiB of shared memory) hold
// every code of the short lengths that tight bounds give.
constexpr unsigned kFastBits = 12;
constexpr uint32_t kFastEntries = uint32_t{1} << kFastBits;
// A segment exit that is no position: an invalid code was met.
constexpr uint32_t kInvalid = 0xFFFFFFFFu;

// The canonical code as the decoder walks it (from format::Canonical): a code
// of length l, left-aligned in a 32-bit window, lies in [start[l], limit[l]);
// these ranges follow one another, so the first l with window < limit[l] is
// the code's length. Passed to kernels by value.
struct CanonicalCode {
  uint64_t start[kMaxLengthLimit + 2];
  uint64_t limit[kMaxLengthLimit + 2];
  uint32_t index[kMaxLengthLimit + 2];  // position in `sorted` of length l's first code
  uint32_t max_used;
  // The second lookup level (set_second_level): codes longer than kFastBits
  // begin with the kFastBits-bit prefixes long_first..2^kFastBits-1 (in a
  // complete code, the prefixes no shorter code takes); each such prefix has
  // 2^second_bits entries, indexed by the next second_bits bits. No second
  // level (second_entries == 0) when every code fits the first, or when the
  // table would exceed kMaxSecondEntries: longer codes then take the
  // canonical search.
  uint32_t long_first;
  uint32_t second_bits;
  uint32_t second_entries;
};

// 16 KiB: enough for codes of up to 16 bits when those longer than 12 bits
// take a few percent of the code space (Lorenzo codes at tight bounds).
constexpr uint32_t kMaxSecondEntries = 4096;

// Fills the second-level fields from max_used and limit[].
FZ_HOST_DEVICE inline void set_second_level(CanonicalCode& code) {
  code.long_first = 0;
  code.second_bits = 0;
  code.second_entries = 0;
  if (code.max_used <= kFastBits) return;
  const uint32_t long_first = static_cast<uint32_t>(code.limit[kFastBits] >> (32 - kFastBits));
  const uint32_t bits = code.max_used - kFastBits;
  const uint64_t entries = uint64_t{kFastEntries - long_first} << bits;
  if (entries == 0 || entries > kMaxSecondEntries) return;
  code.long_first = long_first;
  code.second_bits = bits;
  code.second_entries = static_cast<uint32_t>(entries);
}

// The tables a segment decoder reads (shared or global memory on the device).
struct Tables {
  const uint32_t* fast;    // kFastEntries (fast_entry); 0 = longer than kFastBits, or no code
  const uint32_t* second;  // the second level: (symbol << 16) | length, 0 = no code; or nullptr
  uint32_t long_first;     // CanonicalCode's
  unsigned second_bits;
  const uint64_t* start;   // CanonicalCode's, in whatever memory is fastest
  const uint64_t* limit;
  const uint32_t* index;
  const uint16_t* sorted;  // the used symbols by (length, symbol)
  unsigned max_used;
};

// The length of the code on top of a 32-bit left-aligned window, at least
// `shortest` (shorter ones are known not to match); 0 if no code matches.
FZ_HOST_DEVICE inline unsigned code_length(const uint64_t* limit, unsigned max_used, uint64_t window,
                                           unsigned shortest) {
  unsigned len = shortest;
  while (len <= max_used && window >= limit[len]) ++len;
  return len <= max_used ? len : 0;
}

FZ_HOST_DEVICE inline uint32_t code_symbol(const Tables& t, uint64_t window, unsigned len) {
  return t.sorted[t.index[len] + static_cast<uint32_t>((window - t.start[len]) >> (32 - len))];
}

// A lookup entry for the code that `value`, a left-aligned bit string of
// `bits` bits, begins with, if that code is no longer than `bits` (else, or
// if no code matches, 0): (symbol << 16) | length.
FZ_HOST_DEVICE inline uint32_t lookup_entry(const Tables& t, uint32_t value, unsigned bits, unsigned shortest) {
  const uint64_t window = uint64_t{value} << (32 - bits);
  const unsigned len = code_length(t.limit, t.max_used, window, shortest);
  if (len == 0 || len > bits) return 0;
  return (code_symbol(t, window, len) << 16) | len;
}

// A first-level entry: bits 0-3 the length of the code the prefix begins
// with (0: longer than kFastBits, or no code; then the entry is 0), bits 4-7
// and 8-11 how many whole codes the prefix begins with and the bits they
// take (for count_segment: on the real Lorenzo codes one lookup passes 2-7
// codes at NOA 1e-3 to 1e-2), bits 16-31 the first code's symbol.
constexpr uint32_t kFastLengthMask = 0xFu;
FZ_HOST_DEVICE inline unsigned run_codes(uint32_t entry) { return (entry >> 4) & 0xFu; }
FZ_HOST_DEVICE inline unsigned run_bits(uint32_t entry) { return (entry >> 8) & 0xFu; }

// Entry `prefix` of the first level.
FZ_HOST_DEVICE inline uint32_t fast_entry(const Tables& t, uint32_t prefix) {
  const uint32_t first = lookup_entry(t, prefix, kFastBits, 1);
  if (first == 0) return 0;
  unsigned used = first & kFastLengthMask, codes = 1;  // the first code, found above; then the rest
  while (used < kFastBits) {
    const uint64_t rest = (uint64_t{prefix} << (32 - kFastBits + used)) & 0xFFFFFFFFu;  // left-aligned
    const unsigned len = code_length(t.limit, t.max_used, rest, 1);
    if (len == 0 || used + len > kFastBits) break;
    used += len;
    ++codes;
  }
  return first | codes << 4 | used << 8;
}

// Entry `i` (< second_entries) of the second level: under the prefix
// long_first + (i >> second_bits), the code of the next second_bits bits.
FZ_HOST_DEVICE inline uint32_t second_entry(const Tables& t, uint32_t i) {
  return lookup_entry(t, (t.long_first << t.second_bits) + i, kFastBits + t.second_bits, kFastBits + 1);
}

// A block's 32-bit words, any alignment; zero past the last (as the CPU reads).
struct BlockWords {
  const uint8_t* src;
  uint32_t count;
  FZ_HOST_DEVICE uint32_t operator()(uint32_t i) const {
    if (i >= count) return 0;
    const uint8_t* p = src + 4 * size_t{i};
    if ((reinterpret_cast<uintptr_t>(p) & 3) == 0) return *reinterpret_cast<const uint32_t*>(p);
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  }
};

struct Segment {
  uint32_t exit;   // the first code boundary at or past the segment's end, or kInvalid
  uint32_t codes;  // codes decoded
};

// Decodes the codes that start in [start, end) (none when start >= end, which
// includes start == kInvalid). emit(k, symbol, end_bit) is called for the k-th
// code of the segment.
//
// kCount (count_segment): no symbols, and a lookup passes all the whole codes
// its prefix begins with (run_codes, run_bits) wherever they end at or before
// `end` (every one of them then starts in the segment); near the end, code by
// code as when decoding.
template <bool kCount = false, typename Emit>
FZ_HOST_DEVICE Segment decode_segment(const BlockWords& words, uint32_t start, uint32_t end, const Tables& t,
                                      Emit&& emit) {
  Segment r{start, 0};
  if (start >= end) return r;
  // Left-aligned bit buffer: its top `have` bits are the bits from `pos` on.
  uint32_t next = start >> 5;
  uint64_t buf = ((uint64_t{words(next)} << 32) | words(next + 1)) << (start & 31);
  unsigned have = 64 - (start & 31);
  next += 2;
  uint32_t pos = start;
  while (pos < end) {
    if (have < 32) {  // a code takes at most 24 bits: keep 32 ahead
      buf |= uint64_t{words(next++)} << (32 - have);
      have += 32;
    }
    const uint32_t prefix = static_cast<uint32_t>(buf >> (64 - kFastBits));
    uint32_t e = t.fast[prefix];
    unsigned len = e & kFastLengthMask;
    if (kCount && len != 0 && pos + run_bits(e) <= end) {
      pos += run_bits(e);
      r.codes += run_codes(e);
      buf <<= run_bits(e);
      have -= run_bits(e);
      continue;
    }
    if (len == 0 && t.second != nullptr && prefix >= t.long_first) {
      const uint32_t top = static_cast<uint32_t>(buf >> (64 - kFastBits - t.second_bits));
      e = t.second[top - (t.long_first << t.second_bits)];
      len = e & 0xFFu;
    }
    uint32_t symbol = e >> 16;
    if (len == 0) {
      const uint64_t window = buf >> 32;
      len = code_length(t.limit, t.max_used, window, kFastBits + 1);
      if (len == 0) {
        r.exit = kInvalid;
        return r;
      }
      symbol = code_symbol(t, window, len);
    }
    pos += len;
    emit(r.codes, symbol, pos);
    ++r.codes;
    buf <<= len;
    have -= len;
  }
  r.exit = pos;
  return r;
}

// decode_segment's exit and code count, without the symbols, in fewer lookups.
FZ_HOST_DEVICE inline Segment count_segment(const BlockWords& words, uint32_t start, uint32_t end, const Tables& t) {
  return decode_segment<true>(words, start, end, t, [](uint32_t, uint32_t, uint32_t) {});
}

// Thread `thread` of `threads` decodes the segment [first_bit, end_bit) of a
// block of `words` words: whole words each, so that a guessed start is a word.
struct SegmentBounds {
  uint32_t first_bit;
  uint32_t end_bit;
};
FZ_HOST_DEVICE inline SegmentBounds segment_bounds(uint32_t words, unsigned thread, unsigned threads) {
  const uint32_t per = (words + threads - 1) / threads;  // words per segment
  const uint64_t bits = uint64_t{words} * 32;
  const uint64_t first = uint64_t{per} * 32 * thread;
  const uint64_t end = first + uint64_t{per} * 32;
  return {static_cast<uint32_t>(first < bits ? first : bits), static_cast<uint32_t>(end < bits ? end : bits)};
}

// Whether a block of `count` symbols in `words` words surely has an unused
// whole word (its codes take at most count * max_used bits): the CPU refuses
// it; checking first keeps every bit position below 2^32.
FZ_HOST_DEVICE inline bool surely_unused_word(uint32_t words, uint64_t count, unsigned max_used) {
  return uint64_t{words} * 32 >= count * max_used + 32;
}

// What the CPU says of a block that decoded with no invalid code, given the
// number of codes starting before its end and the end of code `count`:
// 0 if valid, else the status bit.
enum BlockStatus : uint32_t {
  kInvalidCode = 1u << 0,      // a bit string that is no code
  kRunsPast = 1u << 1,         // the block's symbols need more bits than its words
  kUnusedWord = 1u << 2,       // a whole word after the last symbol
  kNonzeroPadding = 1u << 3,   // a one among the bits after the last symbol
};
FZ_HOST_DEVICE inline uint32_t block_end_status(uint32_t words, uint64_t codes, uint64_t count, uint32_t used,
                                                uint32_t last_word) {
  const uint64_t bits = uint64_t{words} * 32;
  if (codes < count || used > bits) return kRunsPast;
  if (used + 32 <= bits) return kUnusedWord;
  const uint32_t spare = static_cast<uint32_t>(bits - used);
  if (spare > 0 && (last_word & ((uint32_t{1} << spare) - 1)) != 0) return kNonzeroPadding;
  return 0;
}

// ---- encoding ----

// Writes a thread's codes, from bit `first_bit` of the block's words: `put`
// receives each word the codes touch, and whether the thread owns it whole
// (store) or shares it with a neighbour (OR it in). entry(i) gives the i-th
// symbol's (code << 5) | length.
template <typename Entry, typename Put>
FZ_HOST_DEVICE void encode_run(uint32_t first_bit, uint32_t symbols, Entry&& entry, Put&& put) {
  if (symbols == 0) return;
  uint32_t word = first_bit >> 5;
  // The bits of the word before first_bit are others': count them as pending
  // zeros, so that the word is ORed in.
  unsigned pending = first_bit & 31;
  bool whole = pending == 0;
  uint64_t acc = 0;
  for (uint32_t i = 0; i < symbols; ++i) {
    const uint32_t e = entry(i);
    const unsigned len = e & 31u;
    acc = (acc << len) | (e >> 5);
    pending += len;
    if (pending >= 32) {
      pending -= 32;
      put(word++, static_cast<uint32_t>(acc >> pending), whole);
      whole = true;
    }
  }
  if (pending > 0) put(word, static_cast<uint32_t>(acc << (32 - pending)), false);
}

}  // namespace fz::huffman::segments
