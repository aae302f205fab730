#include "diffnb/diffnb.hpp"

#include <gtest/gtest.h>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_checks.hpp"

namespace fz {
namespace {

using testing::kWidths;

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

Bytes encoded(const Bytes& in, unsigned width) { return testing::transformed(diffnb::encode, in, width); }

Bytes decoded(const Bytes& in, unsigned width) { return testing::transformed(diffnb::decode, in, width); }

TEST(Diffnb, RoundTripsEveryStandardInputAtEveryWidth) {
  testing::expect_width_transform_round_trips(diffnb::encode, diffnb::decode, kWidths);
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
  testing::expect_bad_widths_refused(diffnb::encode, diffnb::decode, {0u, 3u, 5u, 6u, 7u, 16u});
}

TEST(Diffnb, ThreadsGiveTheSerialBytes) {
  testing::expect_threads_give_the_serial_bytes(diffnb::encode, diffnb::decode, kWidths);
}

}  // namespace
}  // namespace fz
