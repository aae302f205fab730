// RZE: round trips on every standard input and word size, the stream format
// pinned by hand-computed examples, and a decoder that survives hostile bytes.
#include "rze/rze.hpp"

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
  rze::encode(in, word_size, out, exec);
  return out;
}

Bytes decode(const Bytes& in, unsigned word_size, size_t max_out = 64 * kMiB,
             const Executor& exec = serial_executor()) {
  Bytes out;
  rze::decode(in, word_size, out, max_out, exec);
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

TEST(Rze, RoundTripsStandardInputsAtEveryWordSize) {
  for (const auto& input : testing::standard_inputs()) {
    for (unsigned k : kWordSizes) {
      SCOPED_TRACE(input.name + " k=" + std::to_string(k));
      const Bytes coded = encode(input.bytes, k);
      ASSERT_EQ(stored_length(coded), input.bytes.size());
      ASSERT_EQ(decode(coded, k, input.bytes.size()), input.bytes);
    }
  }
}

TEST(Rze, EmptyInputIsJustTheLength) {
  const Bytes coded = encode({}, 1);
  EXPECT_EQ(coded, Bytes(8, 0));
  EXPECT_TRUE(decode(coded, 1).empty());
}

TEST(Rze, AllZeroSubchunkCodesToItsTopBitmap) {
  // k=1: 16384 words -> bitmaps of 2048, 256, 32 and 4 bytes; every level is
  // zero, so nothing is kept and only the 4-byte top level remains.
  const Bytes coded = encode(testing::zero_bytes(kBlockBytes), 1);
  const Bytes expected = {0x00, 0x40, 0, 0, 0, 0, 0, 0,  // n = 16384
                          0x04, 0x00,                    // size[0] = 4
                          0x00, 0x00, 0x00, 0x00};       // B_3
  EXPECT_EQ(coded, expected);
  // Top level bytes: k=2 1024 -> 128 -> 16 -> 2; k=4 512 -> 64 -> 8 (8 is not
  // thinned further); k=8 256 -> 32 -> 4.
  const size_t top_bytes[] = {4, 2, 8, 4};
  for (size_t i = 0; i < 4; ++i) {
    const Bytes c = encode(testing::zero_bytes(kBlockBytes), kWordSizes[i]);
    EXPECT_EQ(stored_size(c, 0), top_bytes[i]) << "k=" << kWordSizes[i];
    EXPECT_EQ(c.size(), 10 + top_bytes[i]);
  }
}

TEST(Rze, ShortInputGivesKnownBytes) {
  // 16 bytes, k=1: B_0 = 02 80 (words 1 and 15 kept), then the kept words.
  Bytes in(16, 0);
  in[1] = 0x05;
  in[15] = 0x07;
  const Bytes expected = {16, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0x02, 0x80, 0x05, 0x07};
  EXPECT_EQ(encode(in, 1), expected);
  EXPECT_EQ(decode(expected, 1), in);
}

TEST(Rze, TwoLevelInputGivesKnownBytes) {
  // 100 bytes, k=1, only bytes 0 (0x11) and 99 (0x22) non-zero.
  //   B_0 = 01 00 00 00 00 00 00 00 00 00 00 00 08 (13 bytes > 8: thin it)
  //   K_0 = 01 00 08 (byte 1 differs from byte 0, bytes 2..11 repeat byte 1)
  //   B_1 = 03 10 (bits 0, 1, 12)
  Bytes in(100, 0);
  in[0] = 0x11;
  in[99] = 0x22;
  const Bytes expected = {100, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0x03, 0x10, 0x01, 0x00, 0x08, 0x11, 0x22};
  EXPECT_EQ(encode(in, 1), expected);
  EXPECT_EQ(decode(expected, 1), in);
}

TEST(Rze, WiderWordsKeepLeftoverBytesAtTheEnd) {
  // k=4, 10 bytes: two words (0, 0x04030201) and two leftover bytes.
  const Bytes in = {0, 0, 0, 0, 1, 2, 3, 4, 0xAA, 0xBB};
  const Bytes expected = {10, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0x02, 1, 2, 3, 4, 0xAA, 0xBB};
  EXPECT_EQ(encode(in, 4), expected);
  EXPECT_EQ(decode(expected, 4), in);
}

TEST(Rze, RandomDataIsStoredRaw) {
  for (unsigned k : kWordSizes) {
    const Bytes in = testing::random_bytes(3 * kBlockBytes + 100, 42 + k);
    const Bytes coded = encode(in, k);
    const size_t chunks = block_count(in.size());
    ASSERT_EQ(coded.size(), 8 + 2 * chunks + in.size());
    for (size_t i = 0; i < chunks; ++i) EXPECT_EQ(stored_size(coded, i), block_length(in.size(), i));
    EXPECT_TRUE(std::equal(in.begin(), in.end(), coded.begin() + 8 + 2 * chunks));
  }
  // Inputs shorter than a word cannot be coded at all.
  const Bytes seven(7, 0);
  EXPECT_EQ(stored_size(encode(seven, 8), 0), 7);
}

TEST(Rze, CodingNeverStoresASizeEqualToTheInputUnlessRaw) {
  // A sub-chunk is coded only if strictly smaller: a sub-chunk whose coded
  // form would be exactly its length must go raw. 9 bytes, k=1, all non-zero
  // except one: coded = 2 bitmap bytes + 8 kept = 10 > 9 -> raw.
  Bytes in(9, 0x33);
  in[4] = 0;
  const Bytes coded = encode(in, 1);
  EXPECT_EQ(stored_size(coded, 0), 9);
}

TEST(Rze, ZeroAndSparseDataShrink) {
  const size_t n = 3 * kMiB;
  for (unsigned k : kWordSizes) {
    EXPECT_LT(encode(testing::zero_bytes(n), k).size(), n / 1000) << "k=" << k;
  }
  const Bytes shuffled = bitshuffled_smooth(n);
  const size_t coded = encode(shuffled, 1).size();
  EXPECT_LT(coded, n / 4) << "bit-shuffled smooth data, k=1";
  EXPECT_EQ(decode(encode(shuffled, 1), 1), shuffled);
}

TEST(Rze, ThreadedExecutorGivesTheSameBytes) {
  const ThreadExecutor threads(4);
  std::vector<Bytes> inputs = {bitshuffled_smooth(2 * kMiB + 3), testing::random_bytes(kMiB + 1, 3),
                               testing::read_field("vorticity.512_512")};
  for (const auto& in : inputs) {
    for (unsigned k : kWordSizes) {
      const Bytes serial = encode(in, k);
      EXPECT_EQ(encode(in, k, threads), serial);
      EXPECT_EQ(decode(serial, k, in.size(), threads), in);
    }
  }
}

TEST(Rze, MaxOutSmallerThanTheLengthIsRefused) {
  const Bytes in = testing::zero_bytes(1000);
  const Bytes coded = encode(in, 1);
  EXPECT_THROW(decode(coded, 1, 999), FormatError);
  EXPECT_EQ(decode(coded, 1, 1000), in);
  // A hostile length with no table behind it is refused before any allocation.
  Bytes huge(8, 0xFF);
  EXPECT_THROW(decode(huge, 1, SIZE_MAX), FormatError);
}

TEST(Rze, BadWordSizeIsAUsageError) {
  Bytes out;
  for (unsigned k : {0u, 3u, 5u, 16u}) {
    EXPECT_THROW(rze::encode(Bytes(10, 0), k, out), UsageError);
    EXPECT_THROW(rze::decode(Bytes(8, 0), k, out, 100), UsageError);
  }
}

TEST(Rze, InconsistentStreamsAreFormatErrors) {
  const Bytes good = {100, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0x03, 0x10, 0x01, 0x00, 0x08, 0x11, 0x22};
  ASSERT_NO_THROW(decode(good, 1));
  auto rejects = [](Bytes stream) { EXPECT_THROW(decode(stream, 1), FormatError); };
  Bytes b = good;
  b[11] = 0x30;  // B_1 padding bit (bit 13 of 13 bits)
  rejects(b);
  b = good;
  b.push_back(0);  // trailing byte
  rejects(b);
  b = good;
  b[8] = 101;  // size larger than the sub-chunk
  rejects(b);
  b = good;
  b[14] = 0x18;  // B_0 padding bit (bit 100 of 100) set in its last byte
  rejects(b);
  b = good;
  b[10] = 0x07;  // B_1 popcount one more than the kept bytes that follow allow
  rejects(b);
  // size == osize means raw: a raw sub-chunk decodes to its bytes unchanged.
  Bytes raw = {3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 9, 8, 7};
  EXPECT_EQ(decode(raw, 1), Bytes({9, 8, 7}));
  raw[8] = 2;  // the size table no longer adds up to the payload length
  rejects(raw);
  rejects(Bytes(7, 0));  // header truncated
}

TEST(Rze, EveryTruncationIsRefused) {
  for (unsigned k : kWordSizes) {
    Bytes in = bitshuffled_smooth(3 * kBlockBytes);
    in.resize(in.size() - 5);
    const Bytes coded = encode(in, k);
    ASSERT_EQ(decode(coded, k), in);
    for (size_t len = 0; len < coded.size(); ++len) {
      Bytes cut(coded.begin(), coded.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_THROW(decode(cut, k), FormatError) << "k=" << k << " length " << len;
    }
  }
}

TEST(Rze, BitFlipsGiveAnErrorOrACorrectLengthOutput) {
  std::mt19937_64 rng(99);
  Bytes in = bitshuffled_smooth(8 * kBlockBytes);
  const Bytes field = testing::read_field("wmag91.float");
  in.insert(in.end(), field.begin(), field.begin() + 4 * kBlockBytes + 13);
  for (unsigned k : kWordSizes) {
    const Bytes coded = encode(in, k);
    size_t errors = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes hostile = coded;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        // Mostly the payload, sometimes the header and size table.
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
