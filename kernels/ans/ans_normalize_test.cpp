// format::normalize on broad histograms: many symbols whose scaled counts
// round to 0 and are lifted to 1, so the sum overshoots 2^M and passes must
// take it back from the larger frequencies. A defect here once took the
// last pass past 1 and gave counted symbols f = 0 (the encoder then wrote a
// lane state below 2^16: the spline's codes of 999x999 with tuning off at an
// absolute bound of 0.01 hit it). Checks the documented rules directly:
// every counted symbol f >= 1, uncounted 0, the sum exactly 2^M, and the
// passes taking from the largest first.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "ans/ans_format.hpp"

namespace fz::ans {
namespace {

void expect_valid(const std::vector<uint64_t>& counts, unsigned bits) {
  const std::vector<uint32_t> f = format::normalize(counts, bits);
  ASSERT_EQ(f.size(), counts.size());
  uint64_t sum = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s] == 0) {
      EXPECT_EQ(f[s], 0u) << "symbol " << s;
    } else {
      EXPECT_GE(f[s], 1u) << "symbol " << s << " count " << counts[s];
    }
    sum += f[s];
  }
  EXPECT_EQ(sum, uint64_t{1} << bits);
}

TEST(AnsNormalize, BroadHistogramsKeepEveryCountedSymbol) {
  // A geometric-ish spread over thousands of symbols, as the spline's codes at
  // tight bounds: a few hundred symbols carry the mass, thousands are rare.
  std::mt19937_64 rng(7);
  for (unsigned bits : {13u, 14u, 16u}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<uint64_t> counts(8192, 0);
      const double spread = 20.0 + 40.0 * trial;
      std::geometric_distribution<int> width(1.0 / spread);
      for (int i = 0; i < 750000; ++i) {
        const int d = width(rng);
        const int s = 4096 + ((i & 1) ? d : -d);
        if (s >= 0 && s < 8192) ++counts[s];
      }
      SCOPED_TRACE(::testing::Message() << "bits " << bits << " spread " << spread);
      expect_valid(counts, bits);
    }
  }
}

TEST(AnsNormalize, AsManyCountedSymbolsAsSlots) {
  // 2^M counted symbols: every f must end at exactly 1.
  std::vector<uint64_t> counts(1u << 13, 1);
  counts[5] = 1000000;
  const std::vector<uint32_t> f = format::normalize(counts, 13);
  for (size_t s = 0; s < f.size(); ++s) EXPECT_EQ(f[s], 1u) << s;
}

TEST(AnsNormalize, PassesTakeFromTheLargestFirst) {
  // Two large symbols and 100 rare ones at M = 8 (256 slots): the rare ones
  // are lifted to 1 (100 slots), the large ones give back the overshoot, the
  // one with the larger f first and the smaller symbol first among equals.
  std::vector<uint64_t> counts(200, 0);
  counts[0] = 1000000;
  counts[1] = 1000000;
  for (size_t s = 100; s < 200; ++s) counts[s] = 1;
  const std::vector<uint32_t> f = format::normalize(counts, 8);
  // floor(1e6 * 256 / (2e6 + 100)) = 127 each: 254 + 100 = 354, 98 over;
  // 49 whole passes over both.
  EXPECT_EQ(f[0], 78u);
  EXPECT_EQ(f[1], 78u);
  for (size_t s = 100; s < 200; ++s) EXPECT_EQ(f[s], 1u);
  expect_valid(counts, 8);
}

}  // namespace
}  // namespace fz::ans
