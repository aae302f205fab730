// Huffman on the CPU, and the host routines (code lengths, canonical codes)
// that the CUDA backend shares. Format and methods: huffman/huffman.hpp.
//
// Encoding makes three passes, each parallel over independent work items with
// integer results, so the bytes cannot depend on the thread count: a histogram
// (per slab, summed), the bit length of each block (so every block knows where
// its words go before any is written), then the blocks' codes written in place.
// Decoding validates the whole table and the block table before allocating,
// then decodes blocks in parallel with a lookup table on the first bits and a
// canonical slow path for longer codes.
#include "huffman/huffman.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "common/error.hpp"

namespace fz::huffman {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

constexpr size_t kHeaderBytes = 17;
constexpr unsigned kLengthBits = 5;  // a stored code length, 0..31 (<= kMaxLengthLimit)
// Bits looked up at once by the decoder. Purely a decoder choice (not part of
// the format): 2^12 entries of 4 bytes (16 KiB) stay in L1; 12 rather than
// 11 bits took Lorenzo codes (about 8.7 bits/symbol) from 430 to 485 MB/s.
constexpr unsigned kFastBits = 12;

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

size_t table_bytes(size_t symbols) { return (symbols * kLengthBits + 7) / 8; }
size_t align4(size_t x) { return (x + 3) & ~size_t{3}; }

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

// What both encoder and decoder derive from the lengths: the symbols in
// canonical order and, per length, the first code and the first index.
struct Canonical {
  std::vector<uint16_t> sorted;                 // symbols by (length, symbol)
  std::array<uint32_t, kMaxLengthLimit + 2> count{};   // codes of each length
  std::array<uint32_t, kMaxLengthLimit + 2> first{};   // first code value of each length
  std::array<uint32_t, kMaxLengthLimit + 2> index{};   // position in `sorted` of that code
  unsigned max_used = 0;
};

Canonical make_canonical(const std::vector<uint8_t>& lengths) {
  Canonical c;
  for (uint8_t l : lengths) {
    if (l != 0) {
      ++c.count[l];
      c.max_used = std::max<unsigned>(c.max_used, l);
    }
  }
  uint32_t code = 0;
  uint32_t position = 0;
  for (unsigned l = 1; l <= kMaxLengthLimit; ++l) {
    code = (code + c.count[l - 1]) << 1;  // count[0] is 0: first[1] = 0
    c.first[l] = code;
    c.index[l] = position;
    position += c.count[l];
  }
  c.sorted.resize(position);
  std::array<uint32_t, kMaxLengthLimit + 2> next = c.index;
  for (size_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) c.sorted[next[lengths[s]]++] = static_cast<uint16_t>(s);
  }
  return c;
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

// Per symbol: (code << 5) | length, one load per symbol in the hot loop.
std::vector<uint32_t> encode_table(const std::vector<uint8_t>& lengths) {
  const std::vector<uint32_t> codes = canonical_codes(lengths);
  std::vector<uint32_t> table(lengths.size());
  for (size_t s = 0; s < lengths.size(); ++s) table[s] = (codes[s] << 5) | lengths[s];
  return table;
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

struct DecodeTable {
  // Fast path: indexed by the next `fast_bits` bits; (symbol << 8) | length,
  // or 0 when the code is longer than fast_bits (or the prefix is invalid).
  std::vector<uint32_t> fast;
  unsigned fast_bits = 0;
  // Slow path, on 32-bit left-aligned windows: a code of length l lies in
  // [start[l], limit[l]); limit[] is non-decreasing in l for canonical codes.
  std::array<uint64_t, kMaxLengthLimit + 2> start{};
  std::array<uint64_t, kMaxLengthLimit + 2> limit{};
  Canonical canonical;
};

DecodeTable make_decode_table(const std::vector<uint8_t>& lengths) {
  DecodeTable t;
  t.canonical = make_canonical(lengths);
  const Canonical& c = t.canonical;
  t.fast_bits = std::min(kFastBits, c.max_used);
  t.fast.assign(size_t{1} << t.fast_bits, 0);
  for (unsigned l = 1; l <= c.max_used; ++l) {
    t.start[l] = uint64_t{c.first[l]} << (32 - l);
    t.limit[l] = uint64_t{c.first[l] + c.count[l]} << (32 - l);
    if (l > t.fast_bits) continue;
    for (uint32_t k = 0; k < c.count[l]; ++k) {
      const uint32_t symbol = c.sorted[c.index[l] + k];
      const size_t begin = size_t{c.first[l] + k} << (t.fast_bits - l);
      const size_t span = size_t{1} << (t.fast_bits - l);
      std::fill(t.fast.begin() + begin, t.fast.begin() + begin + span, (symbol << 8) | l);
    }
  }
  return t;
}

// Decodes `count` symbols of one block from words [0, words) at src. The bit
// buffer is left-aligned: its top `have` bits are the next bits of the block.
// Past the block's last word it is refilled with zero words (never read), and
// the end check below rejects a block that needed them.
void decode_block(const uint8_t* src, size_t words, size_t count, const DecodeTable& t, uint8_t* out) {
  uint64_t buf = 0;
  unsigned have = 0;
  size_t next = 0;  // words loaded, zero words past the end included
  const unsigned fast_shift = 64 - t.fast_bits;
  const unsigned max_used = t.canonical.max_used;
  for (size_t i = 0; i < count; ++i) {
    if (have < 32) {
      const uint64_t w = next < words ? load_le<uint32_t>(src + 4 * next) : 0;
      ++next;
      buf |= w << (32 - have);
      have += 32;
    }
    const uint32_t e = t.fast[buf >> fast_shift];
    unsigned len = e & 0xFFu;
    uint32_t symbol = e >> 8;
    if (len == 0) {
      const uint64_t window = buf >> 32;
      len = t.fast_bits + 1;
      while (len <= max_used && window >= t.limit[len]) ++len;
      require_format(len <= max_used, "Huffman: invalid code in the bitstream");
      const uint64_t offset = (window - t.start[len]) >> (32 - len);
      symbol = t.canonical.sorted[t.canonical.index[len] + offset];
    }
    store_le<uint16_t>(out + 2 * i, static_cast<uint16_t>(symbol));
    buf <<= len;
    have -= len;
  }
  const uint64_t used = uint64_t{next} * 32 - have;  // bits the symbols took
  require_format(used <= uint64_t{words} * 32, "Huffman: block runs past its words");
  require_format(used + 32 > uint64_t{words} * 32, "Huffman: block has an unused word");
  const unsigned spare = static_cast<unsigned>(uint64_t{words} * 32 - used);
  if (spare > 0) {
    const uint32_t last = load_le<uint32_t>(src + 4 * (words - 1));
    require_format((last & ((uint32_t{1} << spare) - 1)) == 0, "Huffman: non-zero padding bits");
  }
}

}  // namespace

std::vector<uint8_t> code_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  check_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  std::vector<uint32_t> leaves;  // used symbols by (count, symbol)
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (histogram[s] != 0) leaves.push_back(s);
  }
  const size_t m = leaves.size();
  if (m == 0) return lengths;
  if (m == 1) {
    lengths[leaves[0]] = 1;
    return lengths;
  }
  std::stable_sort(leaves.begin(), leaves.end(),
                   [&](uint32_t a, uint32_t b) { return histogram[a] < histogram[b]; });
  std::vector<uint64_t> leaf_weight(m);
  for (size_t k = 0; k < m; ++k) leaf_weight[k] = histogram[leaves[k]];

  // Package-merge. is_leaf[j] records list j's merge order (1 = leaf); only
  // the order is needed to walk the selection back, not the packages' contents.
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(max_length, m - 1));
  std::vector<std::vector<uint8_t>> is_leaf(depth + 1);
  std::vector<uint64_t> weight = leaf_weight;  // list[depth]
  is_leaf[depth].assign(m, 1);
  std::vector<uint64_t> merged;
  for (unsigned j = depth - 1; j >= 1; --j) {
    const size_t packages = weight.size() / 2;
    merged.clear();
    is_leaf[j].clear();
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
  check_config(config.alphabet, config.max_length);
  if (config.block_symbols < 1 || config.block_symbols > kMaxBlockSymbols) {
    throw UsageError("Huffman block size must be 1..2^24 symbols, got " + std::to_string(config.block_symbols));
  }
  if (in.size % 2 != 0) throw UsageError("Huffman input is u16 symbols: its length must be even");
  const size_t n = in.size / 2;
  const size_t S = config.block_symbols;

  out.assign(kHeaderBytes, 0);
  store_le<uint64_t>(out.data(), n);
  store_le<uint32_t>(out.data() + 8, config.alphabet);
  store_le<uint32_t>(out.data() + 12, config.block_symbols);
  out[16] = static_cast<uint8_t>(config.max_length);
  if (n == 0) return;

  const std::vector<uint64_t> hist = histogram(in.data, n, config.alphabet, exec);
  const std::vector<uint8_t> lengths = code_lengths(hist.data(), config.alphabet, config.max_length);
  uint32_t lo = 0;
  while (lengths[lo] == 0) ++lo;
  uint32_t hi = config.alphabet - 1;
  while (lengths[hi] == 0) --hi;
  const std::vector<uint32_t> table = encode_table(lengths);

  const size_t blocks = (n + S - 1) / S;
  std::vector<uint64_t> words(blocks);
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t count = std::min(S, n - b * S);
    words[b] = (block_bits(in.data + 2 * b * S, count, table.data()) + 31) / 32;
  });
  std::vector<uint64_t> start(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) start[b + 1] = start[b] + words[b];
  if (start[blocks] > UINT32_MAX) throw UsageError("Huffman input too large: over 2^32 coded words");

  const size_t table_at = kHeaderBytes + 4;
  const size_t ends_at = align4(table_at + table_bytes(size_t{hi} - lo + 1));
  const size_t payload_at = ends_at + 4 * blocks;
  out.resize(payload_at + 4 * start[blocks], 0);
  store_le<uint16_t>(out.data() + kHeaderBytes, static_cast<uint16_t>(lo));
  store_le<uint16_t>(out.data() + kHeaderBytes + 2, static_cast<uint16_t>(hi));
  pack_lengths(lengths, lo, hi, out.data() + table_at);
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
  require_format(in.size >= kHeaderBytes, "Huffman: stream shorter than its header");
  const uint64_t n = load_le<uint64_t>(in.data);
  const uint32_t alphabet = load_le<uint32_t>(in.data + 8);
  const uint32_t S = load_le<uint32_t>(in.data + 12);
  const unsigned max_length = in.data[16];
  require_format(alphabet >= 1 && alphabet <= kMaxAlphabet, "Huffman: bad alphabet size");
  require_format(max_length >= 1 && max_length <= kMaxLengthLimit, "Huffman: bad length limit");
  require_format((uint64_t{1} << max_length) >= alphabet, "Huffman: length limit too small for the alphabet");
  require_format(S >= 1 && S <= kMaxBlockSymbols, "Huffman: bad block size");
  require_format(n <= max_out / 2, "Huffman: decoded size exceeds the allowed maximum");
  if (n == 0) {
    require_format(in.size == kHeaderBytes, "Huffman: bytes after an empty stream's header");
    return;
  }

  // Code-length table.
  require_format(in.size >= kHeaderBytes + 4, "Huffman: code-length table truncated");
  const uint32_t lo = load_le<uint16_t>(in.data + kHeaderBytes);
  const uint32_t hi = load_le<uint16_t>(in.data + kHeaderBytes + 2);
  require_format(lo <= hi && hi < alphabet, "Huffman: bad symbol range of the code-length table");
  const size_t table_at = kHeaderBytes + 4;
  const size_t span = size_t{hi} - lo + 1;
  const size_t ends_at = align4(table_at + table_bytes(span));
  require_format(in.size >= ends_at, "Huffman: code-length table truncated");
  const uint8_t* packed = in.data + table_at;
  std::vector<uint8_t> lengths(alphabet, 0);
  uint64_t kraft = 0;  // in units of 2^-max_length
  size_t used = 0;
  for (size_t i = 0; i < span; ++i) {
    const unsigned l = unpack_length(packed, i);
    require_format(l <= max_length, "Huffman: code length above the limit");
    lengths[lo + i] = static_cast<uint8_t>(l);
    if (l != 0) {
      kraft += uint64_t{1} << (max_length - l);
      ++used;
    }
  }
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
  for (size_t at = table_at + table_bytes(span); at < ends_at; ++at) {
    require_format(in.data[at] == 0, "Huffman: non-zero alignment bytes");
  }

  // Block table: checked against the stream's length before anything is sized by n.
  const uint64_t blocks = (n + S - 1) / S;
  require_format(blocks <= (in.size - ends_at) / 4, "Huffman: block table truncated");
  const size_t payload_at = ends_at + 4 * blocks;
  std::vector<uint64_t> start(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) {
    const uint64_t end = load_le<uint32_t>(in.data + ends_at + 4 * b);
    const uint64_t count = std::min<uint64_t>(S, n - b * S);
    require_format(end > start[b], "Huffman: block ends not increasing");
    require_format(count <= (end - start[b]) * 32, "Huffman: block too short for its symbols");
    start[b + 1] = end;
  }
  require_format((in.size - payload_at) % 4 == 0 && (in.size - payload_at) / 4 == start[blocks],
                 "Huffman: payload length disagrees with the block table");

  const DecodeTable table = make_decode_table(lengths);
  out.resize(2 * n);
  try {
    exec.parallel_for(blocks, [&](size_t b) {
      const size_t count = std::min<uint64_t>(S, n - b * S);
      decode_block(in.data + payload_at + 4 * start[b], start[b + 1] - start[b], count, table,
                   out.data() + 2 * b * S);
    });
  } catch (...) {
    out.clear();
    throw;
  }
}

}  // namespace fz::huffman
