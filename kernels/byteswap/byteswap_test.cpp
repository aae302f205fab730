#include "byteswap/byteswap.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"

namespace fz {
namespace {

// Hands items to a few threads in whatever order they grab them.
class ThreadExecutor final : public Executor {
 public:
  explicit ThreadExecutor(unsigned threads) : threads_(threads) {}
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    std::atomic<size_t> next{0};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads_; ++t)
      pool.emplace_back([&] {
        for (size_t i = next++; i < count; i = next++) {
          try {
            body(i);
          } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
          }
        }
      });
    for (auto& thread : pool) thread.join();
    if (first_error) std::rethrow_exception(first_error);
  }
  unsigned concurrency() const override { return threads_; }

 private:
  unsigned threads_;
};

constexpr unsigned kWidths[] = {1, 2, 4, 8};

const std::vector<testing::NamedInput>& inputs() {
  static const std::vector<testing::NamedInput> all = testing::standard_inputs();
  return all;
}

Bytes swapped(const Bytes& in, unsigned width, const Executor& exec = serial_executor()) {
  Bytes out{1, 2, 3};
  byteswap::apply(in, width, out, exec);
  return out;
}

TEST(Byteswap, IsItsOwnInverseOnEveryStandardInput) {
  for (unsigned width : kWidths)
    for (const auto& input : inputs()) {
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      const Bytes once = swapped(input.bytes, width);
      ASSERT_EQ(once.size(), input.bytes.size());
      ASSERT_EQ(swapped(once, width), input.bytes);
    }
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
  const Bytes in(64, 1);
  Bytes out;
  for (unsigned width : {0u, 3u, 5u, 6u, 7u, 9u, 16u}) EXPECT_THROW(byteswap::apply(in, width, out), UsageError);
}

TEST(Byteswap, ThreadsGiveTheSerialBytes) {
  const ThreadExecutor threads(4);
  for (unsigned width : kWidths)
    for (const auto& input : inputs()) {
      if (input.bytes.size() < 2 * kBlockBytes) continue;
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      ASSERT_EQ(swapped(input.bytes, width, threads), swapped(input.bytes, width));
    }
}

}  // namespace
}  // namespace fz
