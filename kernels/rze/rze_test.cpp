// RZE: round trips on every standard input and word size, the stream format
// pinned by hand-computed examples, and a decoder that survives hostile bytes.
#include "rze/rze.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/blocks.hpp"
#include "elimination/elimination.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/word_coder_checks.hpp"

namespace fz {
namespace {

using testing::bitshuffled_smooth;
using testing::kMiB;
using testing::kWordSizes;
using testing::stored_length;
using testing::stored_size;

const testing::WordCoder kRze{rze::encode, rze::decode};

Bytes encode(const Bytes& in, unsigned word_size) { return kRze.encode(in, word_size); }

Bytes decode(const Bytes& in, unsigned word_size, size_t max_out = 64 * kMiB) {
  return kRze.decode(in, word_size, max_out);
}

TEST(Rze, RoundTripsStandardInputsAtEveryWordSize) {
  testing::expect_word_coder_round_trips(kRze);
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
  testing::expect_random_data_stored_raw(kRze);
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
  const std::vector<Bytes> inputs = {bitshuffled_smooth(2 * kMiB + 3), testing::random_bytes(kMiB + 1, 3),
                                     testing::read_field("vorticity.512_512")};
  testing::expect_threads_give_the_same_bytes(kRze, inputs);
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
  testing::expect_bad_word_sizes_refused(kRze, {0u, 3u, 5u, 16u});
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
  Bytes in = bitshuffled_smooth(3 * kBlockBytes);
  in.resize(in.size() - 5);
  testing::expect_every_truncation_refused(kRze, in);
}

TEST(Rze, BitFlipsGiveAnErrorOrACorrectLengthOutput) {
  Bytes in = bitshuffled_smooth(8 * kBlockBytes);
  const Bytes field = testing::read_field("wmag91.float");
  in.insert(in.end(), field.begin(), field.begin() + 4 * kBlockBytes + 13);
  testing::expect_bit_flips_give_an_error_or_a_correct_length(kRze, in, 99);
}

}  // namespace
}  // namespace fz
