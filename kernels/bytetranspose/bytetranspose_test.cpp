#include "bytetranspose/bytetranspose.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"

namespace fz {
namespace {

class ThreadExecutor final : public Executor {
 public:
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        for (size_t i = t; i < count; i += 3) body(i);
      });
    for (auto& th : threads) th.join();
  }
  unsigned concurrency() const override { return 3; }
};

TEST(ByteTranspose, LayoutMatchesTheFormat) {
  // Three 3-byte elements and two trailing bytes.
  const Bytes in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Bytes out;
  bytetranspose::encode(in, 3, out);
  EXPECT_EQ(out, (Bytes{1, 4, 7, 2, 5, 8, 3, 6, 9, 10, 11}));
}

TEST(ByteTranspose, RoundTripsEverySizeAndInput) {
  for (const auto& input : testing::standard_inputs()) {
    for (uint32_t s : {1u, 2u, 3u, 5u, 12u, 16u, 40u, 4099u}) {
      Bytes enc, dec;
      bytetranspose::encode(input.bytes, s, enc);
      ASSERT_EQ(enc.size(), input.bytes.size());
      bytetranspose::decode(enc, s, dec);
      ASSERT_TRUE(dec == input.bytes) << input.name << " size " << s;
    }
  }
}

TEST(ByteTranspose, ThreadsGiveTheSameBytes) {
  const Bytes in = testing::random_bytes(12 * 100000 + 7, 3);
  Bytes serial, threaded;
  bytetranspose::encode(in, 12, serial);
  bytetranspose::encode(in, 12, threaded, ThreadExecutor());
  EXPECT_TRUE(serial == threaded);
  Bytes back;
  bytetranspose::decode(threaded, 12, back, ThreadExecutor());
  EXPECT_TRUE(back == in);
}

TEST(ByteTranspose, BadElementSizeIsRefused) {
  Bytes out;
  EXPECT_THROW(bytetranspose::encode(Bytes{1, 2}, 0, out), UsageError);
  EXPECT_THROW(bytetranspose::decode(Bytes{1, 2}, (1u << 24) + 1, out), UsageError);
}

}  // namespace
}  // namespace fz
