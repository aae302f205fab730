// Huffman: round trips over skewed, uniform and real (Lorenzo-like) symbols,
// the code-length routine (limit, Kraft, optimality), the stream format pinned
// by a hand-computed example, thread independence, and a decoder that survives
// hostile bytes.
#include "huffman/huffman.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz {
namespace {

using huffman::Config;

constexpr size_t kMiB = size_t{1} << 20;

using testing::u16_bytes;

Bytes encode(const std::vector<uint16_t>& symbols, const Config& config,
             const Executor& exec = serial_executor()) {
  Bytes out;
  huffman::encode(u16_bytes(symbols), config, out, exec);
  return out;
}

Bytes decode(const Bytes& stream, size_t max_out = 64 * kMiB, const Executor& exec = serial_executor()) {
  Bytes out;
  huffman::decode(stream, out, max_out, exec);
  return out;
}

void expect_round_trip(const std::vector<uint16_t>& symbols, const Config& config) {
  const Bytes coded = encode(symbols, config);
  ASSERT_EQ(load_le<uint64_t>(coded.data()), symbols.size());
  ASSERT_EQ(decode(coded, 2 * symbols.size()), u16_bytes(symbols));
}

std::vector<uint64_t> histogram_of(const std::vector<uint16_t>& symbols, uint32_t alphabet) {
  std::vector<uint64_t> h(alphabet, 0);
  for (uint16_t s : symbols) ++h[s];
  return h;
}

double entropy_bits(const std::vector<uint64_t>& h) {
  double total = 0;
  for (uint64_t c : h) total += static_cast<double>(c);
  double bits = 0;
  for (uint64_t c : h) {
    if (c != 0) bits -= static_cast<double>(c) * std::log2(static_cast<double>(c) / total);
  }
  return bits;
}

// Total coded bits of a histogram under unrestricted Huffman (a reference
// built independently: a heap of weights; the cost is the sum of merges).
uint64_t huffman_cost(const std::vector<uint64_t>& h) {
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> heap;
  for (uint64_t c : h) {
    if (c != 0) heap.push(c);
  }
  if (heap.size() == 1) return heap.top();  // one symbol: 1 bit each
  uint64_t cost = 0;
  while (heap.size() > 1) {
    const uint64_t a = heap.top();
    heap.pop();
    const uint64_t b = heap.top();
    heap.pop();
    cost += a + b;
    heap.push(a + b);
  }
  return cost;
}

uint64_t cost_of(const std::vector<uint64_t>& h, const std::vector<uint8_t>& lengths) {
  uint64_t cost = 0;
  for (size_t s = 0; s < h.size(); ++s) cost += h[s] * lengths[s];
  return cost;
}

// Lengths within [1, limit] for used symbols, 0 for unused, Kraft sum exactly 1
// (or the single 1-bit code).
void expect_valid_lengths(const std::vector<uint64_t>& h, const std::vector<uint8_t>& lengths, unsigned limit) {
  ASSERT_EQ(lengths.size(), h.size());
  double kraft = 0;
  size_t used = 0;
  for (size_t s = 0; s < h.size(); ++s) {
    if (h[s] == 0) {
      ASSERT_EQ(lengths[s], 0) << "symbol " << s;
      continue;
    }
    ASSERT_GE(lengths[s], 1) << "symbol " << s;
    ASSERT_LE(lengths[s], limit) << "symbol " << s;
    kraft += std::ldexp(1.0, -lengths[s]);
    ++used;
  }
  if (used == 1) {
    EXPECT_EQ(kraft, 0.5);
  } else if (used > 1) {
    EXPECT_EQ(kraft, 1.0);
  }
}

std::vector<uint16_t> geometric(size_t n, double p, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> dist(p);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = static_cast<uint16_t>(std::min<int>(dist(rng), static_cast<int>(alphabet) - 1));
  return s;
}

std::vector<uint16_t> mostly_one(size_t n, uint16_t common, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = (rng() % 100 == 0) ? static_cast<uint16_t>(rng() % alphabet) : common;
  return s;
}

std::vector<uint16_t> uniform(size_t n, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = static_cast<uint16_t>(rng() % alphabet);
  return s;
}

// What the cusz preset feeds Huffman: 1-D Lorenzo codes of a real float32
// field at a bound of 1e-4 x its value range, centred on 512 and clamped into
// [1, 1023] (code 0 is the outlier marker there).
std::vector<uint16_t> lorenzo_codes(const std::string& field) {
  const Bytes raw = testing::read_field(field);
  const size_t n = raw.size() / 4;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = load_le<float>(raw.data() + 4 * i);
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double eb = 1e-4 * (static_cast<double>(*hi) - static_cast<double>(*lo));
  std::vector<uint16_t> codes(n);
  double previous = 0;
  for (size_t i = 0; i < n; ++i) {
    const double q = std::round((static_cast<double>(x[i]) - previous) / (2 * eb));
    codes[i] = static_cast<uint16_t>(std::clamp(q + 512, 1.0, 1023.0));
    previous = x[i];
  }
  return codes;
}

// ---- the stream format ----

TEST(Huffman, HandComputedExampleGivesKnownBytes) {
  // A=8, L=3, S=4; symbols 3 3 4 3 | 5 3 4 6 | 3. Counts 3:5 4:2 5:1 6:1 give
  // lengths 1, 2, 3, 3 and canonical codes 3="0" 4="10" 5="110" 6="111".
  // Block 0: 0 0 10 0 = 00100 -> 0x20000000; block 1: 110 0 10 111 -> 0xCB800000;
  // block 2: 0 -> 0x00000000. Lengths 1,2,3,3 at 5 bits LSB-first: 0x18C41.
  const std::vector<uint16_t> symbols = {3, 3, 4, 3, 5, 3, 4, 6, 3};
  const Bytes expected = {
      9, 0, 0, 0, 0, 0, 0, 0,  // n = 9
      8, 0, 0, 0,              // A = 8
      4, 0, 0, 0,              // S = 4
      3,                       // L = 3
      3, 0, 6, 0,              // lo = 3, hi = 6
      0x41, 0x8C, 0x01,        // lengths of 3..6, ends at byte 24: no alignment bytes
      1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0,              // end[0..2] in words
      0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x80, 0xCB,  // block 0, block 1
      0x00, 0x00, 0x00, 0x00};                         // block 2
  const Bytes coded = encode(symbols, {8, 3, 4});
  EXPECT_EQ(coded, expected);
  EXPECT_EQ(decode(expected), u16_bytes(symbols));
}

TEST(Huffman, LengthTableIsAlignedToFourBytes) {
  // Used symbols 0..1: two 5-bit lengths = 2 bytes at 21..22, then one zero byte.
  const Bytes coded = encode({0, 1, 1}, {4, 2, 16});
  const Bytes expected = {3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 16, 0, 0, 0, 2,
                          0, 0, 1, 0,          // lo = 0, hi = 1
                          0x21, 0x00, 0x00,    // lengths 1, 1; one alignment byte
                          1, 0, 0, 0,          // end[0] = 1
                          0x00, 0x00, 0x00, 0x60};  // 0 1 1 -> 011 -> 0x60000000
  EXPECT_EQ(coded, expected);
  EXPECT_EQ(decode(coded), u16_bytes({0, 1, 1}));
}

TEST(Huffman, EmptyInputIsJustTheHeader) {
  const Bytes coded = encode({}, {1024, 16, 4096});
  EXPECT_EQ(coded, (Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 16, 0, 0, 16}));
  EXPECT_TRUE(decode(coded).empty());
  Bytes extra = coded;
  extra.push_back(0);
  EXPECT_THROW(decode(extra), FormatError);
}

TEST(Huffman, SingleSymbolGetsAOneBitCode) {
  const std::vector<uint16_t> symbols(100, 700);
  const Bytes coded = encode(symbols, {1024, 16, 64});
  // Header 17, lo = hi = 700, one length byte (1), 2 alignment bytes, 2 ends, words 2 + 2.
  ASSERT_EQ(coded.size(), 17u + 4 + 3 + 8 + 16);
  EXPECT_EQ(coded[21], 1);
  EXPECT_EQ(load_le<uint32_t>(coded.data() + 24), 2u);
  EXPECT_EQ(load_le<uint32_t>(coded.data() + 28), 4u);
  for (size_t i = 32; i < coded.size(); ++i) EXPECT_EQ(coded[i], 0);
  EXPECT_EQ(decode(coded), u16_bytes(symbols));
  // The other 1-bit pattern is not a code.
  Bytes bad = coded;
  bad[35] = 0x80;
  EXPECT_THROW(decode(bad), FormatError);
}

TEST(Huffman, TwoSymbols) {
  for (const Config& config : {Config{2, 1, 7}, Config{65536, 16, 16384}}) {
    std::vector<uint16_t> symbols;
    for (int i = 0; i < 1000; ++i) symbols.push_back(static_cast<uint16_t>(i % 3 == 0 ? config.alphabet - 1 : 0));
    const Bytes coded = encode(symbols, config);
    expect_round_trip(symbols, config);
    // One bit per symbol.
    size_t blocks = (1000 + config.block_symbols - 1) / config.block_symbols;
    size_t words = 0;
    for (size_t b = 0; b < blocks; ++b) words += (std::min<size_t>(config.block_symbols, 1000 - b * config.block_symbols) + 31) / 32;
    EXPECT_EQ(load_le<uint32_t>(coded.data() + coded.size() - 4 * words - 4), words);
  }
}

// ---- round trips ----

TEST(Huffman, RoundTripsSkewedAndUniformSymbols) {
  for (uint32_t alphabet : {256u, 1024u, 65536u}) {
    const unsigned limit = alphabet == 65536 ? 16 : 12;
    const Config config{alphabet, limit, 4096};
    SCOPED_TRACE("A=" + std::to_string(alphabet));
    expect_round_trip(geometric(100000, 0.3, alphabet, 1), config);
    expect_round_trip(geometric(100000, 0.02, alphabet, 2), config);
    expect_round_trip(mostly_one(100000, static_cast<uint16_t>(alphabet / 2), alphabet, 3), config);
    expect_round_trip(uniform(300000, alphabet, 4), config);
  }
}

TEST(Huffman, RoundTripsAroundBlockBoundaries) {
  for (uint32_t block : {1u, 7u, 4096u, 16384u}) {
    const Config config{1024, 16, block};
    const size_t s = block;
    for (size_t n : {size_t{1}, size_t{2}, s - 1, s, s + 1, 2 * s - 1, 2 * s, 3 * s + 5}) {
      SCOPED_TRACE("S=" + std::to_string(block) + " n=" + std::to_string(n));
      expect_round_trip(geometric(n, 0.4, 1024, n), config);
      expect_round_trip(uniform(n, 1024, n + 1), config);
    }
  }
}

// The decoder runs several blocks side by side (up to 6 at the time of
// writing) until one nears its end; these cover block counts around that
// group size, blocks of very different densities in one group (so lanes end
// at different times), a short last block, and long codes in the middle of
// short ones (the table's slow path inside the multi-symbol path).
TEST(Huffman, RoundTripsGroupsOfBlocksOfUnequalDensity) {
  const size_t S = 2048;
  for (size_t blocks : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}, size_t{11}, size_t{13}}) {
    for (size_t last : {S, S / 2 + 3, size_t{1}}) {
      std::vector<uint16_t> symbols;
      for (size_t b = 0; b < blocks; ++b) {
        const size_t count = b + 1 == blocks ? last : S;
        // Alternating: nearly constant, skewed, uniform over a large alphabet.
        const std::vector<uint16_t> part = b % 3 == 0   ? mostly_one(count, 7, 4096, b)
                                           : b % 3 == 1 ? geometric(count, 0.5, 4096, b)
                                                        : uniform(count, 4096, b);
        symbols.insert(symbols.end(), part.begin(), part.end());
      }
      SCOPED_TRACE("blocks=" + std::to_string(blocks) + " last=" + std::to_string(last));
      expect_round_trip(symbols, {4096, 24, static_cast<uint32_t>(S)});
      expect_round_trip(symbols, {65536, 16, static_cast<uint32_t>(S)});
    }
  }
}

TEST(Huffman, LongCodesAmongOneBitCodesRoundTrip) {
  // Symbol 0 in ~97% of places (a 1-bit code), the rest spread so that codes
  // run up to the 24-bit limit; many blocks so the side-by-side path runs.
  std::mt19937_64 rng(61);
  std::vector<uint16_t> symbols(200000);
  for (auto& x : symbols) x = rng() % 32 == 0 ? static_cast<uint16_t>(1 + rng() % 65535) : 0;
  for (unsigned limit : {16u, 20u, 24u}) {
    const Config config{65536, limit, 1000};
    expect_round_trip(symbols, config);
    const Bytes coded = encode(symbols, config);
    const testing::ThreadExecutor threads(3);
    EXPECT_EQ(decode(coded, 64 * kMiB, threads), u16_bytes(symbols));
  }
}

TEST(Huffman, SingleSymbolStreamsOfManyBlocksRoundTrip) {
  for (size_t n : {size_t{1}, size_t{100}, size_t{5 * 64 + 1}, size_t{6 * 64}, size_t{13 * 64 + 63}, size_t{100000}}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    expect_round_trip(std::vector<uint16_t>(n, 3), {4, 2, 64});
    expect_round_trip(std::vector<uint16_t>(n, 3), {4, 2, 4096});
  }
}

// With several bad blocks, the error reported is the first one's, as a
// decoder going block by block would report it, whatever the threads.
TEST(Huffman, TheFirstBadBlockNamesTheError) {
  // One symbol, code "0": a block of S symbols is ceil(S / 32) zero words and
  // any 1 bit is an invalid code, or a padding error in the last word's
  // spare bits. 13 blocks; bits are set in (block, word) pairs.
  const auto stream = [](uint32_t S, std::initializer_list<std::pair<size_t, size_t>> bits) {
    Bytes b = encode(std::vector<uint16_t>(13 * size_t{S}, 1), {2, 1, S});
    const size_t words = (S + 31) / 32;
    const size_t payload_at = b.size() - 13 * words * 4;
    for (const auto& [block, word] : bits) b[payload_at + 4 * (words * block + word)] |= 1;
    return b;
  };
  const auto error_of = [](const Bytes& s, const Executor& exec) -> std::string {
    try {
      decode(s, 64 * kMiB, exec);
    } catch (const FormatError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string invalid = "Huffman: invalid code in the bitstream";
  const std::string padding = "Huffman: non-zero padding bits";
  const Executor& serial = serial_executor();
  EXPECT_EQ(error_of(stream(4096, {}), serial), "accepted");
  EXPECT_EQ(error_of(stream(4096, {{9, 5}}), serial), invalid);
  EXPECT_EQ(error_of(stream(4096, {{12, 127}}), serial), invalid);
  // S = 4095: the last bit of each block's 128th word is padding.
  EXPECT_EQ(error_of(stream(4095, {{1, 127}, {4, 3}}), serial), padding);
  EXPECT_EQ(error_of(stream(4095, {{1, 3}, {4, 127}}), serial), invalid);
  EXPECT_EQ(error_of(stream(4095, {{0, 0}, {5, 127}}), serial), invalid);
  EXPECT_EQ(error_of(stream(4095, {{5, 127}, {6, 0}}), serial), padding);
  EXPECT_EQ(error_of(stream(4095, {{5, 127}, {11, 0}}), serial), padding);
  // With threads, which of two bad blocks is reported depends on timing (the
  // executor rethrows the first exception), as it did before; one bad block
  // gives its own error.
  const testing::ThreadExecutor threads(4);
  EXPECT_EQ(error_of(stream(4095, {{7, 127}}), threads), padding);
  EXPECT_EQ(error_of(stream(4095, {{12, 2}}), threads), invalid);
}

TEST(Huffman, EveryLengthLimitRoundTrips) {
  // Symbols with Fibonacci-like counts want very long codes; every limit that
  // can hold the alphabet must still give a valid code and a round trip.
  std::vector<uint16_t> symbols;
  uint64_t a = 1, b = 1;
  for (uint16_t s = 0; s < 30; ++s) {
    for (uint64_t k = 0; k < a; ++k) symbols.push_back(s);
    const uint64_t c = a + b;
    a = b;
    b = std::min<uint64_t>(c, 20000);
  }
  std::shuffle(symbols.begin(), symbols.end(), std::mt19937_64(5));
  const auto h = histogram_of(symbols, 32);
  for (unsigned limit = 5; limit <= huffman::kMaxLengthLimit; ++limit) {
    SCOPED_TRACE("L=" + std::to_string(limit));
    expect_valid_lengths(h, huffman::code_lengths(h.data(), 32, limit), limit);
    expect_round_trip(symbols, {32, limit, 1000});
  }
}

TEST(Huffman, RealFieldLorenzoCodesRoundTripNearEntropy) {
  for (const char* field : {"wmag91.float", "999x999.float", "vorticity.128_128_41", "vorticity.512_512"}) {
    SCOPED_TRACE(field);
    const std::vector<uint16_t> codes = lorenzo_codes(field);
    const Config config{1024, 16, 16384};
    const Bytes coded = encode(codes, config);
    ASSERT_EQ(decode(coded, 2 * codes.size()), u16_bytes(codes));
    const auto h = histogram_of(codes, 1024);
    const double entropy = entropy_bits(h) / static_cast<double>(codes.size());
    const double bits = 8.0 * static_cast<double>(coded.size()) / static_cast<double>(codes.size());
    const uint64_t optimal = huffman_cost(h);
    const auto lengths = huffman::code_lengths(h.data(), 1024, 16);
    std::printf("  %-22s n=%zu entropy %.4f bits/sym, coded %.4f bits/sym (+%.2f%%), ratio vs u16 %.2f\n", field,
                codes.size(), entropy, bits, 100.0 * (bits / entropy - 1), 16.0 / bits);
    // The 16-bit limit binds on a few rare codes; it may cost at most 0.1%.
    EXPECT_GE(cost_of(h, lengths), optimal);
    EXPECT_LE(cost_of(h, lengths), optimal + optimal / 1000);
    EXPECT_LT(bits, entropy * 1.03 + 0.01);
  }
}

// ---- the code-length routine ----

TEST(Huffman, CodeLengthsMatchHuffmanWhenTheLimitDoesNotBind) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t alphabet = 1 + static_cast<uint32_t>(rng() % 300);
    std::vector<uint64_t> h(alphabet, 0);
    for (auto& c : h) c = (rng() % 3 == 0) ? 0 : 1 + (rng() % (1 + (rng() % 100000)));
    const auto lengths = huffman::code_lengths(h.data(), alphabet, 24);
    expect_valid_lengths(h, lengths, 24);
    if (*std::max_element(lengths.begin(), lengths.end()) < 24) {
      EXPECT_EQ(cost_of(h, lengths), huffman_cost(h));
    }
  }
}

TEST(Huffman, CodeLengthsCostExactlyWhatPackageMergeCosts) {
  // code_lengths takes an ordinary Huffman code when it fits the limit and
  // package-merge otherwise; both are optimal under the limit, so the total
  // coded bits must equal package-merge's on every histogram (never more),
  // and where the limit binds the lengths are package-merge's own.
  const auto check = [](const std::vector<uint64_t>& h, unsigned limit) {
    const uint32_t alphabet = static_cast<uint32_t>(h.size());
    const auto lengths = huffman::code_lengths(h.data(), alphabet, limit);
    const auto reference = huffman::package_merge_lengths(h.data(), alphabet, limit);
    expect_valid_lengths(h, lengths, limit);
    ASSERT_EQ(cost_of(h, lengths), cost_of(h, reference)) << "A=" << alphabet << " L=" << limit;
    if (cost_of(h, reference) > huffman_cost(h)) {
      ASSERT_EQ(lengths, reference);
    }
    ASSERT_EQ(huffman::code_lengths(h.data(), alphabet, limit), lengths);  // a pure function
  };
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 3000; ++trial) {
    const uint32_t alphabet = 1 + static_cast<uint32_t>(rng() % (trial % 10 == 0 ? 5000 : 1100));
    unsigned min_limit = 1;
    while ((uint64_t{1} << min_limit) < alphabet) ++min_limit;
    const unsigned limit = min_limit + static_cast<unsigned>(rng() % (huffman::kMaxLengthLimit - min_limit + 1));
    std::vector<uint64_t> h(alphabet, 0);
    switch (trial % 5) {
      case 0:  // uniform-ish, many ties
        for (auto& c : h) c = rng() % 4 == 0 ? 0 : 1 + rng() % 8;
        break;
      case 1:  // geometric around the middle, like Lorenzo codes; the limit binds often
        for (uint32_t s = 0; s < alphabet; ++s) {
          const double d = std::abs(static_cast<double>(s) - alphabet / 2.0);
          h[s] = static_cast<uint64_t>(std::ldexp(1.0, 40) * std::pow(0.5 + 0.45 * (trial % 7) / 7.0, d)) >> (rng() % 3);
        }
        break;
      case 2:  // Fibonacci counts: the deepest Huffman trees
        for (uint32_t s = 0, a = 1, b = 1; s < alphabet && s < 60; ++s) {
          h[rng() % alphabet] += a;
          const uint32_t next = a + b;
          a = b;
          b = next;
        }
        break;
      case 3:  // a few symbols only
        for (int k = 0; k < 1 + static_cast<int>(rng() % 6); ++k) h[rng() % alphabet] += 1 + rng() % 100;
        break;
      default:  // wide spread of magnitudes
        for (auto& c : h) c = rng() % 3 == 0 ? 0 : (rng() >> (rng() % 64)) >> 16;  // sums stay far below 2^64
        break;
    }
    check(h, limit);
  }
  // Lorenzo codes of real fields, whole and in the streams of h5py's default chunks.
  for (const char* field : {"wmag91.float", "999x999.float", "vorticity.128_128_41", "vorticity.512_512"}) {
    SCOPED_TRACE(field);
    const std::vector<uint16_t> codes = lorenzo_codes(field);
    check(histogram_of(codes, 1024), 16);
    for (size_t chunk : {size_t{6348}, size_t{7875}, size_t{300}}) {
      for (size_t at = 0; at < codes.size(); at += chunk * 7) {
        const std::vector<uint16_t> part(codes.begin() + at, codes.begin() + std::min(codes.size(), at + chunk));
        check(histogram_of(part, 1024), 16);
        check(histogram_of(part, 1024), 10);
      }
    }
  }
}

TEST(Huffman, CodeLengthsRespectTheLimitAndStayOptimal) {
  // Brute force over all length vectors for tiny alphabets: package-merge's
  // cost must be the minimum over complete codes within the limit.
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t alphabet = 2 + static_cast<uint32_t>(rng() % 5);  // 2..6
    unsigned limit = 1;
    while ((1u << limit) < alphabet) ++limit;
    limit += static_cast<unsigned>(rng() % 3);
    std::vector<uint64_t> h(alphabet);
    for (auto& c : h) c = 1 + (rng() % 2 ? rng() % 4 : rng() % 1000);
    const auto lengths = huffman::code_lengths(h.data(), alphabet, limit);
    expect_valid_lengths(h, lengths, limit);
    uint64_t best = UINT64_MAX;
    std::vector<unsigned> l(alphabet, 1);
    for (;;) {
      uint64_t kraft = 0;
      for (unsigned x : l) kraft += uint64_t{1} << (limit - x);
      if (kraft == (uint64_t{1} << limit)) {
        uint64_t cost = 0;
        for (size_t s = 0; s < alphabet; ++s) cost += h[s] * l[s];
        best = std::min(best, cost);
      }
      size_t k = 0;
      while (k < alphabet && ++l[k] > limit) l[k++] = 1;
      if (k == alphabet) break;
    }
    EXPECT_EQ(cost_of(h, lengths), best);
  }
}

TEST(Huffman, CodeLengthsOfAFullAlphabetAtItsMinimumLimit) {
  // All 65536 symbols at limit 16: the only complete code is 16 bits each.
  std::vector<uint64_t> h(65536);
  std::mt19937_64 rng(13);
  for (auto& c : h) c = 1 + rng() % 1000;
  const auto lengths = huffman::code_lengths(h.data(), 65536, 16);
  EXPECT_TRUE(std::all_of(lengths.begin(), lengths.end(), [](uint8_t l) { return l == 16; }));
  const auto codes = huffman::canonical_codes(lengths);
  for (uint32_t s = 0; s < 65536; ++s) ASSERT_EQ(codes[s], s);
}

TEST(Huffman, EqualCountsAreOrderedBySymbol) {
  // Three equal counts: the two smaller symbols pair first (longer codes).
  const std::vector<uint64_t> h = {5, 5, 5};
  const auto lengths = huffman::code_lengths(h.data(), 3, 8);
  EXPECT_EQ(lengths, (std::vector<uint8_t>{2, 2, 1}));
  EXPECT_EQ(huffman::canonical_codes(lengths), (std::vector<uint32_t>{2, 3, 0}));
}

// A straightforward reference for code_lengths, written from the method in
// huffman.hpp alone: std::sort by (count, symbol), a two-queue Huffman tree
// with explicit nodes, and package-merge building every list in full with
// explicit items. code_lengths must give exactly its lengths.
std::vector<uint8_t> reference_package_merge(const std::vector<uint64_t>& w, unsigned limit) {
  // w: the sorted leaf weights (m >= 2); returns leaf k's length.
  const size_t m = w.size();
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(limit, m - 1));
  struct Item {
    uint64_t weight;
    bool leaf;
  };
  std::vector<std::vector<Item>> list(depth + 1);
  for (uint64_t x : w) list[depth].push_back({x, true});
  for (unsigned j = depth - 1; j >= 1; --j) {
    std::vector<uint64_t> packages;
    packages.reserve(list[j + 1].size() / 2);
    list[j].reserve(m + list[j + 1].size() / 2);
    for (size_t k = 0; k + 1 < list[j + 1].size(); k += 2) packages.push_back(list[j + 1][k].weight + list[j + 1][k + 1].weight);
    size_t a = 0, p = 0;
    while (a < m || p < packages.size()) {
      if (p == packages.size() || (a < m && w[a] <= packages[p])) {
        list[j].push_back({w[a++], true});
      } else {
        list[j].push_back({packages[p++], false});
      }
    }
  }
  std::vector<uint8_t> length(m, 0);
  size_t take = 2 * m - 2;
  for (unsigned j = 1; j <= depth; ++j) {
    EXPECT_LE(take, list[j].size());
    size_t packages = 0;
    for (size_t k = 0; k < take && k < list[j].size(); ++k) {
      if (list[j][k].leaf) {
        ++length[k - packages];
      } else {
        ++packages;
      }
    }
    take = 2 * packages;
  }
  EXPECT_EQ(take, 0u);
  return length;
}

std::vector<uint8_t> reference_code_lengths(const std::vector<uint64_t>& h, unsigned limit, bool package_merge_only = false) {
  std::vector<uint32_t> symbols;
  for (uint32_t s = 0; s < h.size(); ++s) {
    if (h[s] != 0) symbols.push_back(s);
  }
  std::sort(symbols.begin(), symbols.end(), [&](uint32_t x, uint32_t y) { return h[x] != h[y] ? h[x] < h[y] : x < y; });
  const size_t m = symbols.size();
  std::vector<uint8_t> lengths(h.size(), 0);
  if (m == 1) lengths[symbols[0]] = 1;
  if (m < 2) return lengths;
  std::vector<uint64_t> w(m);
  for (size_t k = 0; k < m; ++k) w[k] = h[symbols[k]];
  // Huffman with two queues: leaves (sorted) and internal nodes in the order
  // made; the lighter front joins first, a leaf before an internal node of
  // equal weight. Nodes 0..m-1 are leaves, m.. internal.
  std::vector<uint64_t> weight(w);
  std::vector<size_t> parent(2 * m - 1, 0);
  size_t leaf = 0, internal = m;
  const auto pop = [&]() {
    if (leaf < m && (internal == weight.size() || weight[leaf] <= weight[internal])) return leaf++;
    return internal++;
  };
  while (weight.size() < 2 * m - 1) {
    const size_t x = pop();
    const size_t y = pop();
    parent[x] = parent[y] = weight.size();
    weight.push_back(weight[x] + weight[y]);
  }
  std::vector<unsigned> node_depth(2 * m - 1, 0);
  for (size_t n = 2 * m - 2; n-- > 0;) node_depth[n] = node_depth[parent[n]] + 1;
  std::vector<unsigned> depths(node_depth.begin(), node_depth.begin() + static_cast<std::ptrdiff_t>(m));
  std::sort(depths.begin(), depths.end(), std::greater<unsigned>());
  std::vector<uint8_t> leaf_length(m);
  if (depths[0] <= limit && !package_merge_only) {
    for (size_t k = 0; k < m; ++k) leaf_length[k] = static_cast<uint8_t>(depths[k]);
  } else {
    leaf_length = reference_package_merge(w, limit);
  }
  for (size_t k = 0; k < m; ++k) lengths[symbols[k]] = leaf_length[k];
  return lengths;
}

TEST(Huffman, CodeLengthsAreExactlyTheReferenceMethods) {
  std::mt19937_64 rng(31);
  size_t package_merges = 0;
  const auto check = [&](const std::vector<uint64_t>& h, unsigned limit) {
    const uint32_t alphabet = static_cast<uint32_t>(h.size());
    const auto expected = reference_code_lengths(h, limit);
    ASSERT_EQ(huffman::code_lengths(h.data(), alphabet, limit), expected) << "A=" << alphabet << " L=" << limit;
    ASSERT_EQ(huffman::package_merge_lengths(h.data(), alphabet, limit), reference_code_lengths(h, limit, true))
        << "A=" << alphabet << " L=" << limit;
    if (*std::max_element(expected.begin(), expected.end()) == limit) ++package_merges;
  };
  const auto min_limit = [](uint32_t alphabet) {
    unsigned l = 1;
    while ((uint64_t{1} << l) < alphabet) ++l;
    return l;
  };
  const auto random_limit = [&](uint32_t alphabet) {
    const unsigned lo = min_limit(alphabet);
    // Mostly tight limits (where package-merge runs), sometimes any valid one.
    if (rng() % 3 == 0) return lo + static_cast<unsigned>(rng() % (huffman::kMaxLengthLimit - lo + 1));
    return std::min<unsigned>(huffman::kMaxLengthLimit, lo + static_cast<unsigned>(rng() % 5));
  };
  const auto random_alphabet = [&]() {
    switch (rng() % 4) {
      case 0: return 2 + static_cast<uint32_t>(rng() % 30);
      case 1: return 2 + static_cast<uint32_t>(rng() % 1000);
      case 2: return 2 + static_cast<uint32_t>(rng() % 9000);
      default: return uint32_t{1} << (1 + rng() % 16);  // powers of two up to 65536
    }
  };
  for (int trial = 0; trial < 3000; ++trial) {
    const uint32_t alphabet = trial < 12 ? 65536 : random_alphabet();
    std::vector<uint64_t> h(alphabet, 0);
    const size_t samples = size_t{1} << (4 + rng() % 15);
    switch (trial % 7) {
      case 0: {  // broad normals: a peaked or flat centre, tails of counts 1..3
        const double sigma = std::ldexp(1.0, -2 + static_cast<int>(rng() % 16));
        std::normal_distribution<double> d(alphabet / 2.0, sigma);
        for (size_t i = 0; i < samples; ++i) {
          const double x = std::round(d(rng));
          h[x < 0 ? 0 : x >= alphabet ? alphabet - 1 : static_cast<uint32_t>(x)] += 1 + (i & 7);
        }
        break;
      }
      case 1: {  // Zipf-like: count proportional to rank^-s over a random permutation
        const double s = 0.5 + (rng() % 100) / 40.0;
        const double top = std::ldexp(1.0, 4 + static_cast<int>(rng() % 36));
        std::vector<uint32_t> perm(alphabet);
        for (uint32_t i = 0; i < alphabet; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng);
        const uint32_t used = 1 + static_cast<uint32_t>(rng() % alphabet);
        for (uint32_t r = 0; r < used; ++r) h[perm[r]] = 1 + static_cast<uint64_t>(top * std::pow(r + 1.0, -s));
        break;
      }
      case 2:  // many ties: counts 1..k
        for (auto& c : h) c = rng() % 4 == 0 ? 0 : 1 + rng() % (1 + rng() % 4);
        break;
      case 3: {  // Cauchy: a sharp centre and long tails of 1s and 2s
        std::cauchy_distribution<double> d(alphabet / 2.0, 0.5 + (rng() % 64) / 4.0);
        for (size_t i = 0; i < samples; ++i) {
          const double x = d(rng);
          h[x < 0 || x >= alphabet ? 0 : static_cast<uint32_t>(x)]++;
        }
        break;
      }
      case 4:  // wide spread of magnitudes, huge counts
        for (auto& c : h) c = rng() % 3 == 0 ? 0 : (rng() >> (rng() % 64)) >> (16 + rng() % 16);
        break;
      case 5: {  // all symbols used, nearly equal counts (all lengths near log2 A), one rare symbol
        const uint64_t base = 1 + rng() % 1000;
        for (auto& c : h) c = base + rng() % (1 + base / 8);
        h[rng() % alphabet] = 1 + rng() % 3;
        break;
      }
      default: {  // Fibonacci-like counts on a few symbols plus noise: deep Huffman trees
        uint64_t a = 1, b = 1;
        for (int k = 0; k < 80; ++k) {
          h[rng() % alphabet] += a;
          const uint64_t next = a + b;
          a = b;
          b = next;
        }
        break;
      }
    }
    if (std::all_of(h.begin(), h.end(), [](uint64_t c) { return c == 0; })) h[rng() % alphabet] = 1;
    check(h, random_limit(alphabet));
    if (trial % 10 == 0) check(h, min_limit(alphabet));
  }
  // m = 1, 2, 3 and every limit.
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t alphabet = 3 + static_cast<uint32_t>(rng() % 200);
    std::vector<uint64_t> h(alphabet, 0);
    const int used = 1 + trial % 3;
    for (int k = 0; k < used; ++k) h[rng() % alphabet] = 1 + (rng() % 2 ? rng() % 3 : rng() >> 20);
    for (unsigned limit = min_limit(alphabet); limit <= huffman::kMaxLengthLimit; ++limit) check(h, limit);
  }
  // All symbols used, m around powers of two, the tightest limits.
  for (uint32_t k = 1; k <= 12; ++k) {
    for (int delta : {-1, 0, 1}) {
      const uint32_t alphabet = static_cast<uint32_t>(static_cast<int>(uint32_t{1} << k) + delta);
      if (alphabet < 2) continue;
      std::vector<uint64_t> h(alphabet);
      for (auto& c : h) c = 1 + rng() % 5;
      for (unsigned limit = min_limit(alphabet); limit <= min_limit(alphabet) + 3; ++limit) check(h, limit);
      h[0] = uint64_t{1} << 30;  // one heavy symbol
      for (unsigned limit = min_limit(alphabet); limit <= min_limit(alphabet) + 3; ++limit) check(h, limit);
    }
  }
  EXPECT_GT(package_merges, 1000u);  // the limit bound often
}

// ---- threads, usage errors ----

TEST(Huffman, ThreadedExecutorGivesTheSameBytes) {
  const testing::ThreadExecutor threads(4);
  for (const auto& symbols : {geometric(200000, 0.2, 1024, 21), uniform(100000, 65536, 22), lorenzo_codes("wmag91.float")}) {
    const Config config{65536, 16, 4096};
    const Bytes serial = encode(symbols, config);
    EXPECT_EQ(encode(symbols, config, threads), serial);
    EXPECT_EQ(decode(serial, 64 * kMiB, threads), u16_bytes(symbols));
  }
}

TEST(Huffman, BadUsageIsAUsageError) {
  Bytes out;
  EXPECT_THROW(huffman::encode(u16_bytes({5}), {4, 2, 16}, out), UsageError);       // symbol >= A
  EXPECT_THROW(huffman::encode(u16_bytes({0, 1024}), {1024, 16, 16}, out), UsageError);
  EXPECT_THROW(huffman::encode(Bytes(3, 0), {1024, 16, 16}, out), UsageError);     // odd length
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {0, 16, 16}, out), UsageError);        // A = 0
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {65537, 24, 16}, out), UsageError);
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {1024, 9, 16}, out), UsageError);      // 2^9 < 1024
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {1024, 25, 16}, out), UsageError);
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {1024, 16, 0}, out), UsageError);
  EXPECT_THROW(huffman::encode(Bytes(2, 0), {1024, 16, huffman::kMaxBlockSymbols + 1}, out), UsageError);
  EXPECT_NO_THROW(huffman::encode(Bytes(2, 0), {1, 1, 1}, out));
  EXPECT_EQ(decode(out), Bytes(2, 0));
}

// ---- hostile streams ----

TEST(Huffman, MaxOutSmallerThanTheOutputIsRefused) {
  const std::vector<uint16_t> symbols = geometric(1000, 0.3, 1024, 31);
  const Bytes coded = encode(symbols, {1024, 16, 256});
  EXPECT_EQ(decode(coded, 2000).size(), 2000u);
  EXPECT_THROW(decode(coded, 1999), FormatError);
  // A huge stored n is refused before anything is allocated.
  Bytes hostile = coded;
  store_le<uint64_t>(hostile.data(), uint64_t{1} << 62);
  EXPECT_THROW(decode(hostile, SIZE_MAX), FormatError);
}

// The hand-computed example, edited field by field.
Bytes example() { return encode({3, 3, 4, 3, 5, 3, 4, 6, 3}, {8, 3, 4}); }

TEST(Huffman, InconsistentStreamsAreFormatErrors) {
  const auto with = [](const std::function<void(Bytes&)>& edit) {
    Bytes b = example();
    edit(b);
    return b;
  };
  EXPECT_NO_THROW(decode(example()));
  EXPECT_THROW(decode(with([](Bytes& b) { store_le<uint32_t>(b.data() + 8, 0); })), FormatError);       // A = 0
  EXPECT_THROW(decode(with([](Bytes& b) { store_le<uint32_t>(b.data() + 8, 9); })), FormatError);       // 2^3 < 9
  EXPECT_THROW(decode(with([](Bytes& b) { store_le<uint32_t>(b.data() + 8, 6); })), FormatError);       // hi >= A
  EXPECT_THROW(decode(with([](Bytes& b) { store_le<uint32_t>(b.data() + 12, 0); })), FormatError);      // S = 0
  EXPECT_THROW(decode(with([](Bytes& b) { b[16] = 0; })), FormatError);                                 // L = 0
  EXPECT_THROW(decode(with([](Bytes& b) { b[16] = 25; })), FormatError);                                // L > 24
  EXPECT_THROW(decode(with([](Bytes& b) { b[16] = 2; })), FormatError);                                 // lengths 3 > L
  EXPECT_THROW(decode(with([](Bytes& b) { b[17] = 7; })), FormatError);                                 // lo > hi
  EXPECT_THROW(decode(with([](Bytes& b) { b[21] = 0x42; })), FormatError);                              // 2,2,3,3: incomplete
  EXPECT_THROW(decode(with([](Bytes& b) { b[21] = 0x21; })), FormatError);                              // 1,1,3,3: over-full
  EXPECT_THROW(decode(with([](Bytes& b) { b[23] = 0x11; })), FormatError);                              // padding bits
  EXPECT_THROW(decode(with([](Bytes& b) { b[24] = 2; })), FormatError);                                 // end[0] = end[1]
  EXPECT_THROW(decode(with([](Bytes& b) { b[32] = 4; })), FormatError);                                 // last end past the payload
  EXPECT_THROW(decode(with([](Bytes& b) { b[36] = 1; })), FormatError);                                 // block 0 padding bit
  EXPECT_THROW(decode(with([](Bytes& b) { b[44] = 1; })), FormatError);                                 // block 2 padding bit
  EXPECT_THROW(decode(with([](Bytes& b) { store_le<uint32_t>(b.data() + 36, ~0u); })), FormatError);    // 4 x "111" + ones
  EXPECT_THROW(decode(with([](Bytes& b) { b.push_back(0); })), FormatError);                            // trailing byte
  // Unused whole word: block 0 given two words (its codes fit in one).
  Bytes two_words = example();
  store_le<uint32_t>(two_words.data() + 24, 2);
  store_le<uint32_t>(two_words.data() + 28, 3);
  store_le<uint32_t>(two_words.data() + 32, 4);
  two_words.insert(two_words.begin() + 40, {0, 0, 0, 0});
  EXPECT_THROW(decode(two_words), FormatError);
  // Non-tight range: hi = 7 with a zero length for 7 (lengths 1,2,3,3,0 in 4
  // bytes at 21..24, 3 alignment bytes, then the same ends and words).
  const Bytes good = example();
  Bytes rebuilt(good.begin(), good.begin() + 17);
  rebuilt.insert(rebuilt.end(), {3, 0, 7, 0, 0x41, 0x8C, 0x01, 0x00, 0, 0, 0});
  rebuilt.insert(rebuilt.end(), good.begin() + 24, good.end());
  EXPECT_NO_THROW(decode(Bytes(good)));
  EXPECT_THROW(decode(rebuilt), FormatError);
}

TEST(Huffman, BlockWhoseCodesRunPastItsWordsIsRefused) {
  // 16 symbols with 4-bit codes: 64 bits in 2 words. Claiming 1 word (16 <= 32
  // symbols fits the up-front check) must fail while decoding, without reading
  // past the stream.
  std::vector<uint16_t> symbols(16);
  for (uint16_t s = 0; s < 16; ++s) symbols[s] = s;
  const Bytes coded = encode(symbols, {16, 4, 16});
  ASSERT_EQ(coded.size(), 17u + 4 + 10 + 1 + 4 + 8);
  Bytes cut(coded.begin(), coded.end() - 4);
  store_le<uint32_t>(cut.data() + 32, 1);
  EXPECT_THROW(decode(cut), FormatError);
}

TEST(Huffman, EveryTruncationIsRefused) {
  for (const auto& symbols : {std::vector<uint16_t>{3, 3, 4, 3, 5, 3, 4, 6, 3}, geometric(300, 0.3, 1024, 41)}) {
    const Bytes coded = encode(symbols, {1024, 16, 64});
    ASSERT_EQ(decode(coded), u16_bytes(symbols));
    for (size_t len = 0; len < coded.size(); ++len) {
      const Bytes cut(coded.begin(), coded.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_THROW(decode(cut), FormatError) << "length " << len;
    }
  }
}

TEST(Huffman, BitFlipsGiveAnErrorOrACorrectLengthOutput) {
  std::mt19937_64 rng(51);
  for (const auto& symbols : {geometric(2000, 0.3, 1024, 52), uniform(500, 256, 53)}) {
    const Bytes coded = encode(symbols, {1024, 16, 128});
    size_t errors = 0;
    for (int trial = 0; trial < 5000; ++trial) {
      Bytes hostile = coded;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        const size_t at = (rng() % 4 == 0) ? rng() % std::min<size_t>(hostile.size(), 64) : rng() % hostile.size();
        hostile[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      try {
        const Bytes out = decode(hostile, 4 * kMiB);
        EXPECT_EQ(out.size(), 2 * load_le<uint64_t>(hostile.data()));
      } catch (const FormatError&) {
        ++errors;
      }
    }
    EXPECT_GT(errors, 0u);
  }
}

}  // namespace
}  // namespace fz
