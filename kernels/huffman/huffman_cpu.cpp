// Huffman on the CPU, and the host routines (code lengths, canonical codes)
// that the CUDA backend shares. Format and methods: huffman/huffman.hpp.
//
// Code lengths: an O(m) Huffman code after a radix sort of the used symbols,
// package-merge only where that code exceeds the limit. Encoding makes three passes, each parallel over independent work items with
// integer results, so the bytes cannot depend on the thread count: a histogram
// (per slab, summed), the bit length of each block (so every block knows where
// its words go before any is written), then the blocks' codes written in place.
// Decoding validates the whole table and the block table before allocating,
// then decodes groups of kLanes consecutive blocks in parallel. Within a group
// the blocks are decoded side by side in one loop, so that their serial
// lookup chains overlap; each lookup of the next 12 bits yields every code
// that lies whole in them (up to 3), and longer codes take a canonical slow
// path. The lookup table is filled by walking the code tree (each entry written
// once), so a stream of a few thousand symbols does not pay more for it than
// for its decoding. Each block's last symbols, and any block of a group found malformed,
// go through a careful symbol-by-symbol decoder, which names the error the
// first bad block of the group has, as a serial decoder would.
#include "huffman/huffman.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "huffman/huffman_format.hpp"

namespace fz::huffman {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using format::Canonical;
using format::kHeaderBytes;
using format::kLengthBits;
using format::make_canonical;
using format::table_bytes;

void check_config(uint32_t alphabet, unsigned max_length) {
  if (alphabet < 1 || alphabet > kMaxAlphabet) {
    throw UsageError("Huffman alphabet size must be 1..65536, got " + std::to_string(alphabet));
  }
  if (max_length < 1 || max_length > kMaxLengthLimit) {
    throw UsageError("Huffman length limit must be 1..24, got " + std::to_string(max_length));
  }
  if ((uint64_t{1} << max_length) < alphabet) {
    throw UsageError("Huffman length limit " + std::to_string(max_length) + " cannot code " +
                     std::to_string(alphabet) + " symbols");
  }
}


// The 5-bit packed lengths of symbols lo..hi (format: LSB-first).
void pack_lengths(const std::vector<uint8_t>& lengths, uint32_t lo, uint32_t hi, uint8_t* dst) {
  const size_t count = size_t{hi} - lo + 1;
  std::fill(dst, dst + table_bytes(count), uint8_t{0});
  for (size_t i = 0; i < count; ++i) {
    const size_t bit = i * kLengthBits;
    const unsigned v = lengths[lo + i];
    dst[bit / 8] |= static_cast<uint8_t>(v << (bit % 8));
    if (bit % 8 + kLengthBits > 8) dst[bit / 8 + 1] |= static_cast<uint8_t>(v >> (8 - bit % 8));
  }
}

unsigned unpack_length(const uint8_t* src, size_t i) {
  const size_t bit = i * kLengthBits;
  unsigned v = src[bit / 8] >> (bit % 8);
  if (bit % 8 + kLengthBits > 8) v |= unsigned{src[bit / 8 + 1]} << (8 - bit % 8);
  return v & 31u;
}

// The same over a whole length table.
Canonical make_canonical(const std::vector<uint8_t>& lengths) {
  uint32_t lo = 0;
  while (lo < lengths.size() && lengths[lo] == 0) ++lo;
  if (lo == lengths.size()) return Canonical{};
  uint32_t hi = static_cast<uint32_t>(lengths.size() - 1);
  while (lengths[hi] == 0) --hi;
  return make_canonical(lengths.data(), lo, hi);
}

// ---- encoding ----

// The histogram of the whole input, from per-slab histograms summed in
// integers (so the slab count does not matter). Throws UsageError on a symbol
// outside the alphabet.
std::vector<uint64_t> histogram(const uint8_t* symbols, size_t n, uint32_t alphabet, const Executor& exec) {
  constexpr size_t kMinSlab = size_t{1} << 16;
  constexpr size_t kMaxSlab = size_t{1} << 30;  // keeps u32 slab counts exact
  size_t slabs = std::max<size_t>(1, std::min<size_t>(exec.concurrency(), (n + kMinSlab - 1) / kMinSlab));
  slabs = std::max(slabs, (n + kMaxSlab - 1) / kMaxSlab);
  const size_t per = (n + slabs - 1) / slabs;
  std::vector<std::vector<uint32_t>> partial(slabs);
  std::vector<uint8_t> bad(slabs, 0);
  exec.parallel_for(slabs, [&](size_t k) {
    // One extra bin counts every symbol >= alphabet: no branch in the loop, and
    // the table is only as large as the alphabet (small chunks, small alphabets).
    // Skewed data hits one bin over and over; for small alphabets four
    // interleaved tables break that store-to-load chain.
    const size_t bins = size_t{alphabet} + 1;
    const size_t ways = alphabet <= 4096 ? 4 : 1;
    std::vector<uint32_t>& h = partial[k];
    h.assign(bins * ways, 0);
    const size_t begin = std::min(n, k * per);
    const size_t end = std::min(n, begin + per);
    size_t i = begin;
    if (ways == 4) {
      for (; i + 4 <= end; i += 4) {
        ++h[std::min<uint32_t>(load_le<uint16_t>(symbols + 2 * i), alphabet)];
        ++h[bins + std::min<uint32_t>(load_le<uint16_t>(symbols + 2 * i + 2), alphabet)];
        ++h[2 * bins + std::min<uint32_t>(load_le<uint16_t>(symbols + 2 * i + 4), alphabet)];
        ++h[3 * bins + std::min<uint32_t>(load_le<uint16_t>(symbols + 2 * i + 6), alphabet)];
      }
      for (size_t s = 0; s < bins; ++s) h[s] += h[bins + s] + h[2 * bins + s] + h[3 * bins + s];
    }
    for (; i < end; ++i) ++h[std::min<uint32_t>(load_le<uint16_t>(symbols + 2 * i), alphabet)];
    bad[k] = h[alphabet] != 0;
  });
  for (uint8_t b : bad) {
    if (b) throw UsageError("Huffman input holds a symbol outside the alphabet");
  }
  std::vector<uint64_t> total(alphabet, 0);
  for (const auto& h : partial) {
    for (uint32_t s = 0; s < alphabet; ++s) total[s] += h[s];
  }
  return total;
}

uint64_t block_bits(const uint8_t* symbols, size_t count, const uint32_t* table) {
  uint64_t bits = 0;
  for (size_t i = 0; i < count; ++i) bits += table[load_le<uint16_t>(symbols + 2 * i)] & 31u;
  return bits;
}

// Writes the codes MSB-first into 32-bit little-endian words. `acc` keeps the
// pending bits in its low `pending` bits (< 32 between symbols, so a code of
// up to 24 bits never overflows 64); higher bits of acc are stale, already written.
void encode_block(const uint8_t* symbols, size_t count, const uint32_t* table, uint8_t* dst) {
  uint64_t acc = 0;
  unsigned pending = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t e = table[load_le<uint16_t>(symbols + 2 * i)];
    const unsigned len = e & 31u;
    acc = (acc << len) | (e >> 5);
    pending += len;
    if (pending >= 32) {
      pending -= 32;
      store_le<uint32_t>(dst, static_cast<uint32_t>(acc >> pending));
      dst += 4;
    }
  }
  if (pending > 0) store_le<uint32_t>(dst, static_cast<uint32_t>(acc << (32 - pending)));
}

// ---- decoding ----

// Bits looked up at once by the decoder. Purely a decoder choice (not part of
// the format): 2^12 entries of 8 bytes (32 KiB) stay in L1, and 12 bits hold
// several codes at the lengths tight bounds give (1-3 bits).
constexpr unsigned kFastBits = 12;
// Codes decoded by one lookup at most: three u16 symbols and the entry's bit
// and symbol counts fill 64 bits.
constexpr unsigned kSymbolsPerEntry = 3;

struct DecodeTable {
  // Indexed by the next kFastBits bits: the codes that lie whole in them, read
  // one after the other (at most kSymbolsPerEntry). Bits 0..47: their symbols
  // in stream order, u16 each (unused slots 0), so one 8-byte store writes them
  // all; bits 48..55: the bits they take; bits 56..63: how many there are. An
  // entry of 0 means the first code is longer than kFastBits or not a code.
  std::vector<uint64_t> fast;
  // Slow path, on 32-bit left-aligned windows: a code of length l lies in
  // [start[l], limit[l]); these ranges follow one another (limit[l] == start[l+1]).
  std::array<uint64_t, kMaxLengthLimit + 2> start{};
  std::array<uint64_t, kMaxLengthLimit + 2> limit{};
  Canonical canonical;
};

unsigned entry_bits(uint64_t e) { return static_cast<unsigned>(e >> 48) & 0xFFu; }
unsigned entry_count(uint64_t e) { return static_cast<unsigned>(e >> 56); }

// Fills the 2^bits entries of `dst`, the prefixes that follow `count` codes
// already read (their symbols packed as in an entry, `used` bits). Canonical
// codes sorted by (length, symbol) are also sorted by their left-aligned
// values, so the codes of length <= bits tile dst from its start, code by
// code, each over 2^(bits - length) entries; the rest of dst are prefixes of
// longer codes (or of none), where the entry ends. Walking the code tree this
// way writes each entry once with no per-entry search: the table costs about
// as much as filling 32 KiB, which matters for streams of a few thousand symbols.
void fill_fast_entries(uint64_t* dst, unsigned bits, uint64_t symbols, unsigned used, unsigned count,
                       const Canonical& c) {
  size_t at = 0;
  for (unsigned l = 1; l <= std::min(bits, c.max_used); ++l) {
    const size_t span = size_t{1} << (bits - l);
    for (uint32_t k = 0; k < c.count[l]; ++k, at += span) {
      const uint64_t with = symbols | uint64_t{c.sorted[c.index[l] + k]} << (16 * count);
      if (count + 1 == kSymbolsPerEntry || l == bits) {
        std::fill(dst + at, dst + at + span, with | uint64_t{used + l} << 48 | uint64_t{count + 1} << 56);
      } else {
        fill_fast_entries(dst + at, bits - l, with, used + l, count + 1, c);
      }
    }
  }
  // With no code read (count 0) the entry is 0: the slow path takes it.
  std::fill(dst + at, dst + (size_t{1} << bits), symbols | uint64_t{used} << 48 | uint64_t{count} << 56);
}

DecodeTable make_decode_table(const uint8_t* lengths, uint32_t lo, uint32_t hi) {
  DecodeTable t;
  t.canonical = make_canonical(lengths, lo, hi);
  const Canonical& c = t.canonical;
  for (unsigned l = 1; l <= c.max_used; ++l) {
    t.start[l] = uint64_t{c.first[l]} << (32 - l);
    t.limit[l] = uint64_t{c.first[l] + c.count[l]} << (32 - l);
  }
  t.fast.resize(size_t{1} << kFastBits);
  fill_fast_entries(t.fast.data(), kFastBits, 0, 0, 0, c);
  return t;
}

// The length of the code on top of a 32-bit left-aligned window, 0 if there
// is none; the lengths below `shortest` are known not to match.
unsigned canonical_length(const DecodeTable& t, uint64_t window, unsigned shortest) {
  const unsigned max_used = t.canonical.max_used;
  unsigned len = shortest;
  while (len <= max_used && window >= t.limit[len]) ++len;
  return len <= max_used ? len : 0;
}

uint16_t canonical_symbol(const DecodeTable& t, uint64_t window, unsigned len) {
  return t.canonical.sorted[t.canonical.index[len] + ((window - t.start[len]) >> (32 - len))];
}

// One block being decoded.
struct Lane {
  const uint8_t* src = nullptr;  // the block's first word
  uint64_t words = 0;
  uint64_t pos = 0;          // bits consumed
  uint8_t* out = nullptr;    // where the next symbol goes
  uint8_t* end = nullptr;    // past the block's last symbol
};

// Decodes the rest of a block symbol by symbol, checking everything, and
// checks how it ends. Returns the format error, or nullptr. Past the block's
// last word the bits read are zeros (never loaded), and the end check rejects
// a block that needed them. Slow, but it only runs on the last few dozen
// symbols of a block, and on whole blocks to name the error of a bad stream.
const char* decode_carefully(Lane& lane, const DecodeTable& t) {
  // Left-aligned bit buffer: its top `have` bits are the next bits of the block.
  size_t next = lane.pos >> 5;  // words loaded, zero words past the end included
  uint64_t buf = uint64_t{next < lane.words ? load_le<uint32_t>(lane.src + 4 * next) : 0u} << 32
                 << (lane.pos & 31);
  unsigned have = 32 - static_cast<unsigned>(lane.pos & 31);
  ++next;
  while (lane.out < lane.end) {
    if (have < 32) {
      const uint64_t w = next < lane.words ? load_le<uint32_t>(lane.src + 4 * next) : 0;
      ++next;
      buf |= w << (32 - have);
      have += 32;
    }
    const uint64_t e = t.fast[buf >> (64 - kFastBits)];
    unsigned len = entry_bits(e);
    const size_t left = static_cast<size_t>(lane.end - lane.out) / 2;
    if (len != 0 && entry_count(e) <= left) {
      for (unsigned k = 0; k < entry_count(e); ++k) {
        store_le<uint16_t>(lane.out + 2 * k, static_cast<uint16_t>(e >> (16 * k)));
      }
      lane.out += 2 * entry_count(e);
    } else {
      // A code longer than kFastBits (or none), or fewer symbols left than
      // the entry holds: one code by its canonical range.
      const uint64_t window = buf >> 32;
      len = canonical_length(t, window, len == 0 ? kFastBits + 1 : 1);
      if (len == 0) return "Huffman: invalid code in the bitstream";
      store_le<uint16_t>(lane.out, canonical_symbol(t, window, len));
      lane.out += 2;
    }
    buf <<= len;
    have -= len;
  }
  const uint64_t used = uint64_t{next} * 32 - have;  // bits the symbols took
  lane.pos = used;
  if (used > lane.words * 32) return "Huffman: block runs past its words";
  if (used + 32 <= lane.words * 32) return "Huffman: block has an unused word";
  const unsigned spare = static_cast<unsigned>(lane.words * 32 - used);
  if (spare > 0) {
    const uint32_t last = load_le<uint32_t>(lane.src + 4 * (lane.words - 1));
    if ((last & ((uint32_t{1} << spare) - 1)) != 0) return "Huffman: non-zero padding bits";
  }
  return nullptr;
}

// ---- the fast path: several blocks at once ----
//
// One lookup depends on the bits the previous one consumed, a chain of a load
// and two shifts per lookup; decoding kLanes blocks in one loop lets their
// chains overlap. Each step of a lane loads the 64 bits at its position (two
// words, at least 33 bits past it) and makes two lookups. Steps run only while
// every lane is far enough from its block's end that a step can neither read
// past the block's words nor write past its symbols (the 8-byte stores write
// garbage past the entry's symbols, which the next symbols overwrite); each
// lane's last symbols go through decode_carefully.

// Measured on Lorenzo codes of wmag91 (fz_huffman_bench, 1e-2 / 1e-4): 4 lanes
// 3400 / 960 MB/s, 6 lanes 4100 / 1100, 8 no faster (registers run out).
constexpr size_t kLanes = 6;
constexpr unsigned kLookupsPerStep = 2;  // 2 x kFastBits <= the 33 bits a load guarantees
constexpr size_t kSymbolsPerStep = kLookupsPerStep * kSymbolsPerEntry;
// A step writes at most this far past its first symbol (the last store's 4 slots).
constexpr size_t kStepWriteSymbols = (kLookupsPerStep - 1) * kSymbolsPerEntry + 4;

// The 64 bits of the block from bit `pos` on, left-aligned (the low pos % 32 are zeros).
uint64_t bits_at(const uint8_t* src, uint64_t pos) {
  const uint64_t two_words = load_le<uint64_t>(src + 4 * (pos >> 5));
  return ((two_words << 32) | (two_words >> 32)) << (pos & 31);
}

// How many steps the lane can surely make: a step takes at most
// kSymbolsPerStep symbols and `step_bits` bits, and reads at most 3 words
// past the word holding its first bit.
uint64_t safe_steps(const Lane& lane, uint64_t step_bits) {
  const uint64_t left = static_cast<uint64_t>(lane.end - lane.out) / 2;
  if (left < kStepWriteSymbols || lane.words <= 3) return 0;
  const uint64_t bit_limit = 32 * (lane.words - 3);
  if (lane.pos >= bit_limit) return 0;
  return std::min((left - kStepWriteSymbols) / kSymbolsPerStep, (bit_limit - 1 - lane.pos) / step_bits) + 1;
}

// A code longer than kFastBits at bit `pos`, or none: (length << 16) |
// symbol, or 0. Out of line: rare, and it keeps the hot loop's registers free.
[[gnu::noinline]] uint32_t slow_code(const uint8_t* src, uint64_t pos, const DecodeTable& t) {
  const uint64_t top = bits_at(src, pos) >> 32;
  const unsigned len = canonical_length(t, top, kFastBits + 1);
  return len == 0 ? 0 : (len << 16) | canonical_symbol(t, top, len);
}

// One lookup at the top of `window` (at least kFastBits valid bits; after a
// slow code it is reloaded if `reload`). Returns false on a bit string that
// is no code.
// `fast` is t.fast.data(), passed apart because the symbol stores (bytes) may
// alias anything: read through `t`, it would be reloaded after every store.
[[gnu::always_inline]] inline bool lookup(Lane& lane, uint64_t& window, const uint64_t* fast, const DecodeTable& t,
                                          bool reload) {
  const uint64_t e = fast[window >> (64 - kFastBits)];
  const unsigned bits = entry_bits(e);
  if (__builtin_expect(bits != 0, 1)) {
    store_le<uint64_t>(lane.out, e);
    lane.out += 2 * entry_count(e);
    lane.pos += bits;
    window <<= bits;
    return true;
  }
  const uint32_t code = slow_code(lane.src, lane.pos, t);
  if (code == 0) return false;
  store_le<uint16_t>(lane.out, static_cast<uint16_t>(code));
  lane.out += 2;
  lane.pos += code >> 16;
  if (reload) window = bits_at(lane.src, lane.pos);
  return true;
}

// Steps all `Lanes` lanes until one of them nears its end. Returns false on
// an invalid code.
template <size_t Lanes>
bool run_lanes(Lane* lanes, const DecodeTable& t) {
  const uint64_t step_bits = kLookupsPerStep * std::max(kFastBits, t.canonical.max_used);
  const uint64_t* fast = t.fast.data();
  Lane lane[Lanes];
  for (size_t i = 0; i < Lanes; ++i) lane[i] = lanes[i];
  bool ok = true;
  for (;;) {
    uint64_t steps = UINT64_MAX;
    for (size_t i = 0; i < Lanes; ++i) steps = std::min(steps, safe_steps(lane[i], step_bits));
    if (steps == 0) break;
    for (; steps > 0 && ok; --steps) {
      uint64_t window[Lanes];
      for (size_t i = 0; i < Lanes; ++i) window[i] = bits_at(lane[i].src, lane[i].pos);
      for (size_t i = 0; i < Lanes; ++i) ok &= lookup(lane[i], window[i], fast, t, true);
      for (size_t i = 0; i < Lanes; ++i) ok &= lookup(lane[i], window[i], fast, t, false);
    }
    if (!ok) break;
  }
  for (size_t i = 0; i < Lanes; ++i) lanes[i] = lane[i];
  return ok;
}

// run_lanes<count>, for a count known at run time (1..Lanes).
template <size_t Lanes>
bool run_some_lanes(Lane* lanes, size_t count, const DecodeTable& t) {
  if constexpr (Lanes > 1) {
    if (count < Lanes) return run_some_lanes<Lanes - 1>(lanes, count, t);
  }
  return run_lanes<Lanes>(lanes, t);
}

// Decodes the blocks of `lanes` (at most kLanes). Returns false if any of them
// is malformed, leaving which one and why to decode_carefully.
bool decode_lanes(Lane* lanes, size_t count, const DecodeTable& t) {
  while (count > 0) {
    const bool ok = run_some_lanes<kLanes>(lanes, count, t);
    if (!ok) return false;
    // The lanes near their end finish alone; the others go on together.
    size_t kept = 0;
    for (size_t i = 0; i < count; ++i) {
      if (safe_steps(lanes[i], 1) > 0) {
        lanes[kept++] = lanes[i];
      } else if (decode_carefully(lanes[i], t) != nullptr) {
        return false;
      }
    }
    count = kept;
  }
  return true;
}

// The used symbols ordered by (count, symbol) ascending: an LSD radix sort on
// the count, a byte per pass and only as many passes as the largest count has
// bytes, over symbols taken in ascending order (each pass is stable, so equal
// counts keep symbol order). Two passes of 256 buckets for any stream under
// 65536 symbols: far cheaper than a comparison sort for the few hundred used
// symbols of a small chunk, and it allocates only the two arrays it returns.
struct SortedLeaves {
  std::vector<uint32_t> symbols;
  std::vector<uint64_t> weights;  // histogram[symbols[k]]
};

SortedLeaves sort_leaves(const uint64_t* histogram, uint32_t alphabet) {
  SortedLeaves sorted;
  std::vector<uint32_t>& symbols = sorted.symbols;
  uint64_t largest = 0;
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (histogram[s] != 0) {
      symbols.push_back(s);
      largest = std::max(largest, histogram[s]);
    }
  }
  const size_t m = symbols.size();
  std::vector<uint32_t> scratch(m);
  for (unsigned shift = 0; shift < 64 && (largest >> shift) != 0; shift += 8) {
    std::array<uint32_t, 257> bucket_start{};
    for (uint32_t s : symbols) ++bucket_start[((histogram[s] >> shift) & 0xFFu) + 1];
    for (size_t d = 1; d <= 256; ++d) bucket_start[d] += bucket_start[d - 1];
    for (uint32_t s : symbols) scratch[bucket_start[(histogram[s] >> shift) & 0xFFu]++] = s;
    symbols.swap(scratch);
  }
  sorted.weights.resize(m);
  for (size_t k = 0; k < m; ++k) sorted.weights[k] = histogram[symbols[k]];
  return sorted;
}

// Unlimited Huffman code lengths of m >= 2 leaves whose weights are sorted
// ascending, in O(m) (Moffat and Katajainen's in-place method: pairing the two
// lightest of the leaves and the internal nodes made so far, which are made in
// ascending weight, so two queues need no heap). On return weight[k] is leaf
// k's length, non-increasing in k. Ties go to the leaf (the leaf is taken
// unless an internal node is strictly lighter), so the result is a pure
// function of the sorted weights. The sum of all weights must fit in u64.
void huffman_lengths_in_place(std::vector<uint64_t>& weight) {
  uint64_t* a = weight.data();
  const size_t m = weight.size();
  // First pass, left to right: a[next] becomes internal node `next`'s weight,
  // and once paired, the index of its parent.
  a[0] += a[1];
  size_t root = 0;  // the lightest internal node not yet paired
  size_t leaf = 2;  // the lightest leaf not yet paired
  for (size_t next = 1; next < m - 1; ++next) {
    if (leaf >= m || a[root] < a[leaf]) {
      a[next] = a[root];
      a[root++] = next;
    } else {
      a[next] = a[leaf++];
    }
    if (leaf >= m || (root < next && a[root] < a[leaf])) {
      a[next] += a[root];
      a[root++] = next;
    } else {
      a[next] += a[leaf++];
    }
  }
  // Second pass, right to left: internal node depths from parent pointers
  // (node m-2 is the root).
  a[m - 2] = 0;
  for (size_t next = m - 2; next-- > 0;) a[next] = a[a[next]] + 1;
  // Third pass: the leaves hang below the internal nodes of each depth, the
  // deepest leaves being the lightest (lowest indices).
  size_t available = 1;  // nodes at depth `depth`
  size_t used = 0;       // of those, internal
  uint64_t depth = 0;
  size_t internal = m - 1;  // internal nodes not yet counted, as an index bound
  size_t next_leaf = m;
  while (available > 0) {
    while (internal > 0 && a[internal - 1] == depth) {
      ++used;
      --internal;
    }
    while (available > used) {
      a[--next_leaf] = depth;
      --available;
    }
    available = 2 * used;
    ++depth;
    used = 0;
  }
}

// Package-merge (see huffman.hpp) on m >= 2 sorted leaves: adds each leaf's
// length to `lengths` (all zero on entry).
void package_merge(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths) {
  const std::vector<uint32_t>& leaves = sorted.symbols;  // used symbols by (count, symbol)
  const std::vector<uint64_t>& leaf_weight = sorted.weights;
  const size_t m = leaves.size();
  // is_leaf[j] records list j's merge order (1 = leaf); only
  // the order is needed to walk the selection back, not the packages' contents.
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(max_length, m - 1));
  std::vector<std::vector<uint8_t>> is_leaf(depth + 1);
  std::vector<uint64_t> weight = leaf_weight;  // list[depth]
  is_leaf[depth].assign(m, 1);
  std::vector<uint64_t> merged;
  for (unsigned j = depth - 1; j >= 1; --j) {
    const size_t packages = weight.size() / 2;
    merged.clear();
    merged.reserve(m + packages);
    is_leaf[j].clear();
    is_leaf[j].reserve(m + packages);
    size_t a = 0;
    size_t p = 0;
    while (a < m || p < packages) {
      const bool take_leaf =
          p == packages || (a < m && leaf_weight[a] <= weight[2 * p] + weight[2 * p + 1]);
      if (take_leaf) {
        merged.push_back(leaf_weight[a++]);
      } else {
        merged.push_back(weight[2 * p] + weight[2 * p + 1]);
        ++p;
      }
      is_leaf[j].push_back(take_leaf ? 1 : 0);
    }
    weight.swap(merged);
  }

  // Walk the selection: 2m-2 items of list 1; the leaves selected in a list
  // are always the first ones in (count, symbol) order.
  std::vector<uint32_t> selected_leaves(depth + 1, 0);
  size_t take = 2 * m - 2;
  for (unsigned j = 1; j <= depth; ++j) {
    if (take > is_leaf[j].size()) throw std::logic_error("package-merge selection overran a list");
    const size_t leaves_here = static_cast<size_t>(
        std::count(is_leaf[j].begin(), is_leaf[j].begin() + static_cast<std::ptrdiff_t>(take), uint8_t{1}));
    selected_leaves[j] = static_cast<uint32_t>(leaves_here);
    take = 2 * (take - leaves_here);
  }
  if (take != 0) throw std::logic_error("package-merge selection left packages in the last list");
  for (unsigned j = 1; j <= depth; ++j) {
    for (size_t k = 0; k < selected_leaves[j]; ++k) ++lengths[leaves[k]];
  }
}

}  // namespace

std::vector<uint8_t> code_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  check_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  SortedLeaves leaves = sort_leaves(histogram, alphabet);
  const size_t m = leaves.symbols.size();
  if (m == 0) return lengths;
  if (m == 1) {
    lengths[leaves.symbols[0]] = 1;
    return lengths;
  }
  // An ordinary Huffman code is optimal among all prefix codes, so when its
  // longest code (the lightest leaf's) fits the limit it is also optimal under
  // the limit: the same total bits as package-merge, at O(m) after the sort.
  // Only when it does not fit does package-merge (O(m L)) run.
  std::vector<uint64_t> depth = leaves.weights;
  huffman_lengths_in_place(depth);
  if (depth[0] > max_length) {
    package_merge(leaves, max_length, lengths);
  } else {
    for (size_t k = 0; k < m; ++k) lengths[leaves.symbols[k]] = static_cast<uint8_t>(depth[k]);
  }
  return lengths;
}

std::vector<uint8_t> package_merge_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  check_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  const SortedLeaves leaves = sort_leaves(histogram, alphabet);
  if (leaves.symbols.size() == 1) lengths[leaves.symbols[0]] = 1;
  if (leaves.symbols.size() >= 2) package_merge(leaves, max_length, lengths);
  return lengths;
}

std::vector<uint32_t> canonical_codes(const std::vector<uint8_t>& lengths) {
  const Canonical c = make_canonical(lengths);
  std::vector<uint32_t> codes(lengths.size(), 0);
  for (unsigned l = 1; l <= c.max_used; ++l) {
    for (uint32_t k = 0; k < c.count[l]; ++k) codes[c.sorted[c.index[l] + k]] = c.first[l] + k;
  }
  return codes;
}

void encode(ByteSpan in, const Config& config, Bytes& out, const Executor& exec) {
  format::check_encoder_config(config);
  if (in.size % 2 != 0) throw UsageError("Huffman input is u16 symbols: its length must be even");
  const size_t n = in.size / 2;
  const size_t S = config.block_symbols;
  if (n == 0) {
    out = format::write_head(0, config, {});
    return;
  }

  const std::vector<uint64_t> hist = histogram(in.data, n, config.alphabet, exec);
  const std::vector<uint8_t> lengths = code_lengths(hist.data(), config.alphabet, config.max_length);
  uint32_t lo = 0, hi = 0;
  format::code_range(lengths, lo, hi);
  const std::vector<uint32_t> table = format::encode_table(lengths, lo, hi);

  const size_t blocks = (n + S - 1) / S;
  std::vector<uint64_t> words(blocks);
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t count = std::min(S, n - b * S);
    words[b] = (block_bits(in.data + 2 * b * S, count, table.data()) + 31) / 32;
  });
  std::vector<uint64_t> start(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) start[b + 1] = start[b] + words[b];
  if (start[blocks] > UINT32_MAX) throw UsageError("Huffman input too large: over 2^32 coded words");

  out = format::write_head(n, config, lengths);
  const size_t ends_at = out.size();
  const size_t payload_at = ends_at + 4 * blocks;
  out.resize(payload_at + 4 * start[blocks], 0);
  for (size_t b = 0; b < blocks; ++b) {
    store_le<uint32_t>(out.data() + ends_at + 4 * b, static_cast<uint32_t>(start[b + 1]));
  }
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t count = std::min(S, n - b * S);
    encode_block(in.data + 2 * b * S, count, table.data(), out.data() + payload_at + 4 * start[b]);
  });
}

void decode(ByteSpan in, Bytes& out, size_t max_out, const Executor& exec) {
  out.clear();
  const format::Layout layout = format::parse(in.data, in.size, in.size, max_out);
  const uint64_t n = layout.n;
  if (n == 0) return;
  const uint64_t S = layout.block_symbols;
  const uint64_t blocks = layout.blocks;
  const std::vector<uint64_t>& start = layout.start;
  const size_t payload_at = layout.payload_at;

  const DecodeTable table = make_decode_table(layout.lengths.data(), layout.lo, layout.hi);
  out.resize(2 * n);
  const auto lane_of = [&](size_t b) {
    Lane lane;
    lane.src = in.data + payload_at + 4 * start[b];
    lane.words = start[b + 1] - start[b];
    lane.out = out.data() + 2 * b * S;
    lane.end = lane.out + 2 * std::min<uint64_t>(S, n - b * S);
    return lane;
  };
  try {
    // Groups of kLanes consecutive blocks; a group's output does not depend
    // on how groups are spread over threads.
    exec.parallel_for((blocks + kLanes - 1) / kLanes, [&](size_t g) {
      const size_t first = g * kLanes;
      const size_t count = std::min<size_t>(kLanes, blocks - first);
      Lane lanes[kLanes];
      for (size_t i = 0; i < count; ++i) lanes[i] = lane_of(first + i);
      if (decode_lanes(lanes, count, table)) return;
      // A malformed block: decode the group again one block at a time, to
      // report the first error of the first bad block, as a serial decoder would.
      for (size_t i = 0; i < count; ++i) {
        Lane lane = lane_of(first + i);
        if (const char* error = decode_carefully(lane, table)) throw FormatError(error);
      }
      throw std::logic_error("Huffman: the fast decoder refused a block the careful one accepts");
    });
  } catch (...) {
    out.clear();
    throw;
  }
}

namespace format {

// From the lengths of symbols lo..hi (all others unused), each <= kMaxLengthLimit.
// Branch-free over the symbols: unused ones are tallied under length 0 and
// parked past the used ones in `sorted`, then cut off.
Canonical make_canonical(const uint8_t* lengths, uint32_t lo, uint32_t hi) {
  Canonical c;
  for (uint32_t s = lo; s <= hi; ++s) ++c.count[lengths[s]];
  const uint32_t unused = c.count[0];
  c.count[0] = 0;
  for (unsigned l = 1; l <= kMaxLengthLimit; ++l) {
    if (c.count[l] != 0) c.max_used = l;
  }
  uint32_t code = 0;
  uint32_t position = 0;
  for (unsigned l = 1; l <= kMaxLengthLimit; ++l) {
    code = (code + c.count[l - 1]) << 1;  // count[0] is 0: first[1] = 0
    c.first[l] = code;
    c.index[l] = position;
    position += c.count[l];
  }
  c.sorted.resize(size_t{position} + unused);
  std::array<uint32_t, kMaxLengthLimit + 2> next = c.index;
  next[0] = position;
  for (uint32_t s = lo; s <= hi; ++s) c.sorted[next[lengths[s]]++] = static_cast<uint16_t>(s);
  c.sorted.resize(position);
  return c;
}

// One load per symbol in the encoder's hot loop. Symbols outside lo..hi have
// no code (and never occur).
std::vector<uint32_t> encode_table(const std::vector<uint8_t>& lengths, uint32_t lo, uint32_t hi) {
  const Canonical c = make_canonical(lengths.data(), lo, hi);
  std::vector<uint32_t> table(lengths.size(), 0);
  for (unsigned l = 1; l <= c.max_used; ++l) {
    for (uint32_t k = 0; k < c.count[l]; ++k) table[c.sorted[c.index[l] + k]] = ((c.first[l] + k) << 5) | l;
  }
  return table;
}

void check_encoder_config(const Config& config) {
  check_config(config.alphabet, config.max_length);
  if (config.block_symbols < 1 || config.block_symbols > kMaxBlockSymbols) {
    throw UsageError("Huffman block size must be 1..2^24 symbols, got " + std::to_string(config.block_symbols));
  }
}

void code_range(const std::vector<uint8_t>& lengths, uint32_t& lo, uint32_t& hi) {
  lo = 0;
  while (lengths[lo] == 0) ++lo;
  hi = static_cast<uint32_t>(lengths.size() - 1);
  while (lengths[hi] == 0) --hi;
}

Bytes write_head(uint64_t n, const Config& config, const std::vector<uint8_t>& lengths) {
  Bytes out(kHeaderBytes, 0);
  store_le<uint64_t>(out.data(), n);
  store_le<uint32_t>(out.data() + 8, config.alphabet);
  store_le<uint32_t>(out.data() + 12, config.block_symbols);
  out[16] = static_cast<uint8_t>(config.max_length);
  if (n == 0) return out;
  uint32_t lo = 0, hi = 0;
  code_range(lengths, lo, hi);
  out.resize(ends_at(lo, hi), 0);
  store_le<uint16_t>(out.data() + kHeaderBytes, static_cast<uint16_t>(lo));
  store_le<uint16_t>(out.data() + kHeaderBytes + 2, static_cast<uint16_t>(hi));
  pack_lengths(lengths, lo, hi, out.data() + kTableAt);
  return out;
}

Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, size_t max_out) {
  (void)prefix_size;  // the checks below read only bytes the size checks before them proved present
  Layout layout;
  const uint8_t* data = prefix;
  const size_t size = stream_size;
  require_format(size >= kHeaderBytes, "Huffman: stream shorter than its header");
  const uint64_t n = load_le<uint64_t>(data);
  const uint32_t alphabet = load_le<uint32_t>(data + 8);
  const uint32_t S = load_le<uint32_t>(data + 12);
  const unsigned max_length = data[16];
  require_format(alphabet >= 1 && alphabet <= kMaxAlphabet, "Huffman: bad alphabet size");
  require_format(max_length >= 1 && max_length <= kMaxLengthLimit, "Huffman: bad length limit");
  require_format((uint64_t{1} << max_length) >= alphabet, "Huffman: length limit too small for the alphabet");
  require_format(S >= 1 && S <= kMaxBlockSymbols, "Huffman: bad block size");
  require_format(n <= max_out / 2, "Huffman: decoded size exceeds the allowed maximum");
  layout.n = n;
  layout.alphabet = alphabet;
  layout.block_symbols = S;
  layout.max_length = max_length;
  if (n == 0) {
    require_format(size == kHeaderBytes, "Huffman: bytes after an empty stream's header");
    return layout;
  }

  // Code-length table.
  require_format(size >= kTableAt, "Huffman: code-length table truncated");
  const uint32_t lo = load_le<uint16_t>(data + kHeaderBytes);
  const uint32_t hi = load_le<uint16_t>(data + kHeaderBytes + 2);
  require_format(lo <= hi && hi < alphabet, "Huffman: bad symbol range of the code-length table");
  const size_t span = size_t{hi} - lo + 1;
  const size_t table_end = ends_at(lo, hi);
  require_format(size >= table_end, "Huffman: code-length table truncated");
  const uint8_t* packed = data + kTableAt;
  std::vector<uint8_t>& lengths = layout.lengths;
  lengths.assign(alphabet, 0);
  uint64_t kraft = 0;
  size_t used = 0;
  unsigned longest = 0;
  // Eight 5-bit lengths per 5 bytes, branch-free; the limit is checked once
  // after the loop (its error is the only one this loop can find).
  const auto take = [&](size_t i, unsigned l) {
    lengths[lo + i] = static_cast<uint8_t>(l);
    longest = std::max(longest, l);
    kraft += l == 0 ? 0 : (uint64_t{1} << 31) >> l;  // in units of 2^-31: exact for l <= 31
    used += l != 0;
  };
  size_t i = 0;
  for (; i + 8 <= span; i += 8) {
    uint64_t five_bytes = 0;
    for (size_t b = 0; b < 5; ++b) five_bytes |= uint64_t{packed[5 * (i / 8) + b]} << (8 * b);
    for (size_t k = 0; k < 8; ++k) take(i + k, static_cast<unsigned>(five_bytes >> (5 * k)) & 31u);
  }
  for (; i < span; ++i) take(i, unpack_length(packed, i));
  require_format(longest <= max_length, "Huffman: code length above the limit");
  kraft >>= 31 - max_length;  // now in units of 2^-max_length: no length exceeds it
  require_format(lengths[lo] != 0 && lengths[hi] != 0, "Huffman: code-length table range not tight");
  if (used == 1) {
    require_format(lengths[lo] == 1, "Huffman: a single code must have length 1");
  } else {
    require_format(kraft == (uint64_t{1} << max_length), "Huffman: code lengths are not a complete code");
  }
  const size_t table_end_bits = span * kLengthBits;
  if (table_end_bits % 8 != 0) {
    require_format((packed[table_end_bits / 8] >> (table_end_bits % 8)) == 0, "Huffman: non-zero table padding");
  }
  for (size_t at = kTableAt + table_bytes(span); at < table_end; ++at) {
    require_format(data[at] == 0, "Huffman: non-zero alignment bytes");
  }
  layout.lo = lo;
  layout.hi = hi;
  layout.ends_at = table_end;

  // Block table: checked against the stream's length before anything is sized by n.
  const uint64_t blocks = (n + S - 1) / S;
  require_format(blocks <= (size - table_end) / 4, "Huffman: block table truncated");
  const size_t payload_at = table_end + 4 * blocks;
  std::vector<uint64_t>& start = layout.start;
  start.assign(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) {
    const uint64_t end = load_le<uint32_t>(data + table_end + 4 * b);
    const uint64_t count = std::min<uint64_t>(S, n - b * S);
    require_format(end > start[b], "Huffman: block ends not increasing");
    require_format(count <= (end - start[b]) * 32, "Huffman: block too short for its symbols");
    start[b + 1] = end;
  }
  require_format((size - payload_at) % 4 == 0 && (size - payload_at) / 4 == start[blocks],
                 "Huffman: payload length disagrees with the block table");
  layout.blocks = blocks;
  layout.payload_at = payload_at;
  return layout;
}

size_t prefix_bytes(const uint8_t* head, size_t head_size, size_t stream_size) {
  (void)head_size;
  // Too short for lo and hi, or an empty stream: parse() needs no more than
  // the header (and refuses anything else there).
  if (stream_size < kTableAt) return stream_size;
  const uint64_t n = load_le<uint64_t>(head);
  const uint32_t S = load_le<uint32_t>(head + 12);
  const uint32_t lo = load_le<uint16_t>(head + kHeaderBytes);
  const uint32_t hi = load_le<uint16_t>(head + kHeaderBytes + 2);
  if (n == 0 || S == 0 || lo > hi) return kTableAt;
  const size_t table_end = ends_at(lo, hi);
  if (table_end >= stream_size) return stream_size;
  const uint64_t blocks = n / S + (n % S != 0 ? 1 : 0);
  if (blocks > (stream_size - table_end) / 4) return stream_size;
  return static_cast<size_t>(table_end + 4 * blocks);
}

}  // namespace format

}  // namespace fz::huffman
