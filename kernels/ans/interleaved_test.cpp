// ANS, interleaved (stage type 15): the hand-worked example of docs/FORMAT.md
// pinned; every stream checked against a literal encoder written here from
// the format text (tile pairs, the costs, the lane geometry, rounds of W
// states with prepended blocks) on inputs with one and many lanes; lg16
// against its definition and against 16 log2; the plan's rules (C both
// ways, W, S and K); edges (n = 0 and 1, constant input, no runs, long runs
// at tile ends, the config's extremes); round trips on the spline's codes of
// the real fields, never much above type 14; thread independence; the
// prefix protocol of parse; and hostile streams refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ans/ans.hpp"
#include "ans/ans_format.hpp"
#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/testing/spline_codes.hpp"
#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz {
namespace {

using ans::InterleavedConfig;
namespace ifmt = ans::interleaved_format;

constexpr size_t kNoLimit = size_t{1} << 40;
using testing::u16_bytes;

Bytes encode(const Bytes& symbols, const InterleavedConfig& config, const Executor& exec = serial_executor()) {
  Bytes out;
  ans::encode_interleaved(symbols, config, out, exec);
  return out;
}

Bytes decode(const Bytes& stream, const InterleavedConfig& config, size_t max_bytes = kNoLimit,
             const Executor& exec = serial_executor()) {
  Bytes out;
  ans::decode_interleaved(stream, config, out, max_bytes, exec);
  return out;
}

ifmt::Layout layout_of(const Bytes& coded, const InterleavedConfig& config) {
  return ifmt::parse(coded.data(), coded.size(), coded.size(), config, kNoLimit);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// ---- a literal encoder, from the format text ----

struct Pair {
  uint32_t run, symbol;
};

std::vector<Pair> literal_pairs(const std::vector<uint16_t>& s, size_t begin, size_t end, uint16_t m, uint32_t C,
                                uint32_t esc) {
  std::vector<Pair> pairs;
  for (size_t tile = begin; tile < end; tile += ans::kTileSymbols) {
    uint64_t R = 0;
    for (size_t i = tile; i < std::min(end, tile + ans::kTileSymbols); ++i) {
      if (s[i] == m) {
        ++R;
        continue;
      }
      for (; R >= C; R -= C) pairs.push_back({C, esc});
      pairs.push_back({static_cast<uint32_t>(R), s[i]});
      R = 0;
    }
    for (; R >= C; R -= C) pairs.push_back({C, esc});
    if (R > 0) pairs.push_back({static_cast<uint32_t>(R), esc});
  }
  return pairs;
}

// lg16 exactly as the format defines it, in 128-bit arithmetic.
uint32_t literal_lg16(uint64_t v) {
  unsigned b = 0;
  while ((v >> (b + 1)) != 0) ++b;
  unsigned __int128 y = static_cast<unsigned __int128>(v) << (31 - b);
  uint32_t r = 16 * b;
  for (int i = 3; i >= 0; --i) {
    y = (y * y) >> 31;
    if (y >= (static_cast<unsigned __int128>(1) << 32)) {
      y >>= 1;
      r += 1u << i;
    }
  }
  return r;
}

struct LiteralCap {
  uint64_t cost = 0, pairs = 0;
  std::vector<uint32_t> run_f, sym_f;
};

LiteralCap literal_cost(const std::vector<uint16_t>& s, uint16_t m, uint32_t C, const InterleavedConfig& config) {
  const uint32_t A = config.alphabet;
  std::vector<uint64_t> rc(C + 1, 0), sc(A + 1, 0);
  const std::vector<Pair> pairs = literal_pairs(s, 0, s.size(), m, C, A);
  for (const Pair& p : pairs) ++rc[p.run], ++sc[p.symbol];
  LiteralCap c;
  c.pairs = pairs.size();
  c.run_f = ans::format::normalize(rc, config.prob_bits);
  c.sym_f = ans::format::normalize(sc, config.prob_bits);
  uint64_t p16 = 0;
  for (size_t v = 0; v < rc.size(); ++v)
    if (rc[v]) p16 += rc[v] * (16 * config.prob_bits - literal_lg16(c.run_f[v]));
  for (size_t v = 0; v < sc.size(); ++v)
    if (sc[v]) p16 += sc[v] * (16 * config.prob_bits - literal_lg16(c.sym_f[v]));
  c.cost = ans::format::table_bits(c.run_f) + ans::format::table_bits(c.sym_f) + p16 / 16;
  return c;
}

void put_varint(Bytes& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<uint8_t>(v | 0x80));
  out.push_back(static_cast<uint8_t>(v));
}

// The whole stream: the choices, then per lane the rounds from the last,
// each the symbol steps then the run steps (x / f and x mod f by division),
// each step's words prepended in increasing j.
Bytes literal_encode(const std::vector<uint16_t>& s, const InterleavedConfig& config) {
  const uint64_t n = s.size();
  const uint32_t A = config.alphabet, T = 1u << config.prob_bits;
  Bytes stored;
  put_varint(stored, n);
  if (n == 0) return stored;
  stored.push_back(0);
  for (const uint16_t v : s) append_le<uint16_t>(stored, v);
  std::vector<uint64_t> counts(A, 0);
  for (const uint16_t v : s) ++counts[v];
  uint16_t m = 0;
  for (uint32_t v = 1; v < A; ++v)
    if (counts[v] > counts[m]) m = static_cast<uint16_t>(v);
  const LiteralCap small = literal_cost(s, m, 63, config), large = literal_cost(s, m, 255, config);
  const uint32_t C = large.cost < small.cost ? 255 : 63;
  const LiteralCap& chosen = C == 255 ? large : small;
  const uint64_t N = std::max<uint64_t>({1, chosen.cost / 4096, ceil_div(chosen.pairs, 2048)});
  const uint64_t tiles = ceil_div(n, 4096);
  uint32_t W;
  uint64_t S;
  if (N <= 32) {
    W = static_cast<uint32_t>(N);
    S = n;
  } else {
    W = 32;
    S = 4096 * ceil_div(tiles, std::min(ceil_div(N, 32), tiles));
  }
  const uint64_t K = ceil_div(n, S);
  Bytes out;
  put_varint(out, n);
  out.push_back(1);
  append_le<uint16_t>(out, m);
  out.push_back(static_cast<uint8_t>(C));
  out.push_back(static_cast<uint8_t>(W));
  put_varint(out, S);
  ans::format::append_tables(out, chosen.run_f, chosen.sym_f);
  const std::vector<uint32_t> run_c = ans::format::cumulative(chosen.run_f);
  const std::vector<uint32_t> sym_c = ans::format::cumulative(chosen.sym_f);
  Bytes records, payload;
  for (uint64_t k = 0; k < K; ++k) {
    const std::vector<Pair> pairs = literal_pairs(s, k * S, std::min(n, (k + 1) * S), m, C, A);
    std::vector<uint64_t> x(W, 1u << 16);
    std::vector<uint16_t> words;  // in the order the decoder reads them
    const auto step = [&](uint32_t j, uint32_t f, uint32_t c, std::vector<uint16_t>& block) {
      if (x[j] >= (uint64_t{f} << (32 - config.prob_bits))) {
        block.push_back(static_cast<uint16_t>(x[j] & 0xFFFF));
        x[j] >>= 16;
      }
      x[j] = (x[j] / f) * T + x[j] % f + c;
    };
    for (uint64_t r = ceil_div(pairs.size(), W); r-- > 0;) {
      std::vector<uint16_t> block;
      for (uint32_t j = 0; j < W && r * W + j < pairs.size(); ++j) {
        const uint32_t v = pairs[r * W + j].symbol;
        step(j, chosen.sym_f[v], sym_c[v], block);
      }
      words.insert(words.begin(), block.begin(), block.end());
      block.clear();
      for (uint32_t j = 0; j < W && r * W + j < pairs.size(); ++j) {
        const uint32_t v = pairs[r * W + j].run;
        step(j, chosen.run_f[v], run_c[v], block);
      }
      words.insert(words.begin(), block.begin(), block.end());
    }
    append_le<uint32_t>(records, static_cast<uint32_t>(pairs.size()));
    append_le<uint32_t>(records, static_cast<uint32_t>(words.size()));
    for (uint32_t j = 0; j < W; ++j) append_le<uint32_t>(records, static_cast<uint32_t>(x[j]));
    for (const uint16_t w : words) append_le<uint16_t>(payload, w);
  }
  out.insert(out.end(), records.begin(), records.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out.size() < stored.size() ? out : stored;
}

// The stream equals the literal encoder's, and decodes back.
Bytes expect_literal_round_trip(const std::vector<uint16_t>& s, const InterleavedConfig& config,
                                const std::string& what) {
  const Bytes symbols = u16_bytes(s);
  const Bytes coded = encode(symbols, config);
  EXPECT_EQ(coded, literal_encode(s, config)) << what;
  EXPECT_EQ(decode(coded, config, symbols.size()), symbols) << what;
  return coded;
}

// Mostly `common`, with other symbols at rate 1/every.
std::vector<uint16_t> mostly(size_t n, uint16_t common, uint32_t alphabet, unsigned every, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = rng() % every == 0 ? static_cast<uint16_t>(rng() % alphabet) : common;
  return s;
}

ifmt::Plan plan_of(const std::vector<uint16_t>& s, const InterleavedConfig& config) {
  std::vector<uint64_t> counts(config.alphabet, 0);
  for (const uint16_t v : s) ++counts[v];
  const Bytes b = u16_bytes(s);
  return ifmt::plan(s.size(), counts, ifmt::tile_histograms(b.data(), s.size(), ans::format::mode_of(counts)),
                    config);
}

// ---- the worked example of docs/FORMAT.md ----

// A = 3, M = 8: 70 zeros, 1, three zeros, 2, 1, 2, 2 (78 symbols, m = 0).
// Cap 255: pairs (70, 1) (3, 2) (0, 1) (0, 2) (0, 2); run f 0:154 3:51 70:51,
// symbol f 1:102 2:154; tables 59 + 35 bits, P = 192: cost 106. Cap 63:
// (63, ESC) (7, 1) (3, 2) (0, 1) (0, 2) (0, 2): cost 141. So C = 255, N = 1:
// W = 1, S = 78. Coded from the last pair, symbol step then run step, from
// x = 65536: 108988, 181102, 301054, 500362, 1255732, 2087440, 3470050,
// 17418404, 43716676, 219440626 (0x0D1465F2); no word.
const InterleavedConfig kExampleConfig{3, 8};
const Bytes kExampleStream = {0x4e, 0x01, 0x00, 0x00, 0xff, 0x01, 0x4e, 0x24, 0x20, 0xcb, 0x60,
                              0x06, 0xc2, 0x60, 0xb6, 0x80, 0x59, 0x40, 0x16, 0x00, 0x05, 0x00,
                              0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf2, 0x65, 0x14, 0x0d};

std::vector<uint16_t> example_symbols() {
  std::vector<uint16_t> s(70, 0);
  for (const uint16_t v : {1, 0, 0, 0, 2, 1, 2, 2}) s.push_back(v);
  return s;
}

TEST(AnsInterleaved, HandWorkedExampleGivesKnownBytes) {
  EXPECT_EQ(encode(u16_bytes(example_symbols()), kExampleConfig), kExampleStream);
  EXPECT_EQ(decode(kExampleStream, kExampleConfig), u16_bytes(example_symbols()));
  const ifmt::Plan p = plan_of(example_symbols(), kExampleConfig);
  EXPECT_EQ(p.cost_large, 106u);
  EXPECT_EQ(p.cost_small, 141u);
  EXPECT_EQ(p.cap, 255u);
  EXPECT_EQ(p.states, 1u);
  EXPECT_EQ(p.lane_symbols, 78u);
  EXPECT_EQ(p.pairs, 5u);
  EXPECT_EQ(p.run_freq[0], 154u);
  EXPECT_EQ(p.run_freq[70], 51u);
  EXPECT_EQ(p.symbol_freq[3], 0u);  // no ESC
  const ifmt::Layout l = layout_of(kExampleStream, kExampleConfig);
  EXPECT_EQ(l.records_at, 20u);
  EXPECT_EQ(l.record_bytes, 12u);
  EXPECT_EQ(l.payload_at, 32u);
}

// ---- lg16 ----

TEST(AnsInterleaved, Lg16FollowsItsDefinitionAndIsSixteenLog2) {
  for (uint64_t v = 1; v <= 65536; ++v) {
    const uint32_t r = ifmt::lg16(v);
    ASSERT_EQ(r, literal_lg16(v)) << v;
    const long double exact = 16.0L * std::log2(static_cast<long double>(v));
    ASSERT_LE(r, exact + 1e-9L) << v;  // each squaring's floor only lowers it
    ASSERT_GE(r + 2, exact) << v;
  }
  for (unsigned b = 0; b < 32; ++b) EXPECT_EQ(ifmt::lg16(uint64_t{1} << b), 16 * b);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = 1 + rng() % 0xFFFFFFFFull;
    ASSERT_EQ(ifmt::lg16(v), literal_lg16(v)) << v;
  }
  EXPECT_EQ(ifmt::lg16(0xFFFFFFFFull), literal_lg16(0xFFFFFFFFull));
  EXPECT_EQ(ifmt::lg16(3), 25u);  // 16 log2 3 = 25.36
  EXPECT_THROW(ifmt::lg16(0), UsageError);
  EXPECT_THROW(ifmt::lg16(uint64_t{1} << 32), UsageError);
}

// ---- the plan ----

TEST(AnsInterleaved, RunCapIsChosenByCostBothWays) {
  const InterleavedConfig config{64, 12};
  // Long runs of one length: cap 255 codes each as one pair.
  std::vector<uint16_t> long_runs;
  for (int i = 0; i < 300; ++i) {
    long_runs.insert(long_runs.end(), 200, 0);
    long_runs.push_back(static_cast<uint16_t>(1 + i % 5));
  }
  const ifmt::Plan a = plan_of(long_runs, config);
  EXPECT_LT(a.cost_large, a.cost_small);
  EXPECT_EQ(a.cap, 255u);
  expect_literal_round_trip(long_runs, config, "long runs");
  // Runs of many lengths from 63 to 254: cap 255 lists each length (a long
  // run table, each token rare), cap 63 only 63 and the remainders.
  std::vector<uint16_t> varied;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100; ++i) {
    varied.insert(varied.end(), 63 + rng() % 192, 0);
    varied.push_back(static_cast<uint16_t>(1 + i % 7));
  }
  const ifmt::Plan b = plan_of(varied, config);
  EXPECT_LT(b.cost_small, b.cost_large);
  EXPECT_EQ(b.cap, 63u);
  expect_literal_round_trip(varied, config, "varied long runs");
  // No run reaches 63: both costs are equal, and the tie goes to 63.
  const std::vector<uint16_t> short_runs = mostly(20000, 0, 64, 3, 4);
  const ifmt::Plan c = plan_of(short_runs, config);
  EXPECT_EQ(c.cost_small, c.cost_large);
  EXPECT_EQ(c.cap, 63u);
}

TEST(AnsInterleaved, LaneGeometryFollowsTheRules) {
  const InterleavedConfig config{256, 12};
  const auto check = [&](const std::vector<uint16_t>& s, const std::string& what) {
    const ifmt::Plan p = plan_of(s, config);
    const uint64_t B = p.cap == 255 ? p.cost_large : p.cost_small;
    const uint64_t N = std::max<uint64_t>({1, B / 4096, ceil_div(p.pairs, 2048)});
    const uint64_t tiles = ceil_div(s.size(), 4096);
    if (N <= 32) {
      EXPECT_EQ(p.states, N) << what;
      EXPECT_EQ(p.lane_symbols, s.size()) << what;
    } else {
      EXPECT_EQ(p.states, 32u) << what;
      EXPECT_EQ(p.lane_symbols, 4096 * ceil_div(tiles, std::min(ceil_div(N, 32), tiles))) << what;
    }
    EXPECT_EQ(p.lanes, ceil_div(s.size(), p.lane_symbols)) << what;
    EXPECT_EQ(p.payload_at, p.records_at + p.lanes * (8 + 4 * p.states)) << what;
    expect_literal_round_trip(s, config, what);
    return p;
  };
  // One lane, W < 32: ~10000 symbols of ~6.6 bits.
  const ifmt::Plan one = check(mostly(10000, 0, 100, 1, 1), "one lane");
  EXPECT_EQ(one.lanes, 1u);
  EXPECT_GT(one.states, 1u);
  EXPECT_LT(one.states, 32u);
  // Many lanes: 1M symbols of 8 bits: ~2000 states, 63 lanes of 4 tiles.
  const ifmt::Plan many = check(mostly(1000000, 0, 256, 1, 2), "many lanes");
  EXPECT_EQ(many.states, 32u);
  EXPECT_EQ(many.lane_symbols, 4u * 4096);
  EXPECT_EQ(many.lanes, 62u);
  // A constant input: no bits, but a state per 2048 pairs (66 a tile at cap 63).
  const ifmt::Plan constant = check(std::vector<uint16_t>(4096 * 200, 9), "constant");
  EXPECT_EQ(constant.pairs, 200u * 17);  // 16 x 255 + 16: cap 255
  EXPECT_EQ(constant.states, 2u);
  // Small and tile-ragged sizes.
  for (const size_t n : {1, 2, 100, 4095, 4096, 4097, 3 * 4096 - 1, 3 * 4096 + 1, 40 * 4096 - 1, 40 * 4096 + 1}) {
    check(mostly(n, 7, 256, 2, n), "n " + std::to_string(n));
    check(mostly(n, 7, 256, 100, n), "n " + std::to_string(n) + " runs");
  }
  // 5 tiles and 17 symbols of 8 bits: N = 40 states, K0 = 2: lanes of 3 tiles.
  const ifmt::Plan dense = check(mostly(5 * 4096 + 17, 0, 256, 1, 9), "two lanes");
  EXPECT_EQ(dense.lanes, 2u);
  EXPECT_EQ(dense.lane_symbols, 3u * 4096);
}

// The histograms of whole-tile ranges add up to the whole's (a backend
// counts tiles in parallel), and match the literal pairs of both caps.
TEST(AnsInterleaved, TileHistogramsAddOverTileRanges) {
  std::vector<uint16_t> s = mostly(10 * 4096 + 123, 4, 16, 9, 12);
  s.insert(s.begin() + 4096 * 3 - 300, 700, 4);  // a run across a tile boundary
  const Bytes b = u16_bytes(s);
  const ifmt::TileHistograms whole = ifmt::tile_histograms(b.data(), s.size(), 4);
  ifmt::TileHistograms sum;
  for (size_t begin = 0; begin < s.size(); begin += 3 * 4096) {
    const size_t len = std::min<size_t>(3 * 4096, s.size() - begin);
    sum += ifmt::tile_histograms(b.data() + 2 * begin, len, 4);
  }
  for (const uint32_t C : {63u, 255u}) {
    std::vector<uint64_t> run(C + 1, 0);
    uint64_t esc = 0;
    for (const Pair& p : literal_pairs(s, 0, s.size(), 4, C, 16)) ++run[p.run], esc += p.symbol == 16;
    for (uint32_t t = 0; t <= C; ++t) {
      const uint64_t got = C == 63 ? whole.run63[t] : whole.run255[t];
      const uint64_t added = C == 63 ? sum.run63[t] : sum.run255[t];
      ASSERT_EQ(got, run[t]) << C << " " << t;
      ASSERT_EQ(added, run[t]) << C << " " << t;
    }
    EXPECT_EQ(C == 63 ? whole.esc63 : whole.esc255, esc);
    EXPECT_EQ(C == 63 ? sum.esc63 : sum.esc255, esc);
  }
}

TEST(AnsInterleaved, PlanRefusesBadArguments) {
  const InterleavedConfig config{4, 8};
  EXPECT_THROW(ifmt::plan(0, {0, 0, 0, 0}, {}, config), UsageError);
  EXPECT_THROW(ifmt::plan(2, {1, 0, 0}, {}, config), UsageError);
  EXPECT_THROW(ifmt::plan(2, {1, 0, 0, 0}, {}, config), UsageError);
}

// ---- edges ----

TEST(AnsInterleaved, EmptyAndOneSymbol) {
  const InterleavedConfig config;
  EXPECT_EQ(encode({}, config), Bytes{0x00});
  EXPECT_TRUE(decode(Bytes{0x00}, config).empty());
  EXPECT_EQ(encode(u16_bytes({4095}), config), (Bytes{0x01, 0x00, 0xFF, 0x0F}));
  EXPECT_EQ(decode(Bytes{0x01, 0x00, 0xFF, 0x0F}, config), u16_bytes({4095}));
}

TEST(AnsInterleaved, EdgeInputsMatchTheLiteralEncoder) {
  // Every symbol m: only (C, ESC) and (b, ESC) pairs.
  for (const size_t n : {1000, 4096, 4097, 100000}) {
    const Bytes coded = expect_literal_round_trip(std::vector<uint16_t>(n, 3), {16, 8}, "constant");
    const ifmt::Layout l = layout_of(coded, {16, 8});
    if (n >= 4096) {
      EXPECT_EQ(l.method, ans::kMethodCoded) << n;
    }
  }
  // No run at all: every symbol distinct.
  std::vector<uint16_t> distinct(4096 * 3);
  for (size_t i = 0; i < distinct.size(); ++i) distinct[i] = static_cast<uint16_t>((i * 40503u) % 65535u);
  expect_literal_round_trip(distinct, {65535, 16}, "distinct");
  // Runs around both caps, before a symbol and at tile ends (ESC pairs).
  std::vector<uint16_t> runs;
  for (const size_t L : {0, 1, 62, 63, 64, 126, 127, 254, 255, 256, 510, 511, 4095, 4096, 5000}) {
    runs.insert(runs.end(), L, 2);
    runs.push_back(static_cast<uint16_t>(L % 2));
  }
  for (const size_t pad : {0, 1, 62, 63, 255, 256}) {
    std::vector<uint16_t> s = runs;
    s.insert(s.end(), 4096 - s.size() % 4096 - (pad % 4096 == 0 ? 0 : 1), 2);  // a tile ending in a run
    s.push_back(1);
    s.insert(s.end(), pad, 2);
    expect_literal_round_trip(s, {3, 8}, "runs, pad " + std::to_string(pad));
    expect_literal_round_trip(s, {3, 16}, "runs M 16, pad " + std::to_string(pad));
  }
  // The config's extremes.
  expect_literal_round_trip(mostly(50000, 1, 2, 3, 7), {2, 8}, "A 2 M 8");
  expect_literal_round_trip(mostly(50000, 1, 2, 3, 7), {2, 16}, "A 2 M 16");
  expect_literal_round_trip(mostly(300000, 40000, 65535, 3, 8), {65535, 16}, "A 65535");
  std::vector<uint16_t> top = mostly(20000, 65534, 65535, 2, 9);
  expect_literal_round_trip(top, {65535, 16}, "m = A - 1");
  expect_literal_round_trip(mostly(200000, 255, 256, 2, 10), {256, 9}, "A 256 M 9");
}

TEST(AnsInterleaved, RandomSymbolsAreStored) {
  const InterleavedConfig config{65535, 16};
  std::mt19937_64 rng(3);
  std::vector<uint16_t> s(100000);
  for (auto& v : s) v = static_cast<uint16_t>(rng() % 65535);
  const Bytes coded = expect_literal_round_trip(s, config, "random");
  EXPECT_EQ(layout_of(coded, config).method, ans::kMethodStored);
}

TEST(AnsInterleaved, StandardInputsRoundTrip) {
  for (const auto& input : testing::standard_inputs()) {
    for (const InterleavedConfig config : {InterleavedConfig{256, 10}, InterleavedConfig{65535, 16}}) {
      Bytes symbols(input.bytes.begin(), input.bytes.begin() + input.bytes.size() / 2 * 2);
      for (size_t i = 0; i < symbols.size(); i += 2)
        store_le<uint16_t>(symbols.data() + i, load_le<uint16_t>(symbols.data() + i) % config.alphabet);
      EXPECT_EQ(decode(encode(symbols, config), config, symbols.size()), symbols) << input.name;
    }
  }
}

TEST(AnsInterleaved, ThreadedExecutorGivesTheSameBytes) {
  const InterleavedConfig config{8192, 14};
  const Bytes symbols = u16_bytes(mostly(1000003, 4096, 8192, 4, 5));
  const Bytes serial = encode(symbols, config);
  EXPECT_GT(layout_of(serial, config).lanes, 8u);
  for (const unsigned threads : {2u, 3u, 8u}) {
    const testing::ThreadExecutor exec(threads);
    EXPECT_EQ(encode(symbols, config, exec), serial) << threads;
    EXPECT_EQ(decode(serial, config, kNoLimit, exec), symbols) << threads;
  }
}

// ---- the spline's codes of the real fields ----

// Every group round-trips at 1e-2, 1e-3, 1e-4, and each field's groups take
// at most 5% more than type 14's (the model: 1.00 over all fields; the
// smallest field's groups pay their states and tables: 1.03 at 1e-2;
// measured in docs/PERFORMANCE.md); one group per bound also against the literal encoder.
TEST(AnsInterleaved, SplineCodesOfRealFieldsRoundTripNearTypeFourteen) {
  const InterleavedConfig config{8192, 14};
  bool literal_done[3] = {};
  for (const auto& field : testing::real_fields()) {
    for (const double noa : {1e-2, 1e-3, 1e-4}) {
      const spline::Streams st = testing::spline_codes(field, noa);
      double ansi_bytes = 0, ans_bytes = 0;
      for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
        if (st.codes[g].empty()) continue;
        const Bytes coded = encode(st.codes[g], config);
        ASSERT_EQ(decode(coded, config, st.codes[g].size()), st.codes[g]) << field.name << " " << noa << " " << g;
        Bytes old;
        ans::encode(st.codes[g], {8192, 14, 8192}, old);
        ansi_bytes += double(coded.size());
        ans_bytes += double(old.size());
        bool& done = literal_done[noa == 1e-2 ? 0 : noa == 1e-3 ? 1 : 2];
        if (!done && st.codes[g].size() > 200000) {
          std::vector<uint16_t> s(st.codes[g].size() / 2);
          for (size_t i = 0; i < s.size(); ++i) s[i] = load_le<uint16_t>(st.codes[g].data() + 2 * i);
          EXPECT_EQ(coded, literal_encode(s, config)) << field.name << " " << noa << " " << g;
          done = true;
        }
      }
      const bool constant = field.name.rfind("const", 0) == 0;  // all fixed costs
      EXPECT_LT(ansi_bytes, (constant ? 1.3 : 1.05) * ans_bytes)
          << field.name << " " << noa << ": ansi " << ansi_bytes << " vs ans " << ans_bytes;
    }
  }
}

// ---- usage, limits, the prefix protocol ----

TEST(AnsInterleaved, BadUsageIsAUsageError) {
  Bytes out;
  for (const InterleavedConfig bad : {InterleavedConfig{1, 8}, InterleavedConfig{65536, 16},
                                      InterleavedConfig{256, 7}, InterleavedConfig{256, 8}, InterleavedConfig{16, 17}}) {
    EXPECT_THROW(ans::encode_interleaved(u16_bytes({1}), bad, out), UsageError) << bad.alphabet;
    EXPECT_THROW(ans::decode_interleaved(Bytes{0x00}, bad, out, kNoLimit), UsageError) << bad.alphabet;
  }
  EXPECT_NO_THROW(ifmt::check_config({255, 8}));
  EXPECT_THROW(ans::encode_interleaved(Bytes{1, 0, 2}, {16, 8}, out), UsageError);
  EXPECT_THROW(ans::encode_interleaved(u16_bytes({3, 16}), {16, 8}, out), UsageError);
}

TEST(AnsInterleaved, MaxBytesIsHonoured) {
  const InterleavedConfig config{16, 8};
  const Bytes symbols = u16_bytes(mostly(50000, 3, 16, 4, 1));
  const Bytes coded = encode(symbols, config);
  EXPECT_EQ(decode(coded, config, symbols.size()), symbols);
  EXPECT_THROW(decode(coded, config, symbols.size() - 1), FormatError);
  // A huge n is refused before anything is sized by it.
  Bytes huge;
  put_varint(huge, uint64_t{1} << 50);
  huge.push_back(1);
  EXPECT_THROW(decode(huge, config, size_t{1} << 30), FormatError);
}

// From a 10-byte prefix: at most two more asks (a head bound, then exactly
// payload_at), each for more than the prefix and at most the stream, and
// then the whole stream's layout.
TEST(AnsInterleaved, ParseFromAPrefixAsksAtMostTwice) {
  const InterleavedConfig config{8192, 14};
  for (const size_t n : {0, 1, 100, 70000, 1000000}) {
    const Bytes coded = encode(u16_bytes(mostly(n, 4096, 8192, 4, n)), config);
    const ifmt::Layout whole = layout_of(coded, config);
    ASSERT_EQ(whole.needed, 0u);
    for (const size_t first : {size_t{1}, size_t{10}, size_t{40}, whole.payload_at / 2}) {
      size_t prefix = std::min(first, coded.size());
      ifmt::Layout l = ifmt::parse(coded.data(), prefix, coded.size(), config, kNoLimit);
      int asks = 0;
      while (l.needed != 0) {
        ASSERT_GT(l.needed, prefix);
        ASSERT_LE(l.needed, coded.size());
        prefix = l.needed;
        l = ifmt::parse(coded.data(), prefix, coded.size(), config, kNoLimit);
        ++asks;
      }
      EXPECT_LE(asks, first >= 10 || first >= coded.size() ? 2 : 3) << n << " " << first;
      EXPECT_EQ(l.payload_at, whole.payload_at);
      EXPECT_EQ(l.word_start, whole.word_start);
      EXPECT_EQ(l.lanes, whole.lanes);
    }
  }
}

// ---- hostile streams ----

void expect_refused(const Bytes& stream, const InterleavedConfig& config, const std::string& what) {
  EXPECT_THROW(decode(stream, config), FormatError) << what;
}

// A one-lane method-1 stream built by hand: head fields, the two tables
// (run table over [0, C], symbol table over [0, A]), one record per lane
// (pairs, words, states) and the payload.
Bytes hand_stream(uint64_t n, uint16_t m, uint8_t C, uint8_t W, uint64_t S, const std::vector<uint32_t>& run_f,
                  const std::vector<uint32_t>& sym_f, const std::vector<std::vector<uint32_t>>& records,
                  const std::vector<uint16_t>& payload) {
  Bytes b;
  put_varint(b, n);
  b.push_back(1);
  append_le<uint16_t>(b, m);
  b.push_back(C);
  b.push_back(W);
  put_varint(b, S);
  ans::format::append_tables(b, run_f, sym_f);
  for (const auto& r : records)
    for (const uint32_t v : r) append_le<uint32_t>(b, v);
  for (const uint16_t w : payload) append_le<uint16_t>(b, w);
  return b;
}

std::vector<uint32_t> only(size_t size, size_t token, uint32_t f) {
  std::vector<uint32_t> t(size, 0);
  t[token] = f;
  return t;
}

TEST(AnsInterleaved, HandBuiltStreamsAreDecodedOrRefused) {
  const InterleavedConfig c{2, 8};  // ESC = 2
  // One pair (0, 1): decodes to [1]. Then the same with (0, ESC): refused.
  EXPECT_EQ(decode(hand_stream(1, 0, 63, 1, 1, only(64, 0, 256), only(3, 1, 256), {{1, 0, 65536}}, {}), c),
            u16_bytes({1}));
  expect_refused(hand_stream(1, 0, 63, 1, 1, only(64, 0, 256), only(3, 2, 256), {{1, 0, 65536}}, {}), c,
                 "a pair (0, ESC)");
  // One pair (3, ESC): [0, 0, 0]; a lane of 2 or 4 does not match it.
  EXPECT_EQ(decode(hand_stream(3, 0, 63, 1, 3, only(64, 3, 256), only(3, 2, 256), {{1, 0, 65536}}, {}), c),
            u16_bytes({0, 0, 0}));
  expect_refused(hand_stream(2, 0, 63, 1, 2, only(64, 3, 256), only(3, 2, 256), {{1, 0, 65536}}, {}), c,
                 "a pair past the lane's end");
  expect_refused(hand_stream(4, 0, 63, 1, 4, only(64, 3, 256), only(3, 2, 256), {{1, 0, 65536}}, {}), c,
                 "pairs short of the lane");
  // W = 2 with one pair: state 1 takes no part and must stay 2^16.
  EXPECT_EQ(decode(hand_stream(3, 0, 63, 2, 3, only(64, 3, 256), only(3, 2, 256), {{1, 0, 65536, 65536}}, {}), c),
            u16_bytes({0, 0, 0}));
  expect_refused(hand_stream(3, 0, 63, 2, 3, only(64, 3, 256), only(3, 2, 256), {{1, 0, 65536, 65537}}, {}), c,
                 "an idle state not at 2^16");
  // Records and fields out of range.
  const auto ok = [&](std::vector<std::vector<uint32_t>> records, uint8_t W = 1, uint64_t S = 3, uint8_t C = 63,
                      uint16_t m = 0) {
    // (C = 0 is refused before the tables are read: any table will do.)
    return hand_stream(3, m, C, W, S, only(std::max<size_t>(size_t{C} + 1, 4), 3, 256), only(3, 2, 256), records, {});
  };
  expect_refused(ok({{0, 0, 65536}}), c, "no pairs");
  expect_refused(ok({{4, 0, 65536}}), c, "more pairs than symbols");
  expect_refused(ok({{1, 3, 65536}}), c, "more words than 2P");
  expect_refused(ok({{1, 2, 65536}}), c, "words the stream does not hold");
  expect_refused(ok({{1, 0, 65535}}), c, "a state below 2^16");
  expect_refused(ok({{1, 0, 65536}}, 0), c, "W = 0");
  expect_refused(ok({{1, 0, 65536}}, 33), c, "W = 33");
  expect_refused(ok({{1, 0, 65536}}, 1, 0), c, "S = 0");
  expect_refused(ok({{1, 0, 65536}}, 1, 4), c, "S > n");
  expect_refused(ok({{1, 0, 65536}, {1, 0, 65536}}, 1, 2), c, "lane 1 has 1 symbol, 3 decoded... and lane 0 too");
  expect_refused(ok({{1, 0, 65536}}, 1, 3, 0), c, "C = 0");
  expect_refused(ok({{1, 0, 65536}}, 1, 3, 63, 2), c, "m outside the alphabet");
  expect_refused(hand_stream(3, 1, 63, 1, 3, only(64, 3, 256), only(3, 1, 256), {{1, 0, 65536}}, {}), c,
                 "f(m) > 0");
  expect_refused(hand_stream(3, 0, 63, 1, 3, only(64, 3, 256), only(3, 1, 0), {{1, 0, 65536}}, {}), c,
                 "an empty symbol table");
  expect_refused(hand_stream(3, 0, 63, 1, 3, only(64, 3, 255), only(3, 2, 256), {{1, 0, 65536}}, {}), c,
                 "a run table summing to 255");
  Bytes trailing = ok({{1, 0, 65536}});
  trailing.push_back(0);
  expect_refused(trailing, c, "a trailing byte");
  trailing.push_back(0);
  expect_refused(trailing, c, "a trailing word");
  expect_refused({}, c, "empty");
  expect_refused({0x80}, c, "varint cut");
  expect_refused({0x80, 0x00}, c, "redundant varint group");
  expect_refused({0x00, 0x00}, c, "bytes after an empty stream");
  expect_refused({0x01, 0x02, 0x00, 0x00}, c, "unknown method");
  expect_refused({0x01, 0x00, 0x02, 0x00}, c, "stored symbol outside the alphabet");
  expect_refused({0x01, 0x00, 0x01}, c, "stored stream cut");
}

// Every truncation of a few real streams (one lane, many lanes, with
// words), and every single-bit flip of each head, records and first words
// (of the whole of a small one): a FormatError or a decode of the right
// size inside the alphabet, never anything else (run under ASan in CI).
TEST(AnsInterleaved, TruncationsAndFlipsAreRefusedOrDecodedSafely) {
  const InterleavedConfig config{64, 10};
  const std::vector<Bytes> streams = {encode(u16_bytes(mostly(3000, 5, 64, 3, 1)), config),
                                      encode(u16_bytes(mostly(70000, 5, 64, 2, 2)), config),
                                      encode(u16_bytes(std::vector<uint16_t>(9000, 63)), config)};
  for (const Bytes& coded : streams) {
    const ifmt::Layout whole = layout_of(coded, config);
    ASSERT_EQ(whole.method, ans::kMethodCoded);
    const size_t n = whole.n;
    for (size_t cut = 0; cut < coded.size(); ++cut) {
      expect_refused(Bytes(coded.begin(), coded.begin() + cut), config, "cut at " + std::to_string(cut));
    }
    const size_t limit = coded.size() < 4096 ? coded.size() : whole.payload_at + 256;
    for (size_t at = 0; at < limit; ++at) {
      for (unsigned bit = 0; bit < 8; ++bit) {
        Bytes b = coded;
        b[at] ^= static_cast<uint8_t>(1u << bit);
        try {
          const Bytes out = decode(b, config, 2 * n + 2);
          ASSERT_LE(out.size(), 2 * n + 2);
          for (size_t i = 0; i + 1 < out.size(); i += 2) ASSERT_LT(load_le<uint16_t>(out.data() + i), 64u);
        } catch (const FormatError&) {
        }
      }
    }
  }
}

}  // namespace
}  // namespace fz
