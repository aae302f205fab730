// Huffman encoding on the CPU (format and methods: huffman/huffman.hpp).
// Two passes over the symbols, each parallel over independent work items with
// integer results, so the bytes cannot depend on the thread count: a histogram
// (per slab, summed), then the codes, each worker writing its run of blocks
// into words of its own (counting each block's words as it goes); the runs are
// then copied after one another behind the block table.
#include <algorithm>
#include <array>
#include <cstring>
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

// Writes codes MSB-first into 32-bit little-endian words. `acc` keeps the
// pending bits in its low `pending` bits (< 32 between steps, so a step of
// up to 32 bits never overflows 64); higher bits of acc are stale, already
// written. A step is one code, or two joined when codes are at most 16 bits
// long (half the steps in the chain of shifts through acc).
class BitWriter {
 public:
  // The codes of `count` symbols; returns the words completed into dst (at
  // most one per symbol).
  template <bool kPairs>
  size_t put(const uint8_t* symbols, size_t count, const uint32_t* table, uint8_t* dst) {
    uint8_t* const begin = dst;
    size_t i = 0;
    if (kPairs) {
      for (; i + 2 <= count; i += 2) {
        const uint32_t first = table[load_le<uint16_t>(symbols + 2 * i)];
        const uint32_t second = table[load_le<uint16_t>(symbols + 2 * i + 2)];
        const unsigned second_length = second & 31u;
        step((uint64_t{first >> 5} << second_length) | (second >> 5), (first & 31u) + second_length, dst);
      }
    }
    for (; i < count; ++i) {
      const uint32_t e = table[load_le<uint16_t>(symbols + 2 * i)];
      step(e >> 5, e & 31u, dst);
    }
    return static_cast<size_t>(dst - begin) / 4;
  }

  // The last, partial word of a block (0 or 1 words, its unused bits 0).
  size_t finish(uint8_t* dst) {
    if (pending == 0) return 0;
    store_le<uint32_t>(dst, static_cast<uint32_t>(acc << (32 - pending)));
    return 1;
  }

 private:
  void step(uint64_t code, unsigned length, uint8_t*& dst) {
    acc = (acc << length) | code;
    pending += length;
    if (pending >= 32) {
      pending -= 32;
      store_le<uint32_t>(dst, static_cast<uint32_t>(acc >> pending));
      dst += 4;
    }
  }

  uint64_t acc = 0;
  unsigned pending = 0;
};

// Blocks [first, last) into `words` (appended), words_of[b] set for each.
void encode_blocks(const uint8_t* symbols, size_t n, size_t block_symbols, size_t first, size_t last,
                   const uint32_t* table, bool pairs, Bytes& words, uint64_t* words_of) {
  constexpr size_t kPiece = 4096;  // symbols per step into the scratch: at most as many words
  uint8_t scratch[4 * kPiece];
  for (size_t b = first; b < last; ++b) {
    const size_t before = words.size();
    const size_t begin = b * block_symbols, end = std::min(n, begin + block_symbols);
    BitWriter writer;
    for (size_t i = begin; i < end; i += kPiece) {
      const size_t count = std::min(kPiece, end - i);
      const size_t put = pairs ? writer.put<true>(symbols + 2 * i, count, table, scratch)
                               : writer.put<false>(symbols + 2 * i, count, table, scratch);
      words.insert(words.end(), scratch, scratch + 4 * put);
    }
    words.insert(words.end(), scratch, scratch + 4 * writer.finish(scratch));
    words_of[b] = (words.size() - before) / 4;
  }
}

}  // namespace

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
  // Runs of consecutive blocks, one per worker; the words of all of them are
  // about the histogram's coded bits (plus a partial word per block).
  const size_t runs = std::min<size_t>(std::max(1u, exec.concurrency()), blocks);
  uint64_t coded_bits = 0;
  for (uint32_t s = lo; s <= hi; ++s) coded_bits += hist[s] * lengths[s];
  const size_t run_bytes = static_cast<size_t>((coded_bits / 32 + blocks) / runs * 4 + 64);
  const bool pairs = config.max_length <= 16;
  std::vector<Bytes> run_words(runs);
  std::vector<uint64_t> words(blocks);
  exec.parallel_for(runs, [&](size_t r) {
    run_words[r].reserve(run_bytes);
    encode_blocks(in.data, n, S, blocks * r / runs, blocks * (r + 1) / runs, table.data(), pairs, run_words[r],
                  words.data());
  });
  std::vector<uint64_t> start(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) start[b + 1] = start[b] + words[b];
  if (start[blocks] > UINT32_MAX) throw UsageError("Huffman input too large: over 2^32 coded words");

  const Bytes head = format::write_head(n, config, lengths);
  out.assign(head.begin(), head.end());  // keeps out's capacity
  const size_t ends_at = out.size();
  const size_t payload_at = format::payload_offset(ends_at, blocks);
  out.resize(payload_at + 4 * start[blocks], 0);
  for (size_t b = 0; b < blocks; ++b) {
    store_le<uint32_t>(out.data() + ends_at + 4 * b, static_cast<uint32_t>(start[b + 1]));
  }
  exec.parallel_for(runs, [&](size_t r) {
    if (!run_words[r].empty())
      std::memcpy(out.data() + payload_at + 4 * start[blocks * r / runs], run_words[r].data(), run_words[r].size());
  });
}

}  // namespace fz::huffman
