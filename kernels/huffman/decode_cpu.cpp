// Huffman decoding on the CPU (format and methods: huffman/huffman.hpp).
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
#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_format.hpp"

namespace fz::huffman {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using format::Canonical;
using format::kHeaderBytes;
using format::kLengthBits;
using format::make_canonical;
using format::table_bytes;

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

}  // namespace

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

}  // namespace fz::huffman
