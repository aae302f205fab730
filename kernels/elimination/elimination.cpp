// CPU implementation of the RZE/RRE stream format of elimination/elimination.hpp.
//
// Encoding a sub-chunk takes two passes over its words: the first builds the
// level-0 bitmap and counts the kept words, so incompressible data (random
// bytes) is recognised and stored raw without ever compacting it; the second,
// run only when coding pays, copies the kept words straight into the output.
// Decoding validates every bitmap level (padding bits, popcount against the
// bytes that remain) before expanding it, so the expansion loops may trust
// their inputs and run without per-word bounds checks.
#include "elimination/elimination.hpp"

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "common/error.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fz::elimination {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

void check_word_size(unsigned word_size) {
  if (word_size != 1 && word_size != 2 && word_size != 4 && word_size != 8) {
    throw UsageError("RZE/RRE word size must be 1, 2, 4 or 8, got " + std::to_string(word_size));
  }
}

// A sub-chunk of at most kBlockBytes bytes has at most 16384 words, so its
// bitmap levels hold at most 16384, 2048, 256 and 32 bits: four levels.
constexpr size_t kMaxLevels = 8;
// Bytes of all levels of one sub-chunk, each padded by kSlack so that the
// branch-free compaction may write a few bytes past a level's end.
constexpr size_t kSlack = 8;
constexpr size_t kLevelStorage = 2048 + 256 + 32 + 4 + kMaxLevels * kSlack;

// The shape of a sub-chunk's bitmap levels: level l has bits[l] meaningful
// bits (one per word for level 0, one per byte of level l-1 above that), the
// last level (top) is stored raw because it is at most 8 bytes.
struct LevelPlan {
  size_t count = 0;
  size_t bits[kMaxLevels] = {};
  size_t offset[kMaxLevels] = {};  // where level l lives in a kLevelStorage buffer

  size_t bytes(size_t level) const { return (bits[level] + 7) / 8; }
  size_t top() const { return count - 1; }
};

LevelPlan plan_levels(size_t words) {
  LevelPlan plan;
  plan.bits[0] = words;
  plan.count = 1;
  while (plan.bytes(plan.count - 1) > 8) {
    plan.bits[plan.count] = plan.bytes(plan.count - 1);
    plan.offset[plan.count] = plan.offset[plan.count - 1] + plan.bytes(plan.count - 1) + kSlack;
    ++plan.count;
  }
  return plan;
}

// Inline bit counting: the build targets x86-64 without POPCNT, where
// __builtin_popcountll is a libgcc call (5% of a lossy decode).
inline unsigned popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<unsigned>((x * 0x0101010101010101ull) >> 56);
}

size_t popcount_bytes(const uint8_t* bytes, size_t count) {
  size_t total = 0;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) total += popcount64(load_le<uint64_t>(bytes + i));
  for (; i < count; ++i) total += static_cast<size_t>(__builtin_popcount(bytes[i]));
  return total;
}

// True iff the unused high bits of a bitmap of `bits` meaningful bits are 0.
bool padding_clear(const uint8_t* bitmap, size_t bits) {
  const unsigned used = bits % 8;
  return used == 0 || (bitmap[bits / 8] >> used) == 0;
}

// Bit i of the result is set iff byte i of x is not zero (no per-byte branch).
inline unsigned nonzero_byte_mask(uint64_t x) {
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7FULL;
  const uint64_t high = (((x & kLow7) + kLow7) | x) & ~kLow7;  // bit 7 of each nonzero byte
  // Gathers bit 8i+7 into bit 56+i; the shifted copies never overlap, so no carries.
  return static_cast<unsigned>((high * 0x0002040810204081ULL) >> 56);
}

template <typename Word>
inline Word load_word(const uint8_t* p) {
  return load_le<Word>(p);
}

// Encode pass 1: writes the level-0 bitmap of `words` words (padding bits 0)
// and returns the number of kept words.
template <typename Word, Rule rule>
size_t build_bitmap(const uint8_t* in, size_t words, uint8_t* bitmap) {
  constexpr size_t k = sizeof(Word);
  const size_t groups = words / 8;
  Word previous = 0;
  size_t g = 0;
#if defined(__SSE2__)
  if constexpr (k == 1) {
    // Two bitmap bytes per 16 input bytes: one compare and one movemask.
    __m128i before = _mm_setzero_si128();  // byte 15: the byte before this step (RRE)
    for (; g + 2 <= groups; g += 2) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + g * 8));
      const __m128i reference =
          rule == Rule::kNonZero ? _mm_setzero_si128() : _mm_or_si128(_mm_slli_si128(x, 1), _mm_srli_si128(before, 15));
      const unsigned same = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, reference)));
      store_le<uint16_t>(bitmap + g, static_cast<uint16_t>(~same));
      before = x;
    }
    previous = g > 0 ? in[g * 8 - 1] : Word(0);
  }
#endif
  for (; g < groups; ++g) {
    const uint8_t* group = in + g * 8 * k;
    unsigned mask = 0;
    if constexpr (k == 1) {
      const uint64_t x = load_le<uint64_t>(group);
      // RRE compares each byte with the one before it: shift the group up one
      // byte and bring in the previous group's last byte.
      const uint64_t changed = rule == Rule::kNonZero ? x : x ^ ((x << 8) | previous);
      mask = nonzero_byte_mask(changed);
      previous = static_cast<Word>(x >> 56);
    } else {
      for (unsigned j = 0; j < 8; ++j) {
        const Word v = load_word<Word>(group + j * k);
        const bool keep = rule == Rule::kNonZero ? v != 0 : v != previous;
        mask |= static_cast<unsigned>(keep) << j;
        previous = v;
      }
    }
    bitmap[g] = static_cast<uint8_t>(mask);
  }
  if (const size_t rest = words % 8) {
    unsigned mask = 0;
    for (size_t j = 0; j < rest; ++j) {
      const Word v = load_word<Word>(in + (groups * 8 + j) * k);
      const bool keep = rule == Rule::kNonZero ? v != 0 : v != previous;
      mask |= static_cast<unsigned>(keep) << j;
      previous = v;
    }
    bitmap[groups] = static_cast<uint8_t>(mask);
  }
  return popcount_bytes(bitmap, (words + 7) / 8);
}

// Encode pass 2: copies the words whose bitmap bit is set to dst, in order, and
// returns the end of what it wrote. Mixed bitmap bytes are copied without a
// branch per word (every word is written, dst advances only past kept ones),
// which may write up to 8 words past the final end: done only while dst_limit
// leaves room for that.
template <typename Word>
uint8_t* compact(const uint8_t* in, size_t words, const uint8_t* bitmap, uint8_t* dst, const uint8_t* dst_limit) {
  constexpr size_t k = sizeof(Word);
  const size_t groups = (words + 7) / 8;
  for (size_t g = 0; g < groups; ++g) {
    unsigned mask = bitmap[g];
    const uint8_t* group = in + g * 8 * k;
    if (mask == 0) continue;
    if (mask == 0xFF) {  // never true for a partial last group: its padding bits are 0
      std::memcpy(dst, group, 8 * k);
      dst += 8 * k;
    } else if (g + 1 < groups && static_cast<size_t>(dst_limit - dst) >= 8 * k) {
      for (unsigned j = 0; j < 8; ++j) {
        std::memcpy(dst, group + j * k, k);
        dst += ((mask >> j) & 1u) * k;
      }
    } else {
      while (mask != 0) {
        std::memcpy(dst, group + static_cast<unsigned>(__builtin_ctz(mask)) * k, k);
        dst += k;
        mask &= mask - 1;
      }
    }
  }
  return dst;
}

// Decodes `words` words from a validated bitmap and exactly popcount(bitmap)
// kept words at [src, src_end). Dropped words are 0 (repeat == false) or the
// previous word (repeat == true, starting from 0).
template <typename Word, bool repeat>
void expand(const uint8_t* bitmap, size_t words, const uint8_t* src, const uint8_t* src_end, uint8_t* out) {
  constexpr size_t k = sizeof(Word);
  const size_t groups = words / 8;
  Word previous = 0;
  for (size_t g = 0; g < groups; ++g) {
    // Runs of eight bitmap bytes all clear or all set (the zero and the dense
    // bit planes of shuffled data) take one step instead of eight.
    if (g + 8 <= groups) {
      const uint64_t run = load_le<uint64_t>(bitmap + g);
      if (run == 0) {
        uint8_t* group = out + g * 8 * k;
        if constexpr (repeat) {
          for (unsigned j = 0; j < 64; ++j) std::memcpy(group + j * k, &previous, k);
        } else {
          std::memset(group, 0, 64 * k);
        }
        g += 7;
        continue;
      }
      if (run == ~uint64_t{0}) {  // the validated popcount guarantees the 64 words
        std::memcpy(out + g * 8 * k, src, 64 * k);
        src += 64 * k;
        if constexpr (repeat) previous = load_word<Word>(out + (g * 8 + 63) * k);
        g += 7;
        continue;
      }
    }
    const unsigned mask = bitmap[g];
    uint8_t* group = out + g * 8 * k;
    if (mask == 0) {
      if constexpr (repeat) {
        for (unsigned j = 0; j < 8; ++j) std::memcpy(group + j * k, &previous, k);
      } else {
        std::memset(group, 0, 8 * k);
      }
    } else if (mask == 0xFF) {  // eight set bits: the validated popcount guarantees 8 words remain
      std::memcpy(group, src, 8 * k);
      src += 8 * k;
      if constexpr (repeat) previous = load_word<Word>(group + 7 * k);
    } else if (static_cast<size_t>(src_end - src) >= 8 * k) {
      // Branch-free: always load at src, keep the load only where the bit is set.
      for (unsigned j = 0; j < 8; ++j) {
        const unsigned bit = (mask >> j) & 1u;
        const Word loaded = load_word<Word>(src);
        const Word fill = repeat ? previous : Word(0);
        const Word v = bit ? loaded : fill;
        std::memcpy(group + j * k, &v, k);
        previous = v;
        src += bit * k;
      }
    } else {
      for (unsigned j = 0; j < 8; ++j) {
        Word v = repeat ? previous : Word(0);
        if ((mask >> j) & 1u) {
          v = load_word<Word>(src);
          src += k;
        }
        std::memcpy(group + j * k, &v, k);
        previous = v;
      }
    }
  }
  const size_t rest = words % 8;
  for (size_t j = 0; j < rest; ++j) {
    Word v = repeat ? previous : Word(0);
    if ((bitmap[groups] >> j) & 1u) {
      v = load_word<Word>(src);
      src += k;
    }
    std::memcpy(out + (groups * 8 + j) * k, &v, k);
    previous = v;
  }
}

template <typename Word, Rule rule>
size_t encode_subchunk_typed(ByteSpan in, uint8_t* out) {
  constexpr size_t k = sizeof(Word);
  const size_t osize = in.size;
  const size_t words = osize / k;
  const size_t leftover = osize % k;
  if (words == 0) return osize;  // nothing to thin: the coded form could not be smaller

  const LevelPlan plan = plan_levels(words);
  const size_t top = plan.top();
  std::array<uint8_t, kLevelStorage> levels;  // bitmaps B_0 .. B_top
  std::array<uint8_t, kLevelStorage> kept;    // K_0 .. K_{top-1}, same offsets
  size_t kept_bytes[kMaxLevels] = {};

  const size_t kept_words = build_bitmap<Word, rule>(in.data, words, levels.data());
  size_t total = kept_words * k + leftover + plan.bytes(top);
  if (total >= osize) return osize;

  for (size_t l = 0; l < top; ++l) {
    const uint8_t* level = levels.data() + plan.offset[l];
    uint8_t* above = levels.data() + plan.offset[l + 1];
    kept_bytes[l] = build_bitmap<uint8_t, Rule::kChanged>(level, plan.bytes(l), above);
    total += kept_bytes[l];
    if (total >= osize) return osize;
    uint8_t* dst = kept.data() + plan.offset[l];
    compact<uint8_t>(level, plan.bytes(l), above, dst, dst + plan.bytes(l) + kSlack);
  }

  uint8_t* dst = out;
  std::memcpy(dst, levels.data() + plan.offset[top], plan.bytes(top));
  dst += plan.bytes(top);
  for (size_t l = top; l-- > 0;) {
    std::memcpy(dst, kept.data() + plan.offset[l], kept_bytes[l]);
    dst += kept_bytes[l];
  }
  dst = compact<Word>(in.data, words, levels.data(), dst, out + kBlockBytes);
  std::memcpy(dst, in.data + words * k, leftover);
  return total;
}

template <typename Word, Rule rule>
void decode_subchunk_typed(ByteSpan coded, size_t osize, uint8_t* out) {
  constexpr size_t k = sizeof(Word);
  const size_t words = osize / k;
  const size_t leftover = osize % k;
  const LevelPlan plan = plan_levels(words);
  const size_t top = plan.top();
  std::array<uint8_t, kLevelStorage> levels;
  const uint8_t* bitmap[kMaxLevels] = {};

  const uint8_t* const end = coded.data + coded.size;
  const uint8_t* pos = coded.data;
  require_format(plan.bytes(top) <= coded.size, "RZE/RRE: sub-chunk shorter than its top bitmap");
  bitmap[top] = pos;
  pos += plan.bytes(top);
  require_format(padding_clear(bitmap[top], plan.bits[top]), "RZE/RRE: padding bits set in top bitmap");

  for (size_t l = top; l-- > 0;) {
    // Bits of level l+1 count the kept bytes of level l, stored next.
    const size_t count = popcount_bytes(bitmap[l + 1], plan.bytes(l + 1));
    require_format(count <= static_cast<size_t>(end - pos), "RZE/RRE: bitmap level truncated");
    uint8_t* level = levels.data() + plan.offset[l];
    expand<uint8_t, true>(bitmap[l + 1], plan.bytes(l), pos, pos + count, level);
    pos += count;
    require_format(padding_clear(level, plan.bits[l]), "RZE/RRE: padding bits set in bitmap");
    bitmap[l] = level;
  }

  const size_t kept_words = popcount_bytes(bitmap[0], plan.bytes(0));
  require_format(static_cast<size_t>(end - pos) == kept_words * k + leftover,
                 "RZE/RRE: sub-chunk length disagrees with its bitmap");
  const uint8_t* words_end = pos + kept_words * k;
  expand<Word, rule == Rule::kChanged>(bitmap[0], words, pos, words_end, out);
  std::memcpy(out + words * k, words_end, leftover);
}

template <Rule rule>
size_t encode_subchunk_rule(ByteSpan in, unsigned word_size, uint8_t* out) {
  switch (word_size) {
    case 1: return encode_subchunk_typed<uint8_t, rule>(in, out);
    case 2: return encode_subchunk_typed<uint16_t, rule>(in, out);
    case 4: return encode_subchunk_typed<uint32_t, rule>(in, out);
    default: return encode_subchunk_typed<uint64_t, rule>(in, out);
  }
}

template <Rule rule>
void decode_subchunk_rule(ByteSpan coded, size_t osize, unsigned word_size, uint8_t* out) {
  switch (word_size) {
    case 1: return decode_subchunk_typed<uint8_t, rule>(coded, osize, out);
    case 2: return decode_subchunk_typed<uint16_t, rule>(coded, osize, out);
    case 4: return decode_subchunk_typed<uint32_t, rule>(coded, osize, out);
    default: return decode_subchunk_typed<uint64_t, rule>(coded, osize, out);
  }
}

}  // namespace

size_t encode_subchunk(ByteSpan in, unsigned word_size, Rule rule, uint8_t* out) {
  check_word_size(word_size);
  if (in.size > kBlockBytes) throw UsageError("RZE/RRE: sub-chunk larger than kBlockBytes");
  return rule == Rule::kNonZero ? encode_subchunk_rule<Rule::kNonZero>(in, word_size, out)
                                : encode_subchunk_rule<Rule::kChanged>(in, word_size, out);
}

void decode_subchunk(ByteSpan coded, size_t osize, unsigned word_size, Rule rule, uint8_t* out) {
  check_word_size(word_size);
  if (osize > kBlockBytes) throw UsageError("RZE/RRE: sub-chunk larger than kBlockBytes");
  // A coded sub-chunk is strictly smaller than its decoded size; size == osize means raw.
  require_format(coded.size < osize, "RZE/RRE: coded sub-chunk not smaller than its decoded size");
  if (rule == Rule::kNonZero) {
    decode_subchunk_rule<Rule::kNonZero>(coded, osize, word_size, out);
  } else {
    decode_subchunk_rule<Rule::kChanged>(coded, osize, word_size, out);
  }
}

void encode_stream(ByteSpan in, unsigned word_size, Rule rule, Bytes& out, const Executor& exec) {
  encode_stream_blocks(in.size, word_size, rule, out, exec,
                       [&](size_t block, uint8_t*) { return in.data + block * kBlockBytes; });
}

void encode_stream_blocks(size_t n, unsigned word_size, Rule rule, Bytes& out, const Executor& exec,
                          const BlockProducer& produce) {
  check_word_size(word_size);
  const size_t chunks = block_count(n);
  const size_t header = 8 + 2 * chunks;
  // Blocks coded between two appends: enough for every thread, small enough
  // that the slots stay a few MiB whatever the stream's size.
  constexpr size_t kBatchBlocks = 256;
  const size_t batch = chunks < kBatchBlocks ? chunks : kBatchBlocks;
  // Each block codes into its own slot, so threads never share output and the
  // result cannot depend on scheduling; slots are appended in block order.
  // The slots are kept per thread: a fresh multi-MiB buffer per chunk would
  // fault its pages in on every call.
  thread_local Bytes slots;
  if (slots.size() < batch * kBlockBytes) slots.resize(batch * kBlockBytes);
  std::vector<uint16_t> kept(batch);

  out.clear();
  out.reserve(header + n);  // every block raw at worst; pages are touched as written
  out.resize(header);
  store_le<uint64_t>(out.data(), n);
  for (size_t first = 0; first < chunks; first += batch) {
    const size_t count = chunks - first < batch ? chunks - first : batch;
    uint8_t* const slot_base = slots.data();
    exec.parallel_for(count, [&](size_t j) {
      const size_t i = first + j;
      const size_t osize = block_length(n, i);
      alignas(16) uint8_t scratch[2 * kBlockBytes];
      const uint8_t* block = produce(i, scratch);
      uint8_t* slot = slot_base + j * kBlockBytes;
      const size_t size = encode_subchunk(ByteSpan(block, osize), word_size, rule, slot);
      if (size == osize) std::memcpy(slot, block, osize);  // stored raw
      kept[j] = static_cast<uint16_t>(size);
    });
    for (size_t j = 0; j < count; ++j) {
      store_le<uint16_t>(out.data() + 8 + 2 * (first + j), kept[j]);
      out.insert(out.end(), slot_base + j * kBlockBytes, slot_base + j * kBlockBytes + kept[j]);
    }
  }
}

StreamBlocks::StreamBlocks(ByteSpan in, unsigned word_size, Rule rule, size_t max_out)
    : in_(in), word_size_(word_size), rule_(rule) {
  check_word_size(word_size);
  require_format(in.size >= 8, "RZE/RRE: stream shorter than its header");
  const uint64_t n = load_le<uint64_t>(in.data);
  require_format(n <= max_out, "RZE/RRE: decoded size exceeds the allowed maximum");
  const size_t chunks = n / kBlockBytes + (n % kBlockBytes != 0 ? 1 : 0);
  require_format(chunks <= (in.size - 8) / 2, "RZE/RRE: size table truncated");
  const size_t header = 8 + 2 * chunks;
  offsets_.resize(chunks);
  size_t payload = 0;
  for (size_t i = 0; i < chunks; ++i) {
    const size_t size = load_le<uint16_t>(in.data + 8 + 2 * i);
    require_format(size <= block_length(n, i), "RZE/RRE: sub-chunk size larger than the sub-chunk");
    offsets_[i] = header + payload;
    payload += size;  // at most chunks * kBlockBytes: cannot overflow
  }
  require_format(payload == in.size - header, "RZE/RRE: payload length disagrees with the size table");
  n_ = static_cast<size_t>(n);
}

void StreamBlocks::decode_block(size_t i, uint8_t* dst) const {
  const size_t osize = block_length(n_, i);
  const size_t size = (i + 1 < offsets_.size() ? offsets_[i + 1] : in_.size) - offsets_[i];
  if (size == osize) {
    std::memcpy(dst, in_.data + offsets_[i], osize);
  } else {
    decode_subchunk(in_.subspan(offsets_[i], size), osize, word_size_, rule_, dst);
  }
}

void decode_stream(ByteSpan in, unsigned word_size, Rule rule, Bytes& out, size_t max_out,
                   const Executor& exec) {
  // Only once the table agrees with the input length is anything allocated.
  const StreamBlocks stream(in, word_size, rule, max_out);
  out.resize(stream.size());  // every byte is written below (raw copy or decoded sub-chunk)
  try {
    exec.parallel_for(stream.blocks(), [&](size_t i) { stream.decode_block(i, out.data() + i * kBlockBytes); });
  } catch (...) {
    out.clear();  // never hand back a half-decoded buffer
    throw;
  }
}

}  // namespace fz::elimination
