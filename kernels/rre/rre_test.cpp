// RRE: round trips on every standard input and word size, the stream format
// pinned by hand-computed examples, and a decoder that survives hostile bytes.
#include "rre/rre.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "common/blocks.hpp"
#include "common/elimination.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"

namespace fz {
namespace {

constexpr unsigned kWordSizes[] = {1, 2, 4, 8};
constexpr size_t kMiB = size_t{1} << 20;

// A real thread pool is not needed to prove thread-count independence: a few
// threads pulling item indices from a shared counter give a scheduling order
// that differs from the serial one.
class ThreadExecutor final : public Executor {
 public:
  explicit ThreadExecutor(unsigned threads) : threads_(threads) {}
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    std::atomic<size_t> next{0};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads_; ++t) {
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < count;) {
          try {
            body(i);
          } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
          }
        }
      });
    }
    for (auto& thread : pool) thread.join();
    if (first_error) std::rethrow_exception(first_error);
  }
  unsigned concurrency() const override { return threads_; }

 private:
  unsigned threads_;
};

Bytes encode(const Bytes& in, unsigned word_size, const Executor& exec = serial_executor()) {
  Bytes out;
  rre::encode(in, word_size, out, exec);
  return out;
}

Bytes decode(const Bytes& in, unsigned word_size, size_t max_out = 64 * kMiB,
             const Executor& exec = serial_executor()) {
  Bytes out;
  rre::decode(in, word_size, out, max_out, exec);
  return out;
}

uint64_t stored_length(const Bytes& stream) { return load_le<uint64_t>(stream.data()); }
uint16_t stored_size(const Bytes& stream, size_t chunk) { return load_le<uint16_t>(stream.data() + 8 + 2 * chunk); }

// What RZE sees in the lossless presets: deltas of a smooth signal, zigzagged,
// then bit-shuffled (plane q of each 32-word group holds bit q of its words),
// so the high planes are all zero.
Bytes bitshuffled_smooth(size_t n) {
  const Bytes smooth = testing::smooth_words(n, 4, 7);
  Bytes out(n, 0);
  const size_t groups = n / 128;
  uint32_t previous = 0;
  for (size_t g = 0; g < groups; ++g) {
    uint32_t planes[32] = {};
    for (unsigned j = 0; j < 32; ++j) {
      const uint32_t value = load_le<uint32_t>(smooth.data() + (g * 32 + j) * 4);
      const int32_t delta = static_cast<int32_t>(value - previous);
      previous = value;
      const uint32_t zigzag = (static_cast<uint32_t>(delta) << 1) ^ static_cast<uint32_t>(delta >> 31);
      for (unsigned q = 0; q < 32; ++q) planes[q] |= ((zigzag >> q) & 1u) << j;
    }
    for (unsigned q = 0; q < 32; ++q) store_le<uint32_t>(out.data() + g * 128 + q * 4, planes[q]);
  }
  return out;
}

// A smooth field after coarse quantization: each 4-byte value repeats for a
// run of words before it steps, which is what RRE_4 is for.
Bytes stepped_words(size_t n) {
  Bytes out(n, 0);
  for (size_t i = 0; i + 4 <= n; i += 4) store_le<uint32_t>(out.data() + i, static_cast<uint32_t>(1000 + i / 148));
  return out;
}

TEST(Rre, RoundTripsStandardInputsAtEveryWordSize) {
  for (const auto& input : testing::standard_inputs()) {
    for (unsigned k : kWordSizes) {
      SCOPED_TRACE(input.name + " k=" + std::to_string(k));
      const Bytes coded = encode(input.bytes, k);
      ASSERT_EQ(stored_length(coded), input.bytes.size());
      ASSERT_EQ(decode(coded, k, input.bytes.size()), input.bytes);
    }
  }
}

TEST(Rre, EmptyInputIsJustTheLength) {
  const Bytes coded = encode({}, 4);
  EXPECT_EQ(coded, Bytes(8, 0));
  EXPECT_TRUE(decode(coded, 4).empty());
}

TEST(Rre, AllZeroSubchunkCodesToItsTopBitmap) {
  // The word before the first counts as 0, so zeros are all repeats.
  const Bytes coded = encode(testing::zero_bytes(kBlockBytes), 1);
  const Bytes expected = {0x00, 0x40, 0, 0, 0, 0, 0, 0, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(coded, expected);
  const size_t top_bytes[] = {4, 2, 8, 4};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(encode(testing::zero_bytes(kBlockBytes), kWordSizes[i]).size(), 10 + top_bytes[i]);
  }
}

TEST(Rre, ConstantSubchunkGivesKnownBytes) {
  // k=1, 16384 bytes of 0x3C: only word 0 is kept. Every bitmap level then
  // holds one non-zero first byte (01, then 03, 03, 03) followed by zeros,
  // so each K_l keeps that byte and the zero after it.
  const Bytes coded = encode(testing::constant_bytes(kBlockBytes, 0x3C), 1);
  const Bytes expected = {0x00, 0x40, 0, 0, 0, 0, 0, 0,  // n = 16384
                          11, 0,                         // size[0]
                          0x03, 0x00, 0x00, 0x00,        // B_3 (32 bits of B_2)
                          0x03, 0x00,                    // K_2
                          0x03, 0x00,                    // K_1
                          0x01, 0x00,                    // K_0
                          0x3C};                         // the kept word
  EXPECT_EQ(coded, expected);
  EXPECT_EQ(decode(expected, 1), testing::constant_bytes(kBlockBytes, 0x3C));
}

TEST(Rre, ShortInputGivesKnownBytes) {
  // k=2, words 5 5 5 7 7 0 0 0 0 0 and one leftover byte 0xAB:
  // kept words 0 (5), 3 (7), 5 (0) -> B_0 = 29 00.
  Bytes in;
  for (uint16_t w : {5, 5, 5, 7, 7, 0, 0, 0, 0, 0}) append_le<uint16_t>(in, w);
  in.push_back(0xAB);
  const Bytes expected = {21, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0x29, 0x00, 0x05, 0x00, 0x07, 0x00, 0x00, 0x00, 0xAB};
  EXPECT_EQ(encode(in, 2), expected);
  EXPECT_EQ(decode(expected, 2), in);
}

TEST(Rre, EachSubchunkStartsFromZero) {
  // The second sub-chunk (one byte 0x3C) is not a repeat of the first's last
  // byte: its previous word is 0, coding it would take 2 bytes, so it is raw.
  const Bytes coded = encode(testing::constant_bytes(kBlockBytes + 1, 0x3C), 1);
  EXPECT_EQ(stored_size(coded, 0), 11);
  EXPECT_EQ(stored_size(coded, 1), 1);
  EXPECT_EQ(coded.back(), 0x3C);
}

TEST(Rre, RandomDataIsStoredRaw) {
  for (unsigned k : kWordSizes) {
    const Bytes in = testing::random_bytes(3 * kBlockBytes + 100, 42 + k);
    const Bytes coded = encode(in, k);
    const size_t chunks = block_count(in.size());
    ASSERT_EQ(coded.size(), 8 + 2 * chunks + in.size());
    for (size_t i = 0; i < chunks; ++i) EXPECT_EQ(stored_size(coded, i), block_length(in.size(), i));
    EXPECT_TRUE(std::equal(in.begin(), in.end(), coded.begin() + 8 + 2 * chunks));
  }
}

TEST(Rre, ConstantZeroAndSteppedDataShrink) {
  const size_t n = 3 * kMiB;
  for (unsigned k : kWordSizes) {
    EXPECT_LT(encode(testing::zero_bytes(n), k).size(), n / 1000) << "k=" << k;
    EXPECT_LT(encode(testing::constant_bytes(n, 0x3C), k).size(), n / 500) << "k=" << k;
  }
  const Bytes stepped = stepped_words(n);
  const Bytes coded = encode(stepped, 4);
  EXPECT_LT(coded.size(), n / 20) << "stepped data, k=4";
  EXPECT_EQ(decode(coded, 4), stepped);
  EXPECT_LT(encode(bitshuffled_smooth(n), 1).size(), n / 3) << "bit-shuffled smooth data, k=1";
}

TEST(Rre, ThreadedExecutorGivesTheSameBytes) {
  const ThreadExecutor threads(4);
  std::vector<Bytes> inputs = {stepped_words(2 * kMiB + 3), testing::random_bytes(kMiB + 1, 3),
                               testing::read_field("vorticity.512_512")};
  for (const auto& in : inputs) {
    for (unsigned k : kWordSizes) {
      const Bytes serial = encode(in, k);
      EXPECT_EQ(encode(in, k, threads), serial);
      EXPECT_EQ(decode(serial, k, in.size(), threads), in);
    }
  }
}

TEST(Rre, MaxOutSmallerThanTheLengthIsRefused) {
  const Bytes in = testing::constant_bytes(5000, 7);
  const Bytes coded = encode(in, 1);
  EXPECT_THROW(decode(coded, 1, 4999), FormatError);
  EXPECT_EQ(decode(coded, 1, 5000), in);
  Bytes huge(8, 0xFF);
  EXPECT_THROW(decode(huge, 1, SIZE_MAX), FormatError);
}

TEST(Rre, BadWordSizeIsAUsageError) {
  Bytes out;
  for (unsigned k : {0u, 3u, 6u, 32u}) {
    EXPECT_THROW(rre::encode(Bytes(10, 0), k, out), UsageError);
    EXPECT_THROW(rre::decode(Bytes(8, 0), k, out, 100), UsageError);
  }
}

TEST(Rre, InconsistentStreamsAreFormatErrors) {
  const Bytes good = {21, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0x29, 0x00, 0x05, 0x00, 0x07, 0x00, 0x00, 0x00, 0xAB};
  ASSERT_NO_THROW(decode(good, 2));
  auto rejects = [](Bytes stream) { EXPECT_THROW(decode(stream, 2), FormatError); };
  Bytes b = good;
  b[11] = 0x04;  // B_0 padding bit (bit 10 of 10 bits)
  rejects(b);
  b = good;
  b[10] = 0x2B;  // one more kept word than the payload holds
  rejects(b);
  b = good;
  b.pop_back();  // payload shorter than the size table says
  rejects(b);
  b = good;
  b[8] = 22;  // size larger than the sub-chunk
  rejects(b);
}

TEST(Rre, EveryTruncationIsRefused) {
  for (unsigned k : kWordSizes) {
    Bytes in = stepped_words(3 * kBlockBytes);
    in.resize(in.size() - 3);
    const Bytes coded = encode(in, k);
    ASSERT_EQ(decode(coded, k), in);
    for (size_t len = 0; len < coded.size(); ++len) {
      Bytes cut(coded.begin(), coded.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_THROW(decode(cut, k), FormatError) << "k=" << k << " length " << len;
    }
  }
}

TEST(Rre, BitFlipsGiveAnErrorOrACorrectLengthOutput) {
  std::mt19937_64 rng(98);
  Bytes in = stepped_words(8 * kBlockBytes);
  const Bytes shuffled = bitshuffled_smooth(4 * kBlockBytes);
  in.insert(in.end(), shuffled.begin(), shuffled.end());
  const Bytes field = testing::read_field("pressure.384_384.f64");
  in.insert(in.end(), field.begin(), field.begin() + 2 * kBlockBytes + 13);
  for (unsigned k : kWordSizes) {
    const Bytes coded = encode(in, k);
    size_t errors = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes hostile = coded;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        const size_t at = (rng() % 4 == 0) ? rng() % std::min<size_t>(hostile.size(), 40) : rng() % hostile.size();
        hostile[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      try {
        const Bytes out = decode(hostile, k, 4 * kMiB);
        EXPECT_EQ(out.size(), stored_length(hostile));
      } catch (const FormatError&) {
        ++errors;
      }
    }
    EXPECT_GT(errors, 0u) << "k=" << k;
  }
}

}  // namespace
}  // namespace fz
