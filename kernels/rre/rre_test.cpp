// RRE: round trips on every standard input and word size, the stream format
// pinned by hand-computed examples, and a decoder that survives hostile bytes.
#include "rre/rre.hpp"

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

const testing::WordCoder kRre{rre::encode, rre::decode};

Bytes encode(const Bytes& in, unsigned word_size) { return kRre.encode(in, word_size); }

Bytes decode(const Bytes& in, unsigned word_size, size_t max_out = 64 * kMiB) {
  return kRre.decode(in, word_size, max_out);
}

// A smooth field after coarse quantization: each 4-byte value repeats for a
// run of words before it steps, which is what RRE_4 is for.
Bytes stepped_words(size_t n) {
  Bytes out(n, 0);
  for (size_t i = 0; i + 4 <= n; i += 4) store_le<uint32_t>(out.data() + i, static_cast<uint32_t>(1000 + i / 148));
  return out;
}

TEST(Rre, RoundTripsStandardInputsAtEveryWordSize) {
  testing::expect_word_coder_round_trips(kRre);
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
  testing::expect_random_data_stored_raw(kRre);
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
  const std::vector<Bytes> inputs = {stepped_words(2 * kMiB + 3), testing::random_bytes(kMiB + 1, 3),
                                     testing::read_field("vorticity.512_512")};
  testing::expect_threads_give_the_same_bytes(kRre, inputs);
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
  testing::expect_bad_word_sizes_refused(kRre, {0u, 3u, 6u, 32u});
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
  Bytes in = stepped_words(3 * kBlockBytes);
  in.resize(in.size() - 3);
  testing::expect_every_truncation_refused(kRre, in);
}

TEST(Rre, BitFlipsGiveAnErrorOrACorrectLengthOutput) {
  Bytes in = stepped_words(8 * kBlockBytes);
  const Bytes shuffled = bitshuffled_smooth(4 * kBlockBytes);
  in.insert(in.end(), shuffled.begin(), shuffled.end());
  const Bytes field = testing::read_field("pressure.384_384.f64");
  in.insert(in.end(), field.begin(), field.begin() + 2 * kBlockBytes + 13);
  testing::expect_bit_flips_give_an_error_or_a_correct_length(kRre, in, 98);
}

}  // namespace
}  // namespace fz
