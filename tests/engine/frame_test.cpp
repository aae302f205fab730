// The FZM frame: layout, checksums, versions, and what a damaged or hostile
// frame does (a clean fz::Error, never a crash or an over-read).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/testing/test_data.hpp"
#include "crc32c.hpp"
#include "engine_test_util.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {

Bytes compress_floats(const std::vector<float>& v, std::vector<uint64_t> dims) {
  return compress(v.data(), v.size() * 4, DataType::of<float>(), dims, Options{});
}

TEST(Crc32c, KnownVectorsAndContinuation) {
  EXPECT_EQ(engine::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(engine::crc32c("", 0), 0u);
  const Bytes data = testing::random_bytes(100003, 7);
  const uint32_t whole = engine::crc32c(data.data(), data.size());
  const uint32_t split = engine::crc32c(data.data() + 4001, data.size() - 4001, engine::crc32c(data.data(), 4001));
  EXPECT_EQ(whole, split);
}

TEST(Frame, LosslessHeaderIsCompactAndDescribesTheChunk) {
  const auto v = test::smooth_field<float>(16 * 16 * 16, 1);
  const Bytes frame = compress_floats(v, {16, 16, 16});
  const FrameInfo info = inspect(frame.data(), frame.size());
  EXPECT_LT(info.header_bytes, 128u);
  EXPECT_FALSE(info.raw);
  EXPECT_EQ(info.version_major, 1);
  EXPECT_EQ(info.preset, Preset::Lossless);
  EXPECT_EQ(info.dtype, DataType::of<float>());
  EXPECT_EQ(info.dims, (std::vector<uint64_t>{16, 16, 16}));
  EXPECT_EQ(info.original_bytes, v.size() * 4);
  ASSERT_EQ(info.stages.size(), 3u);
  EXPECT_EQ(info.stages[0].name, "diffnb");
  EXPECT_EQ(info.stages[1].name, "bitshuffle");
  EXPECT_EQ(info.stages[2].name, "rze");
  EXPECT_EQ(info.frame_bytes, frame.size());
  EXPECT_EQ(std::memcmp(frame.data(), "FZM\0", 4), 0);
  // 4-D chunk with a big-endian type still fits the 128-byte promise.
  std::vector<uint64_t> dims4 = {2, 4, 8, 64};
  Bytes be = test::reversed_words(test::as_bytes(v.data(), 4096 * 4), 4);
  DataType bef = DataType::of<float>();
  bef.order = ByteOrder::Big;
  const Bytes frame4 = compress(be.data(), be.size(), bef, dims4, Options{});
  EXPECT_LT(inspect(frame4.data(), frame4.size()).header_bytes, 128u);
}

TEST(Frame, SmallChunksPayLittleHeader) {
  // h5py's default chunks are a few kB: the fixed cost per frame must stay small.
  const auto v = test::smooth_field<float>(15 * 16 * 16, 12);
  const Bytes frame = compress_floats(v, {15, 16, 16});
  EXPECT_LE(inspect(frame.data(), frame.size()).header_bytes, 64u);
  const Bytes one = compress_floats({1.0f}, {1});
  const FrameInfo raw = inspect(one.data(), one.size());
  EXPECT_TRUE(raw.raw);
  EXPECT_LE(one.size(), 4u + 32u);
}

TEST(Frame, IncompressibleChunkIsStoredRaw) {
  const Bytes noise = testing::random_bytes(50000, 3);
  const Bytes frame = compress(noise.data(), noise.size(), DataType::of<uint8_t>(), {}, Options{});
  const FrameInfo info = inspect(frame.data(), frame.size());
  EXPECT_TRUE(info.raw);
  EXPECT_TRUE(info.stages.empty());
  EXPECT_LE(frame.size(), noise.size() + 64);
  EXPECT_EQ(decompress(frame.data(), frame.size()).data, noise);
}

TEST(Frame, EveryTruncationIsACleanError) {
  const auto v = test::smooth_field<float>(700, 2);
  const Bytes frame = compress_floats(v, {700});
  for (size_t len = 0; len < frame.size(); ++len) {
    EXPECT_THROW(decompress(frame.data(), len), Error) << "length " << len;
  }
  Bytes padded = frame;
  padded.push_back(0);
  EXPECT_THROW(decompress(padded.data(), padded.size()), Error);
}

TEST(Frame, TruncationsOfALargeFrameAreCleanErrors) {
  const Bytes field = testing::read_field("wmag91.float");
  const Bytes frame = compress(field.data(), field.size(), DataType::of<float>(), {91, 91, 91}, Options{});
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) {
    const size_t len = rng() % frame.size();
    EXPECT_THROW(decompress(frame.data(), len), Error) << "length " << len;
  }
}

TEST(Frame, EveryBitFlipInASmallFrameIsDetected) {
  const auto v = test::smooth_field<float>(300, 4);
  const Bytes frame = compress_floats(v, {300});
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    Bytes bad = frame;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_THROW(decompress(bad.data(), bad.size()), Error) << "bit " << bit;
  }
}

TEST(Frame, HostileFramesWithValidChecksumsNeverCrash) {
  // A writer that computes correct CRCs over garbage: parsers and stage decoders
  // must still refuse cleanly or decode to exactly the declared size.
  const Bytes field = testing::read_field("vorticity.512_512");
  const Bytes frame = compress(field.data(), 65536 * 4, DataType::of<float>(), {256, 256}, Options{});
  std::mt19937_64 rng(5);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    Bytes bad = frame;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Mostly in the header and the first stream bytes, where structure lives.
      const size_t at = (rng() % 3 == 0) ? rng() % bad.size() : rng() % std::min<size_t>(bad.size(), 400);
      bad[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    test::reseal(bad);
    try {
      Decoded d = decompress(bad.data(), bad.size());
      EXPECT_EQ(d.data.size(), inspect(bad.data(), bad.size()).original_bytes);
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(Frame, NewerMajorVersionIsRefusedWithAMessage) {
  const auto v = test::smooth_field<float>(64, 5);
  Bytes frame = compress_floats(v, {64});
  frame[4] = 2;
  test::reseal(frame);
  try {
    decompress(frame.data(), frame.size());
    FAIL() << "accepted a version-2 frame";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 2.0"), std::string::npos) << e.what();
  }
}

TEST(Frame, UnknownFlagsAndStageTypesAreRefused) {
  const auto v = test::smooth_field<float>(4096, 6);
  Bytes frame = compress_floats(v, {4096});
  Bytes flagged = frame;
  flagged[6] |= 0x80;
  test::reseal(flagged);
  EXPECT_THROW(decompress(flagged.data(), flagged.size()), Error);

  // The first stage record: diffnb (type 5) of width 4, one input, one output, 1-byte config.
  Bytes unknown = frame;
  const uint8_t record[] = {5, 0, 1, 1, 1, 0, 4};
  const auto at = std::search(unknown.begin(), unknown.end(), std::begin(record), std::end(record));
  ASSERT_NE(at, unknown.end());
  const size_t stage0 = static_cast<size_t>(at - unknown.begin());
  unknown[stage0] = 0xEE;
  unknown[stage0 + 1] = 0x7F;
  test::reseal(unknown);
  try {
    decompress(unknown.data(), unknown.size());
    FAIL() << "accepted an unknown stage";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer version"), std::string::npos) << e.what();
  }
}

TEST(Frame, DecompressIntoRefusesASmallBuffer) {
  const auto v = test::smooth_field<float>(1000, 8);
  const Bytes frame = compress_floats(v, {1000});
  std::vector<float> out(999);
  EXPECT_THROW(decompress_into(frame.data(), frame.size(), out.data(), out.size() * 4), Error);
  std::vector<float> fits(1000);
  EXPECT_EQ(decompress_into(frame.data(), frame.size(), fits.data(), 4000), 4000u);
  EXPECT_EQ(fits, v);
}

}  // namespace
}  // namespace fz
