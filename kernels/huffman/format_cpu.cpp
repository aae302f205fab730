// The Huffman stream layout's host routines (huffman_format.hpp): the
// encoder's config checks, canonical codes from lengths, the stream's head
// written, and a stream's header, code-length table and block table parsed
// and validated. The CPU coder and the CUDA backend both call these.
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

}  // namespace

namespace format {


void check_code_config(uint32_t alphabet, unsigned max_length) {
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
  check_code_config(config.alphabet, config.max_length);
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
  const size_t payload_at = payload_offset(table_end, blocks);
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

