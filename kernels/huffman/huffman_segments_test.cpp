// The CUDA Huffman coder's method, run on the host: the per-thread steps of
// huffman_segments.hpp (the same code the kernels run), driven the way the
// kernels drive them (threads of a block in lockstep rounds), must write the
// CPU encoder's bytes and accept exactly the streams the CPU decoder accepts,
// decoding them to the same symbols. This checks the segment method where no
// GPU is present; huffman_cuda_test.cpp checks the kernels themselves.
#include "huffman/huffman_segments.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_format.hpp"

namespace fz {
namespace {

using namespace huffman::segments;
using huffman::Config;

using testing::u16_bytes;

// The kernels' encode (measure, scan, write_blocks) with `threads` threads per block.
Bytes simulated_encode(const Bytes& in, const Config& config, unsigned threads) {
  huffman::format::check_encoder_config(config);
  const uint64_t n = in.size() / 2;
  if (n == 0) return huffman::format::write_head(0, config, {});
  std::vector<uint64_t> hist(config.alphabet, 0);
  for (uint64_t i = 0; i < n; ++i) ++hist.at(load_le<uint16_t>(in.data() + 2 * i));
  const std::vector<uint8_t> lengths = huffman::code_lengths(hist.data(), config.alphabet, config.max_length);
  uint32_t lo = 0, hi = 0;
  huffman::format::code_range(lengths, lo, hi);
  const std::vector<uint32_t> table = huffman::format::encode_table(lengths, lo, hi);
  Bytes out = huffman::format::write_head(n, config, lengths);
  const uint64_t S = config.block_symbols;
  const uint64_t blocks = (n + S - 1) / S;
  const auto symbol = [&](uint64_t i) { return load_le<uint16_t>(in.data() + 2 * i); };
  std::vector<uint64_t> ends(blocks);
  uint64_t total = 0;
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t count = std::min(S, n - b * S);
    uint64_t bits = 0;
    for (uint64_t i = 0; i < count; ++i) bits += table[symbol(b * S + i)] & 31u;
    total += (bits + 31) / 32;
    ends[b] = total;
  }
  const size_t ends_at = out.size();
  const size_t payload_at = ends_at + 4 * blocks;
  out.resize(payload_at + 4 * total, 0xA5);  // garbage: the writer must zero what it ORs into
  for (uint64_t b = 0; b < blocks; ++b) store_le<uint32_t>(out.data() + ends_at + 4 * b, static_cast<uint32_t>(ends[b]));
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint32_t count = static_cast<uint32_t>(std::min(S, n - b * S));
    const uint64_t first_word = b == 0 ? 0 : ends[b - 1];
    uint8_t* dst = out.data() + payload_at + 4 * first_word;
    for (uint64_t w = 0; w < ends[b] - first_word; ++w) store_le<uint32_t>(dst + 4 * w, 0);
    const uint32_t per = (count + threads - 1) / threads;
    uint32_t first_bit = 0;
    for (unsigned t = 0; t < threads; ++t) {
      const uint32_t run_first = std::min(t * per, count);
      const uint32_t run_count = std::min(per, count - run_first);
      const uint64_t at = b * S + run_first;
      encode_run(
          first_bit, run_count, [&](uint32_t i) { return table[symbol(at + i)]; },
          [&](uint32_t w, uint32_t value, bool whole) {
            const uint32_t old = load_le<uint32_t>(dst + 4 * w);
            if (whole) {
              EXPECT_EQ(old, 0u) << "a whole word written twice";
            }
            store_le<uint32_t>(dst + 4 * w, whole ? value : old | value);
          });
      for (uint32_t i = 0; i < run_count; ++i) first_bit += table[symbol(at + i)] & 31u;
    }
  }
  return out;
}

// Streams decoded with codes longer than kFastBits, through the second
// lookup level or (too large a level) the canonical search.
size_t g_second_level = 0, g_canonical_search = 0;

// The decoder's tables of a parsed stream, as the kernels build them.
struct DecoderTables {
  huffman::format::Canonical c;
  CanonicalCode code{};
  std::vector<uint32_t> fast, second;
  Tables t{};

  explicit DecoderTables(const huffman::format::Layout& layout)
      : c(huffman::format::make_canonical(layout.lengths.data(), layout.lo, layout.hi)) {
    code.max_used = c.max_used;
    for (unsigned l = 1; l <= c.max_used; ++l) {
      code.start[l] = uint64_t{c.first[l]} << (32 - l);
      code.limit[l] = uint64_t{c.first[l] + c.count[l]} << (32 - l);
      code.index[l] = c.index[l];
    }
    set_second_level(code);
    t = Tables{nullptr, nullptr, code.long_first, code.second_bits, code.start, code.limit, code.index,
               c.sorted.data(), code.max_used};
    fast.resize(kFastEntries);
    second.resize(code.second_entries);
    for (uint32_t p = 0; p < kFastEntries; ++p) fast[p] = fast_entry(t, p);
    for (uint32_t i = 0; i < code.second_entries; ++i) second[i] = second_entry(t, i);
    t.fast = fast.data();
    if (code.second_entries > 0) t.second = second.data();
  }
  DecoderTables(const DecoderTables&) = delete;
  DecoderTables& operator=(const DecoderTables&) = delete;
};

// The kernels' decode with `threads` threads per block: the CPU's header
// checks throw FormatError; block failures come back as the status word.
uint32_t simulated_decode(const Bytes& stream, size_t max_out, unsigned threads, Bytes& out) {
  const huffman::format::Layout layout = huffman::format::parse(stream.data(), stream.size(), stream.size(), max_out);
  out.assign(2 * layout.n, 0);
  if (layout.n == 0) return 0;
  const DecoderTables tables(layout);
  const Tables& t = tables.t;
  const CanonicalCode& code = tables.code;
  if (code.max_used > kFastBits) ++(code.second_entries > 0 ? g_second_level : g_canonical_search);

  uint32_t status = 0;
  for (uint64_t b = 0; b < layout.blocks; ++b) {
    const uint32_t words = static_cast<uint32_t>(layout.start[b + 1] - layout.start[b]);
    const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(layout.block_symbols, layout.n - b * layout.block_symbols));
    if (surely_unused_word(words, count, code.max_used)) {
      status |= kUnusedWord;
      continue;
    }
    const BlockWords src{stream.data() + layout.payload_at + 4 * layout.start[b], words};
    std::vector<SegmentBounds> bounds(threads);
    std::vector<uint32_t> from(threads);
    std::vector<Segment> seg(threads);
    for (unsigned i = 0; i < threads; ++i) {
      bounds[i] = segment_bounds(words, i, threads);
      from[i] = bounds[i].first_bit;
      seg[i] = count_segment(src, from[i], bounds[i].end_bit, t);
    }
    for (unsigned round = 0;; ++round) {
      EXPECT_LE(round, threads) << "rounds must end";
      std::vector<uint32_t> exits(threads);
      for (unsigned i = 0; i < threads; ++i) exits[i] = seg[i].exit;
      bool any = false;
      for (unsigned i = 0; i < threads; ++i) {
        const uint32_t true_start = i == 0 ? 0u : exits[i - 1];
        if (true_start != from[i]) {
          from[i] = true_start;
          seg[i] = count_segment(src, from[i], bounds[i].end_bit, t);
          any = true;
        }
      }
      if (!any) break;
    }
    bool invalid = false;
    for (unsigned i = 0; i < threads; ++i) invalid |= seg[i].exit == kInvalid;
    if (invalid) {
      status |= kInvalidCode;
      continue;
    }
    uint32_t codes = 0;
    std::vector<uint32_t> first_code(threads);
    for (unsigned i = 0; i < threads; ++i) {
      first_code[i] = codes;
      codes += seg[i].codes;
    }
    if (codes < count) {
      status |= kRunsPast;
      continue;
    }
    uint32_t last_end = 0;
    int writers = 0;
    uint8_t* dst = out.data() + 2 * b * layout.block_symbols;
    for (unsigned i = 0; i < threads; ++i) {
      decode_segment(src, from[i], bounds[i].end_bit, t, [&](uint32_t k, uint32_t symbol, uint32_t end_bit) {
        const uint32_t at = first_code[i] + k;
        if (at < count) store_le<uint16_t>(dst + 2 * size_t{at}, static_cast<uint16_t>(symbol));
        if (at == count - 1) {
          last_end = end_bit;
          ++writers;
        }
      });
    }
    EXPECT_EQ(writers, 1);
    status |= block_end_status(words, codes, count, last_end, src(words - 1));
  }
  return status;
}

// Whether the CPU decoder accepts the stream (and then its symbols).
bool cpu_accepts(const Bytes& stream, size_t max_out, Bytes& out) {
  try {
    huffman::decode(stream, out, max_out);
    return true;
  } catch (const FormatError&) {
    return false;
  }
}

// Simulated decode: FormatError from the header checks, or status != 0, is a refusal.
bool simulation_accepts(const Bytes& stream, size_t max_out, unsigned threads, Bytes& out) {
  try {
    return simulated_decode(stream, max_out, threads, out) == 0;
  } catch (const FormatError&) {
    return false;
  }
}

void expect_same_coder(const std::vector<uint16_t>& symbols, const Config& config, const std::string& what) {
  const Bytes in = u16_bytes(symbols);
  Bytes cpu;
  huffman::encode(in, config, cpu);
  for (unsigned threads : {1u, 7u, 32u, 256u}) {
    SCOPED_TRACE(what + ", " + std::to_string(threads) + " threads");
    EXPECT_EQ(simulated_encode(in, config, threads), cpu);
    Bytes decoded;
    ASSERT_EQ(simulated_decode(cpu, in.size(), threads, decoded), 0u);
    EXPECT_EQ(decoded, in);
  }
}

std::vector<uint16_t> geometric(size_t n, double p, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<uint32_t> g(p);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = static_cast<uint16_t>(std::min<uint32_t>(g(rng), alphabet - 1));
  return s;
}

TEST(HuffmanSegments, SameBytesAndSymbolsAsTheCpu) {
  const Config cusz{1024, 16, 16384};
  expect_same_coder({}, cusz, "empty");
  expect_same_coder({5}, cusz, "one symbol");
  expect_same_coder(std::vector<uint16_t>(40000, 512), cusz, "single symbol");
  std::vector<uint16_t> two(40000);
  for (size_t i = 0; i < two.size(); ++i) two[i] = (i * 7919) % 3 == 0 ? 1 : 1000;
  expect_same_coder(two, cusz, "two symbols");
  std::mt19937_64 rng(3);
  std::vector<uint16_t> uniform(50000);
  for (auto& x : uniform) x = static_cast<uint16_t>(rng() % 1024);
  expect_same_coder(uniform, cusz, "uniform");
  for (size_t n : {size_t{16383}, size_t{16384}, size_t{16385}, size_t{3 * 16384 + 5}}) {
    expect_same_coder(geometric(n, 0.3, 1024, n), cusz, "geometric n=" + std::to_string(n));
  }
  // Fibonacci-like counts force codes to the length limit.
  std::vector<uint16_t> steep;
  uint64_t a = 1, b = 1;
  for (uint16_t s = 0; s < 30; ++s) {
    for (uint64_t k = 0; k < a; ++k) steep.push_back(s);
    const uint64_t next = a + b;
    a = b;
    b = std::min<uint64_t>(next, 20000);
  }
  expect_same_coder(steep, Config{1024, 16, 16384}, "at the limit");
  expect_same_coder(steep, Config{32, 5, 100}, "limit 5, small blocks");
  expect_same_coder(geometric(30000, 0.001, 65536, 9), Config{65536, 24, 1000}, "alphabet 65536, long codes");
  expect_same_coder(geometric(3000, 0.5, 2, 4), Config{2, 1, 1}, "blocks of one symbol");
  std::vector<uint16_t> flat(70000);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<uint16_t>((i * 40503) % 65536);
  expect_same_coder(flat, Config{65536, 16, 16384}, "all codes 16 bits: no second level");
  expect_same_coder(geometric(200000, 0.02, 1024, 10), cusz, "a few codes past 12 bits");
  EXPECT_GT(g_second_level, 0u);
  EXPECT_GT(g_canonical_search, 0u);
}

// count_segment (a lookup passes every whole code of the 12-bit prefix) gives
// decode_segment's exit and count from any start to any end, on valid
// streams, on streams with flipped bits (invalid codes, the canonical search)
// and on codes past 12 bits (the second level), whatever the block.
TEST(HuffmanSegments, CountingIsDecoding) {
  struct Case {
    std::vector<uint16_t> symbols;
    Config config;
  };
  std::vector<uint16_t> steep(60000);
  for (size_t i = 0; i < steep.size(); ++i) steep[i] = static_cast<uint16_t>(512 + (i % 7 == 0) * (i % 300));
  const std::vector<Case> cases = {
      {geometric(60000, 0.6, 1024, 21), Config{1024, 16, 16384}},  // 1-2 bit codes: long runs per lookup
      {geometric(60000, 0.2, 1024, 22), Config{1024, 16, 16384}},
      {geometric(60000, 0.02, 1024, 23), Config{1024, 16, 16384}},  // codes past 12 bits
      {geometric(60000, 0.001, 8192, 24), Config{8192, 16, 4096}},
      {steep, Config{1024, 16, 16384}},
      {std::vector<uint16_t>(5000, 9), Config{16, 4, 1000}},        // one code, of length 1
  };
  std::mt19937_64 rng(5);
  size_t compared = 0, runs_passed = 0;
  for (const Case& c : cases) {
    Bytes stream;
    huffman::encode(u16_bytes(c.symbols), c.config, stream);
    for (int variant = 0; variant < 3; ++variant) {
      Bytes bits = stream;
      const huffman::format::Layout layout = huffman::format::parse(bits.data(), bits.size(), bits.size(), 1u << 30);
      if (variant > 0) {  // flipped payload bits: invalid codes, shifted boundaries
        const size_t payload_bits = 8 * (bits.size() - layout.payload_at);
        for (int f = 0; f < 40 * variant; ++f) {
          const size_t bit = rng() % payload_bits;
          bits[layout.payload_at + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        }
      }
      const DecoderTables tables(layout);
      for (uint64_t b = 0; b < layout.blocks; ++b) {
        const uint32_t words = static_cast<uint32_t>(layout.start[b + 1] - layout.start[b]);
        const BlockWords src{bits.data() + layout.payload_at + 4 * layout.start[b], words};
        for (int k = 0; k < 60; ++k) {
          const uint32_t a = static_cast<uint32_t>(rng() % (32 * words + 1));
          const uint32_t e = a + static_cast<uint32_t>(rng() % (k < 30 ? 64 : 32 * words + 1));
          const Segment decoded = decode_segment(src, a, e, tables.t, [](uint32_t, uint32_t, uint32_t) {});
          const Segment counted = count_segment(src, a, e, tables.t);
          ASSERT_EQ(counted.exit, decoded.exit) << "block " << b << " [" << a << ", " << e << ")";
          ASSERT_EQ(counted.codes, decoded.codes) << "block " << b << " [" << a << ", " << e << ")";
          ++compared;
          runs_passed += decoded.codes;
        }
      }
    }
  }
  EXPECT_GT(compared, 5000u);
  EXPECT_GT(runs_passed, 100000u);
}

TEST(HuffmanSegments, RealFieldCodes) {
  // Lorenzo-like codes of a real field: deltas of a smooth signal, folded to 1024.
  const Bytes field = testing::read_field("wmag91.float");
  std::vector<uint16_t> codes(field.size() / 4);
  float prev = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    float x;
    std::memcpy(&x, field.data() + 4 * i, 4);
    const long q = std::lround((x - prev) / 0.05f);
    codes[i] = static_cast<uint16_t>(std::clamp<long>(q + 512, 0, 1023));
    prev = x;
  }
  codes.resize(200000);
  const Config cusz{1024, 16, 16384};
  const Bytes in = u16_bytes(codes);
  Bytes cpu;
  huffman::encode(in, cusz, cpu);
  EXPECT_EQ(simulated_encode(in, cusz, 256), cpu);
  Bytes decoded;
  ASSERT_EQ(simulated_decode(cpu, in.size(), 256, decoded), 0u);
  EXPECT_EQ(decoded, in);
}

// Hostile streams: every bit flip of small streams, random flips and
// truncations of larger ones. The simulation refuses exactly what the CPU refuses.
TEST(HuffmanSegments, RefusesExactlyWhatTheCpuRefuses) {
  struct Case {
    std::vector<uint16_t> symbols;
    Config config;
  };
  std::vector<Case> cases;
  cases.push_back({geometric(300, 0.4, 16, 1), Config{16, 6, 64}});
  cases.push_back({geometric(200, 0.9, 4, 2), Config{4, 3, 37}});
  cases.push_back({std::vector<uint16_t>(100, 3), Config{8, 3, 33}});  // a single code
  cases.push_back({geometric(5000, 0.05, 1024, 3), Config{1024, 16, 1000}});
  // Codes past 12 bits: through the second lookup level, and (20000 symbols
  // of 14-15 bits, too many for that level) through the canonical search.
  cases.push_back({geometric(30000, 0.01, 1024, 4), Config{1024, 16, 4000}});
  std::vector<uint16_t> wide(30000);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<uint16_t>((i * 7) % 20000);
  cases.push_back({wide, Config{65536, 16, 5000}});
  const size_t second_before = g_second_level, search_before = g_canonical_search;
  std::mt19937_64 rng(11);
  size_t refused = 0, accepted = 0;
  for (const Case& c : cases) {
    Bytes stream;
    const Bytes in = u16_bytes(c.symbols);
    huffman::encode(in, c.config, stream);
    const auto check = [&](const Bytes& hostile, const std::string& what) {
      Bytes cpu_out, sim_out;
      const bool cpu = cpu_accepts(hostile, in.size(), cpu_out);
      for (unsigned threads : {1u, 5u, 64u}) {
        const bool sim = simulation_accepts(hostile, in.size(), threads, sim_out);
        ASSERT_EQ(sim, cpu) << what << ", " << threads << " threads";
        if (cpu) {
          ASSERT_EQ(sim_out, cpu_out) << what;
        }
      }
      (cpu ? accepted : refused)++;
    };
    const size_t bits = 8 * stream.size();
    const size_t flips = stream.size() < 400 ? bits : 3000;
    for (size_t f = 0; f < flips; ++f) {
      Bytes hostile = stream;
      const size_t bit = stream.size() < 400 ? f : rng() % bits;
      hostile[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      check(hostile, "flip of bit " + std::to_string(bit));
    }
    for (int k = 0; k < 300; ++k) {
      Bytes hostile = stream;
      for (int j = 0; j < 3; ++j) {
        const size_t bit = rng() % bits;
        hostile[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      }
      check(hostile, "three flips");
    }
    for (size_t cut = 0; cut < stream.size(); cut += std::max<size_t>(1, stream.size() / 300)) {
      check(Bytes(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(cut)), "cut at " + std::to_string(cut));
    }
    Bytes longer = stream;
    longer.insert(longer.end(), 4, 0);
    check(longer, "a word appended");
  }
  EXPECT_GT(g_second_level, second_before);
  EXPECT_GT(g_canonical_search, search_before);
  EXPECT_GT(refused, 1000u);
  EXPECT_GT(accepted, 10u);  // flips that still decode (to other symbols) exist
}

// A block with more words than its codes need (an unused word the count
// alone proves), and one whose end table claims far too many words.
TEST(HuffmanSegments, OversizedBlocks) {
  const Config config{16, 6, 64};
  const std::vector<uint16_t> symbols = geometric(256, 0.4, 16, 5);
  Bytes stream;
  huffman::encode(u16_bytes(symbols), config, stream);
  const huffman::format::Layout layout = huffman::format::parse(stream.data(), stream.size(), stream.size(), 1 << 20);
  // Grow block 0 by 40 zero words: ends shift, payload grows.
  Bytes hostile(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(layout.payload_at));
  for (uint64_t b = 0; b < layout.blocks; ++b)
    store_le<uint32_t>(hostile.data() + layout.ends_at + 4 * b, static_cast<uint32_t>(layout.start[b + 1] + 40));
  const size_t block0 = layout.payload_at + 4 * layout.start[1];
  hostile.insert(hostile.end(), stream.begin() + static_cast<std::ptrdiff_t>(layout.payload_at),
                 stream.begin() + static_cast<std::ptrdiff_t>(block0));
  hostile.insert(hostile.end(), 160, 0);
  hostile.insert(hostile.end(), stream.begin() + static_cast<std::ptrdiff_t>(block0), stream.end());
  Bytes cpu_out, sim_out;
  EXPECT_FALSE(cpu_accepts(hostile, 512, cpu_out));
  EXPECT_EQ(simulated_decode(hostile, 512, 64, sim_out), static_cast<uint32_t>(kUnusedWord));
}

// prefix_bytes gives parse() enough: the same verdict from the prefix alone.
TEST(HuffmanSegments, PrefixHoldsWhatTheHeaderChecksRead) {
  std::mt19937_64 rng(17);
  const Config config{1024, 16, 100};
  Bytes stream;
  huffman::encode(u16_bytes(geometric(2000, 0.2, 1024, 8)), config, stream);
  for (int k = 0; k < 3000; ++k) {
    Bytes hostile = stream;
    if (k % 3 == 0) hostile.resize(rng() % (stream.size() + 1));
    const size_t limit = std::min<size_t>(hostile.size(), 300);
    if (limit > 0) hostile[rng() % limit] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const size_t probe = std::min(hostile.size(), huffman::format::kTableAt);
    const size_t need = huffman::format::prefix_bytes(hostile.data(), probe, hostile.size());
    ASSERT_LE(need, hostile.size());
    ASSERT_GE(need, probe);
    // Only the prefix is real: the rest is garbage parse() must not read.
    Bytes prefix(hostile.begin(), hostile.begin() + static_cast<std::ptrdiff_t>(need));
    std::string full_error = "accepted", prefix_error = "accepted";
    try {
      huffman::format::parse(hostile.data(), hostile.size(), hostile.size(), 1 << 20);
    } catch (const FormatError& e) {
      full_error = e.what();
    }
    try {
      prefix.resize(hostile.size(), 0xEE);
      huffman::format::parse(prefix.data(), need, hostile.size(), 1 << 20);
    } catch (const FormatError& e) {
      prefix_error = e.what();
    }
    ASSERT_EQ(prefix_error, full_error) << "case " << k;
  }
}

}  // namespace
}  // namespace fz
