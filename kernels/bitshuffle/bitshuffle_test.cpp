#include "bitshuffle/bitshuffle.hpp"

#include <gtest/gtest.h>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_checks.hpp"

namespace fz {
namespace {

using testing::kWidths;

// The header's definition, bit by bit: bit j of byte g of plane q = bit q of word 8g + j.
Bytes reference_encode(const Bytes& in, unsigned width) {
  Bytes out = in;
  for (size_t begin = 0; begin < in.size(); begin += kBlockBytes) {
    const size_t length = std::min(kBlockBytes, in.size() - begin);
    const size_t m = length / width / 8 * 8;
    const size_t plane_bytes = m / 8;
    for (size_t q = 0; q < 8 * width; ++q)
      for (size_t g = 0; g < plane_bytes; ++g) {
        uint8_t byte = 0;
        for (size_t j = 0; j < 8; ++j) {
          const size_t word = 8 * g + j;
          const unsigned bit = (in[begin + word * width + q / 8] >> (q % 8)) & 1u;
          byte = static_cast<uint8_t>(byte | bit << j);
        }
        out[begin + q * plane_bytes + g] = byte;
      }
  }
  return out;
}

Bytes encoded(const Bytes& in, unsigned width) { return testing::transformed(bitshuffle::encode, in, width); }

Bytes decoded(const Bytes& in, unsigned width) { return testing::transformed(bitshuffle::decode, in, width); }

TEST(Bitshuffle, RoundTripsEveryStandardInputAtEveryWidth) {
  testing::expect_width_transform_round_trips(bitshuffle::encode, bitshuffle::decode, kWidths);
}

TEST(Bitshuffle, MatchesBitByBitDefinition) {
  for (unsigned width : kWidths)
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{63}, size_t{64}, size_t{72},
                        size_t{520}, size_t{1000}, size_t{16383}, size_t{16384}, size_t{16385},
                        size_t{3 * 16384 + 77}}) {
      SCOPED_TRACE("width " + std::to_string(width) + " size " + std::to_string(size));
      const Bytes in = testing::random_bytes(size, size * 8 + width);
      EXPECT_EQ(encoded(in, width), reference_encode(in, width));
    }
}

TEST(Bitshuffle, Width1KnownPlanes) {
  // Bytes 0xFF,0,..: word 0 has every bit, so bit 0 of every plane is set.
  // Then 8 bytes 0x01: only plane 0 is set, in all 8 positions. Two bytes stay as they are.
  const Bytes in = {0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0xAB, 0xCD};
  const Bytes expected = {0x01, 0xFF, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00,
                          0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0xAB, 0xCD};
  EXPECT_EQ(encoded(in, 1), expected);
  EXPECT_EQ(decoded(expected, 1), in);
}

TEST(Bitshuffle, Width2KnownPlanes) {
  // Words 0..7 then eight 0xFFFF: plane 0 = {0xAA, 0xFF}, plane 1 = {0xCC, 0xFF},
  // plane 2 = {0xF0, 0xFF}, planes 3..15 = {0x00, 0xFF}; one trailing byte copied.
  Bytes in;
  for (uint16_t w = 0; w < 8; ++w) append_le<uint16_t>(in, w);
  for (int i = 0; i < 8; ++i) append_le<uint16_t>(in, 0xFFFF);
  in.push_back(0x5A);
  Bytes expected = {0xAA, 0xFF, 0xCC, 0xFF, 0xF0, 0xFF};
  for (int q = 3; q < 16; ++q) expected.insert(expected.end(), {0x00, 0xFF});
  expected.push_back(0x5A);
  EXPECT_EQ(encoded(in, 2), expected);
  EXPECT_EQ(decoded(expected, 2), in);
}

TEST(Bitshuffle, Width4KnownPlanesAndTail) {
  // Words j = 0..7 with the top bit of word 0 set, then 7 words that are not
  // transposed (fewer than 8) and are copied: plane 0 = 0xAA, 1 = 0xCC, 2 = 0xF0, 31 = 0x01.
  Bytes in;
  for (uint32_t j = 0; j < 8; ++j) append_le<uint32_t>(in, j == 0 ? 0x80000000u : j);
  for (uint32_t j = 0; j < 7; ++j) append_le<uint32_t>(in, 0x01020304u * (j + 1));
  Bytes expected(32, 0);
  expected[0] = 0xAA;
  expected[1] = 0xCC;
  expected[2] = 0xF0;
  expected[31] = 0x01;
  expected.insert(expected.end(), in.begin() + 32, in.end());
  EXPECT_EQ(encoded(in, 4), expected);
  EXPECT_EQ(decoded(expected, 4), in);
}

TEST(Bitshuffle, Width8KnownPlanes) {
  // Word 3 = 1 << 63 only: plane 63 = 0x08, everything else zero.
  Bytes in(64, 0);
  in[3 * 8 + 7] = 0x80;
  Bytes expected(64, 0);
  expected[63] = 0x08;
  EXPECT_EQ(encoded(in, 8), expected);
  EXPECT_EQ(decoded(expected, 8), in);
}

TEST(Bitshuffle, BlocksAreCodedIndependently) {
  const Bytes in = testing::random_bytes(2 * kBlockBytes + 1000, 7);
  for (unsigned width : kWidths) {
    const Bytes whole = encoded(in, width);
    for (size_t block = 0; block < block_count(in.size()); ++block) {
      const size_t begin = block * kBlockBytes;
      const Bytes piece(in.begin() + begin, in.begin() + begin + block_length(in.size(), block));
      const Bytes coded = encoded(piece, width);
      EXPECT_TRUE(std::equal(coded.begin(), coded.end(), whole.begin() + begin)) << "width " << width;
    }
  }
}

TEST(Bitshuffle, RejectsBadWidths) {
  testing::expect_bad_widths_refused(bitshuffle::encode, bitshuffle::decode, {0u, 3u, 5u, 6u, 7u, 16u, 1000u});
}

TEST(Bitshuffle, ThreadsGiveTheSerialBytes) {
  testing::expect_threads_give_the_serial_bytes(bitshuffle::encode, bitshuffle::decode, kWidths);
}

}  // namespace
}  // namespace fz
