#include "byteswap/byteswap.hpp"

#include <gtest/gtest.h>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_checks.hpp"

namespace fz {
namespace {

using testing::kWidths;

Bytes swapped(const Bytes& in, unsigned width) { return testing::transformed(byteswap::apply, in, width); }

TEST(Byteswap, IsItsOwnInverseOnEveryStandardInput) {
  testing::expect_width_transform_round_trips(byteswap::apply, byteswap::apply, kWidths);
}

TEST(Byteswap, KnownBytes) {
  const Bytes in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(swapped(in, 1), in);
  EXPECT_EQ(swapped(in, 2), (Bytes{2, 1, 4, 3, 6, 5, 8, 7, 9}));
  EXPECT_EQ(swapped(in, 4), (Bytes{4, 3, 2, 1, 8, 7, 6, 5, 9}));
  EXPECT_EQ(swapped(in, 8), (Bytes{8, 7, 6, 5, 4, 3, 2, 1, 9}));
  EXPECT_EQ(swapped(Bytes{1, 2, 3}, 4), (Bytes{1, 2, 3}));
  EXPECT_TRUE(swapped(Bytes{}, 8).empty());
}

TEST(Byteswap, MatchesWordReversal) {
  for (unsigned width : kWidths) {
    const Bytes in = testing::random_bytes(3 * kBlockBytes + 13, width);
    const Bytes out = swapped(in, width);
    for (size_t i = 0; i < in.size(); ++i) {
      const size_t word = i / width * width;
      const size_t expected_from = word + width <= in.size() ? word + (width - 1 - i % width) : i;
      ASSERT_EQ(out[i], in[expected_from]) << "width " << width << " byte " << i;
    }
  }
}

TEST(Byteswap, RejectsBadWidths) {
  testing::expect_bad_widths_refused(byteswap::apply, {0u, 3u, 5u, 6u, 7u, 9u, 16u});
}

TEST(Byteswap, ThreadsGiveTheSerialBytes) {
  testing::expect_threads_give_the_serial_bytes(byteswap::apply, kWidths);
}

}  // namespace
}  // namespace fz
