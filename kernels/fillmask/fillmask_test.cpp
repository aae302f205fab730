#include "fillmask/fillmask.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz {
namespace {

constexpr unsigned kAllWidths[] = {1, 2, 4, 8};

uint64_t word_at(const Bytes& b, size_t i, unsigned width) {
  uint64_t w = 0;
  for (unsigned k = 0; k < width; ++k) w |= uint64_t{b[i * width + k]} << (8 * k);
  return w;
}

void put_word(Bytes& b, size_t i, unsigned width, uint64_t w) {
  for (unsigned k = 0; k < width; ++k) b[i * width + k] = static_cast<uint8_t>(w >> (8 * k));
}

uint64_t low_bits(uint64_t v, unsigned width) { return width == 8 ? v : v & ((uint64_t{1} << (8 * width)) - 1); }

// The header's definition, element by element in linear order.
fillmask::Streams reference_encode(const Bytes& in, unsigned width, uint64_t fill) {
  const size_t n = in.size() / width;
  fillmask::Streams s;
  s.values = in;
  s.mask.assign((n + 7) / 8, 0);
  uint64_t carry = 0;
  for (size_t i = 0; i < n; ++i)
    if (word_at(in, i, width) != fill) {
      carry = word_at(in, i, width);
      break;
    }
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = word_at(in, i, width);
    if (x == fill) {
      s.mask[i / 8] = static_cast<uint8_t>(s.mask[i / 8] | (1u << (i % 8)));
      put_word(s.values, i, width, carry);
    } else {
      carry = x;
    }
  }
  return s;
}

fillmask::Streams encoded(const Bytes& in, unsigned width, uint64_t fill, const Executor& exec = serial_executor()) {
  fillmask::Streams s;
  s.values = {9, 9, 9};  // stale bytes must not survive
  s.mask = {7};
  fillmask::encode(in, width, fill, s, exec);
  return s;
}

Bytes decoded(const fillmask::Streams& s, unsigned width, uint64_t fill, const Executor& exec = serial_executor()) {
  Bytes out{1, 2, 3};
  fillmask::decode(s.values, s.mask, width, fill, out, s.values.size(), exec);
  return out;
}

size_t popcount(const Bytes& mask) {
  size_t c = 0;
  for (uint8_t b : mask) c += static_cast<size_t>(__builtin_popcount(b));
  return c;
}

// Encodes, compares with the reference, decodes, and checks the round trip.
void expect_round_trip(const Bytes& in, unsigned width, uint64_t fill) {
  const fillmask::Streams s = encoded(in, width, fill);
  const fillmask::Streams r = reference_encode(in, width, fill);
  ASSERT_EQ(s.mask, r.mask);
  ASSERT_EQ(s.values, r.values);
  ASSERT_EQ(decoded(s, width, fill), in);
}

Bytes whole_words(const Bytes& b, unsigned width) { return Bytes(b.begin(), b.begin() + b.size() / width * width); }

TEST(Fillmask, KnownExample) {
  const uint32_t F = 0xF7F684DF;  // -1e34f
  float neg;
  const float minus = -1e34f;
  std::memcpy(&neg, &minus, 4);
  uint32_t check;
  std::memcpy(&check, &neg, 4);
  ASSERT_EQ(check, F);
  const uint32_t a = 0x3FC00000, b = 0x40000000, c = 0x40200000, d = 0x40400000;  // 1.5 2.0 2.5 3.0
  Bytes in;
  for (uint32_t w : {F, F, a, F, b, c, F, F, F, d}) append_le<uint32_t>(in, w);
  const fillmask::Streams s = encoded(in, 4, F);
  EXPECT_EQ(s.mask, (Bytes{0xCB, 0x01}));
  const Bytes values = {0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00,
                        0xC0, 0x3F, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x20, 0x40, 0x00, 0x00, 0x20, 0x40,
                        0x00, 0x00, 0x20, 0x40, 0x00, 0x00, 0x20, 0x40, 0x00, 0x00, 0x40, 0x40};
  EXPECT_EQ(s.values, values);
  EXPECT_EQ(decoded(s, 4, F), in);
}

TEST(Fillmask, KnownSmallCases) {
  // Width 1, fill 0xAA: all fill -> zeros; none -> copy; empty -> empty.
  fillmask::Streams s = encoded(Bytes{0xAA, 0xAA, 0xAA}, 1, 0xAA);
  EXPECT_EQ(s.mask, Bytes{0x07});
  EXPECT_EQ(s.values, (Bytes{0, 0, 0}));
  s = encoded(Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, 0xAA);
  EXPECT_EQ(s.mask, (Bytes{0, 0}));
  EXPECT_EQ(s.values, (Bytes{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  s = encoded(Bytes{}, 4, 0);
  EXPECT_TRUE(s.mask.empty());
  EXPECT_TRUE(s.values.empty());
  EXPECT_TRUE(decoded(s, 4, 0).empty());
  // Width 2, fill 0xFFFF: 8 elements exactly one mask byte.
  Bytes in;
  for (uint16_t w : {0xFFFF, 0x0010, 0xFFFF, 0xFFFF, 0x0020, 0x0030, 0xFFFF, 0xFFFF}) append_le<uint16_t>(in, w);
  s = encoded(in, 2, 0xFFFF);
  EXPECT_EQ(s.mask, Bytes{0xCD});
  Bytes values;
  for (uint16_t w : {0x10, 0x10, 0x10, 0x10, 0x20, 0x30, 0x30, 0x30}) append_le<uint16_t>(values, w);
  EXPECT_EQ(s.values, values);
}

TEST(Fillmask, RoundTripsStandardInputs) {
  for (const auto& input : testing::standard_inputs())
    for (unsigned width : kAllWidths) {
      const Bytes in = whole_words(input.bytes, width);
      const size_t n = in.size() / width;
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      // A fill matching nothing (most likely), the first element (all of a
      // constant input), and the middle element (some).
      std::vector<uint64_t> fills = {low_bits(0x7FF8DEADBEEF1234ull, width)};
      if (n > 0) {
        fills.push_back(word_at(in, 0, width));
        fills.push_back(word_at(in, n / 2, width));
      }
      for (uint64_t fill : fills) {
        SCOPED_TRACE("fill " + std::to_string(fill));
        expect_round_trip(in, width, fill);
      }
    }
}

// Smooth data with a land mask: `fraction` of the elements become fill, in
// runs of about `run` elements (run 1: scattered).
Bytes masked_smooth(size_t n, unsigned width, uint64_t fill, double fraction, size_t run, uint64_t seed) {
  Bytes in = testing::smooth_words(n * width, width, seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  size_t i = 0;
  while (i < n) {
    const bool land = u(rng) < fraction;
    const size_t len = run == 1 ? 1 : 1 + rng() % (2 * run);
    for (size_t k = 0; k < len && i < n; ++k, ++i)
      if (land) put_word(in, i, width, fill);
  }
  return in;
}

TEST(Fillmask, LandMaskPatterns) {
  for (unsigned width : kAllWidths)
    for (double fraction : {0.0, 0.3, 0.7, 1.0})
      for (size_t run : {size_t{1}, size_t{50}, size_t{5000}})
        for (size_t n : {size_t{1}, size_t{9}, size_t{100000}}) {
          SCOPED_TRACE(std::to_string(width) + " " + std::to_string(fraction) + " " + std::to_string(run) + " " +
                       std::to_string(n));
          const uint64_t fill = low_bits(0xC4FF1234ABCD5678ull, width);
          const Bytes in = masked_smooth(n, width, fill, fraction, run, n + run);
          expect_round_trip(in, width, fill);
          const fillmask::Streams s = encoded(in, width, fill);
          if (fraction == 1.0) {
            EXPECT_EQ(popcount(s.mask), n);
            EXPECT_EQ(s.values, Bytes(in.size(), 0));
          }
          if (fraction == 0.0 && width >= 4) {  // narrow smooth words may hit the fill by chance
            EXPECT_EQ(popcount(s.mask), 0u);
            EXPECT_EQ(s.values, in);
          }
        }
}

TEST(Fillmask, NaNAndNegativeZeroAreBitwise) {
  const uint32_t neg_zero = 0x80000000, pos_zero = 0, qnan = 0x7FC00000, other_nan = 0x7FC00001;
  Bytes in;
  for (uint32_t w : {pos_zero, neg_zero, qnan, other_nan, neg_zero, 0x3F800000u, qnan, pos_zero})
    append_le<uint32_t>(in, w);
  fillmask::Streams s = encoded(in, 4, neg_zero);
  EXPECT_EQ(s.mask, Bytes{0x12});  // elements 1 and 4 only; +0 is not -0
  EXPECT_EQ(decoded(s, 4, neg_zero), in);
  s = encoded(in, 4, qnan);
  EXPECT_EQ(s.mask, Bytes{0x44});  // elements 2 and 6 only; another payload is not the fill
  EXPECT_EQ(decoded(s, 4, qnan), in);
  expect_round_trip(in, 4, neg_zero);
  expect_round_trip(in, 4, qnan);

  Bytes in64;
  const uint64_t nan64 = 0x7FF8000000000000ull, neg_zero64 = 0x8000000000000000ull;
  for (uint64_t w : {nan64, uint64_t{0}, neg_zero64, nan64 | 1, nan64}) append_le<uint64_t>(in64, w);
  s = encoded(in64, 8, nan64);
  EXPECT_EQ(s.mask, Bytes{0x11});
  EXPECT_EQ(load_le<uint64_t>(s.values.data()), 0u);  // leading fill takes the first non-fill (+0)
  EXPECT_EQ(load_le<uint64_t>(s.values.data() + 32), nan64 | 1);
  expect_round_trip(in64, 8, neg_zero64);
  expect_round_trip(in64, 8, nan64);
}

// Real fields with a synthetic land mask: the replaced values hold no fill and
// stay inside the field's non-fill range.
template <typename T>
void check_real_field(const std::string& name, T fill_value, T threshold) {
  SCOPED_TRACE(name);
  Bytes in = testing::read_field(name);
  const size_t n = in.size() / sizeof(T);
  size_t fills = 0;
  T lo = std::numeric_limits<T>::infinity(), hi = -lo;
  for (size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, in.data() + i * sizeof(T), sizeof(T));
    if (x < threshold) {
      std::memcpy(in.data() + i * sizeof(T), &fill_value, sizeof(T));
      ++fills;
    } else {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  ASSERT_GT(fills, 0u);
  ASSERT_LT(fills, n);
  uint64_t fill_bits = 0;
  std::memcpy(&fill_bits, &fill_value, sizeof(T));
  expect_round_trip(in, sizeof(T), fill_bits);
  const fillmask::Streams s = encoded(in, sizeof(T), fill_bits);
  EXPECT_EQ(popcount(s.mask), fills);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, s.values.data() + i * sizeof(T), sizeof(T));
    ASSERT_TRUE(v >= lo && v <= hi) << i;
  }
}

TEST(Fillmask, RealFieldsWithSyntheticMask) {
  check_real_field<float>("wmag91.float", -1e34f, 1.0f);
  check_real_field<float>("999x999.float", -1e10f, 60.0f);
  check_real_field<float>("vorticity.512_512", -1e34f, 0.0f);
  check_real_field<double>("pressure.384_384.f64", -1e34, 0.0);
}

TEST(Fillmask, ThreadsGiveTheSerialBytes) {
  // Whole blocks of fill at the start, in the middle and at the end, so the
  // incoming carry crosses several blocks.
  for (unsigned width : kAllWidths) {
    const size_t per_block = kBlockBytes / width;
    const size_t n = 9 * per_block + 13;
    const uint64_t fill = low_bits(0x5A5A5A5A5A5A5A5Aull, width);
    Bytes in = masked_smooth(n, width, fill, 0.4, 300, width);
    for (size_t i = 0; i < n; ++i)
      if (i < 2 * per_block + 5 || (i >= 4 * per_block - 3 && i < 7 * per_block) || i >= 9 * per_block)
        put_word(in, i, width, fill);
    const fillmask::Streams serial = encoded(in, width, fill);
    const fillmask::Streams r = reference_encode(in, width, fill);
    ASSERT_EQ(serial.values, r.values);
    ASSERT_EQ(serial.mask, r.mask);
    for (unsigned threads : {2u, 3u, 8u}) {
      const testing::ThreadExecutor exec(threads);
      for (int repeat = 0; repeat < 3; ++repeat) {
        const fillmask::Streams s = encoded(in, width, fill, exec);
        ASSERT_EQ(s.values, serial.values) << width << " " << threads;
        ASSERT_EQ(s.mask, serial.mask) << width << " " << threads;
        ASSERT_EQ(decoded(s, width, fill, exec), in);
      }
    }
  }
}

TEST(Fillmask, DecodeIgnoresValuesAtFillPositions) {
  // A lossy stage may change the words at fill positions; the fill comes back.
  Bytes in;
  for (uint32_t w : {7u, 0xFFFFFFFFu, 9u}) append_le<uint32_t>(in, w);
  fillmask::Streams s = encoded(in, 4, 0xFFFFFFFF);
  store_le<uint32_t>(s.values.data() + 4, 12345);
  EXPECT_EQ(decoded(s, 4, 0xFFFFFFFF), in);
}

void expect_format_error(const Bytes& values, const Bytes& mask, unsigned width, size_t max_out) {
  Bytes out;
  EXPECT_THROW(fillmask::decode(values, mask, width, 0, out, max_out), FormatError);
}

TEST(Fillmask, HostileDecode) {
  const Bytes values(40, 1);  // 10 words of 4 bytes
  Bytes out;
  fillmask::decode(values, Bytes{0x01, 0x02}, 4, 0, out, 40);
  EXPECT_EQ(out.size(), 40u);
  expect_format_error(values, Bytes{0x01}, 4, 40);              // truncated mask
  expect_format_error(values, Bytes{}, 4, 40);                  // no mask
  expect_format_error(values, Bytes{0x01, 0x02, 0x00}, 4, 40);  // mask too long
  expect_format_error(values, Bytes{0x01, 0x04}, 4, 40);        // padding bit 2 of the last byte
  expect_format_error(values, Bytes{0x01, 0x80}, 4, 40);        // padding bit 7
  expect_format_error(values, Bytes{0x01, 0x02}, 4, 39);        // over max_out
  expect_format_error(values, Bytes{0x01, 0x02}, 4, 0);
  expect_format_error(Bytes(39, 1), Bytes{0x01, 0x02}, 4, 100);  // partial word
  expect_format_error(Bytes(12, 1), Bytes{0x00, 0x00}, 8, 100);  // 12 % 8
  expect_format_error(Bytes{}, Bytes{0x00}, 4, 100);             // mask for nothing
  // An exactly full last byte has no padding.
  fillmask::decode(Bytes(64, 0), Bytes{0xFF, 0xFF}, 4, 0xFFFFFFFF, out, 64);
  EXPECT_EQ(out, Bytes(64, 0xFF));
}

TEST(Fillmask, RejectsBadParameters) {
  fillmask::Streams s;
  Bytes out;
  for (unsigned width : {0u, 3u, 5u, 16u}) {
    EXPECT_THROW(fillmask::encode(Bytes(48, 0), width, 0, s), UsageError);
    EXPECT_THROW(fillmask::decode(Bytes(48, 0), Bytes(6, 0), width, 0, out, 48), UsageError);
  }
  EXPECT_THROW(fillmask::encode(Bytes(8, 0), 4, uint64_t{1} << 32, s), UsageError);
  EXPECT_THROW(fillmask::encode(Bytes(6, 0), 4, 0, s), UsageError);  // not whole words
  EXPECT_THROW(fillmask::decode(Bytes(8, 0), Bytes{0}, 2, 0x10000, out, 8), UsageError);
}

}  // namespace
}  // namespace fz
