#include "diffnb/diffnb.hpp"

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

// The header's formulas on words of `width` bytes held in 64 bits.
Bytes reference_encode(const Bytes& in, unsigned width) {
  const unsigned bits = 8 * width;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t negabinary = 0xAAAAAAAAAAAAAAAAull & mask;
  Bytes out = in;
  uint64_t previous = 0;
  for (size_t i = 0; i + width <= in.size(); i += width) {
    if (i % kBlockBytes == 0) previous = 0;
    uint64_t w = 0;
    for (unsigned k = 0; k < width; ++k) w |= uint64_t{in[i + k]} << (8 * k);
    const uint64_t d = (w - previous) & mask;
    const uint64_t y = ((d + negabinary) & mask) ^ negabinary;
    for (unsigned k = 0; k < width; ++k) out[i + k] = static_cast<uint8_t>(y >> (8 * k));
    previous = w;
  }
  return out;
}

Bytes encoded(const Bytes& in, unsigned width, const Executor& exec = serial_executor()) {
  Bytes out{1, 2, 3};
  diffnb::encode(in, width, out, exec);
  return out;
}

Bytes decoded(const Bytes& in, unsigned width, const Executor& exec = serial_executor()) {
  Bytes out{1, 2, 3};
  diffnb::decode(in, width, out, exec);
  return out;
}

TEST(Diffnb, RoundTripsEveryStandardInputAtEveryWidth) {
  for (unsigned width : kWidths)
    for (const auto& input : inputs()) {
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      const Bytes coded = encoded(input.bytes, width);
      ASSERT_EQ(coded.size(), input.bytes.size());
      ASSERT_EQ(decoded(coded, width), input.bytes);
    }
}

TEST(Diffnb, MatchesFormula) {
  for (unsigned width : kWidths)
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{16383}, size_t{16385}, size_t{3 * 16384 + 5}}) {
      EXPECT_EQ(encoded(testing::random_bytes(size, size + width), width),
                reference_encode(testing::random_bytes(size, size + width), width))
          << width << " " << size;
      const Bytes smooth = testing::smooth_words(size, width, size);
      EXPECT_EQ(encoded(smooth, width), reference_encode(smooth, width)) << width << " " << size;
    }
}

TEST(Diffnb, KnownBytes) {
  // Words 5, 3, 3, 10: differences 5, -2, 0, 7; negabinary 101, 10, 0, 11011.
  const Bytes in = {5, 3, 3, 10};
  const Bytes out = {0x05, 0x02, 0x00, 0x1B};
  EXPECT_EQ(encoded(in, 1), out);
  EXPECT_EQ(decoded(out, 1), in);
}

TEST(Diffnb, KnownWords32AndTail) {
  // 1000 = 1024 - 32 + 16 - 8 is 0x438 in negabinary; 999 - 1000 = -1 is 0b11.
  Bytes in, out;
  append_le<uint32_t>(in, 1000);
  append_le<uint32_t>(in, 999);
  append_le<uint32_t>(out, 0x438);
  append_le<uint32_t>(out, 3);
  for (uint8_t b : {0xEE, 0xDD}) {  // partial word: copied
    in.push_back(b);
    out.push_back(b);
  }
  EXPECT_EQ(encoded(in, 4), out);
  EXPECT_EQ(decoded(out, 4), in);
}

TEST(Diffnb, KnownWords64) {
  // The first difference is 2^63, i.e. -2^63 mod 2^64, which is the single
  // negabinary digit (-2)^63: 0xAA..A + 2^63 = 0x2A..A, xor 0xAA..A = 0x80..0.
  // The next difference is -1 -> 0b11.
  Bytes in, out;
  append_le<uint64_t>(in, uint64_t{1} << 63);
  append_le<uint64_t>(in, (uint64_t{1} << 63) - 1);
  append_le<uint64_t>(out, 0x8000000000000000ull);
  append_le<uint64_t>(out, 3);
  EXPECT_EQ(encoded(in, 8), out);
  EXPECT_EQ(decoded(out, 8), in);
}

TEST(Diffnb, PredecessorRestartsAtEveryBlock) {
  // Every word of both blocks is 7: only the first word of each block codes 7 (0x1B).
  Bytes in;
  for (size_t i = 0; i < 2 * kBlockBytes / 4; ++i) append_le<uint32_t>(in, 7);
  const Bytes out = encoded(in, 4);
  for (size_t i = 0; i < in.size(); i += 4) {
    const uint32_t expected = i % kBlockBytes == 0 ? 0x1B : 0;
    ASSERT_EQ(load_le<uint32_t>(out.data() + i), expected) << i;
  }
}

TEST(Diffnb, RejectsBadWidths) {
  const Bytes in(64, 1);
  Bytes out;
  for (unsigned width : {0u, 3u, 5u, 6u, 7u, 16u}) {
    EXPECT_THROW(diffnb::encode(in, width, out), UsageError) << width;
    EXPECT_THROW(diffnb::decode(in, width, out), UsageError) << width;
  }
}

TEST(Diffnb, ThreadsGiveTheSerialBytes) {
  const ThreadExecutor threads(4);
  for (unsigned width : kWidths)
    for (const auto& input : inputs()) {
      if (input.bytes.size() < 2 * kBlockBytes) continue;
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      const Bytes serial = encoded(input.bytes, width);
      ASSERT_EQ(encoded(input.bytes, width, threads), serial);
      ASSERT_EQ(decoded(serial, width, threads), input.bytes);
    }
}

}  // namespace
}  // namespace fz
