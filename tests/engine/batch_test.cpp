// The batch API: the same frames as compress() chunk by chunk, the same bytes
// back as decompress_into(), and failures named by the chunk they belong to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/testing/test_data.hpp"
#include "engine_test_util.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {

struct Case {
  Options options;
  const char* label;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({Options{}, "lossless"});
  Options o;
  o.preset = Preset::Pfpl, o.mode = ErrorMode::Noa, o.bound = 1e-3;
  out.push_back({o, "pfpl noa"});
  o.preset = Preset::Fzgpu;
  out.push_back({o, "fzgpu noa"});
  o.preset = Preset::Cusz, o.mode = ErrorMode::Abs, o.bound = 0.05;
  out.push_back({o, "cusz abs"});
  return out;
}

// wmag91 (91^3 float32) cut into slabs of unequal thickness, as ragged as HDF5's edge chunks.
struct Slabs {
  Bytes field = testing::read_field("wmag91.float");
  std::vector<ChunkView> chunks;
  Slabs() {
    const size_t plane = 91 * 91 * 4;
    size_t z = 0;
    for (size_t thickness : {1, 7, 30, 2, 40, 11}) {
      chunks.push_back({field.data() + z * plane, thickness * plane, {thickness, 91, 91}});
      z += thickness;
    }
    EXPECT_EQ(z, 91u);
  }
};

TEST(Batch, FramesEqualOneChunkAtATime) {
  Slabs slabs;
  for (const Case& c : cases()) {
    for (unsigned threads : {1u, 2u, 5u}) {
      Options options = c.options;
      options.threads = threads;
      const std::vector<Bytes> frames = compress_batch(slabs.chunks, DataType::of<float>(), options);
      ASSERT_EQ(frames.size(), slabs.chunks.size());
      for (size_t i = 0; i < frames.size(); ++i) {
        const ChunkView& chunk = slabs.chunks[i];
        EXPECT_EQ(frames[i], compress(chunk.data, chunk.bytes, DataType::of<float>(), chunk.dims, c.options))
            << c.label << ", chunk " << i << ", " << threads << " threads";
      }
    }
  }
}

TEST(Batch, DecodesEveryFrameIntoItsBuffer) {
  Slabs slabs;
  for (const Case& c : cases()) {
    const std::vector<Bytes> frames = compress_batch(slabs.chunks, DataType::of<float>(), c.options);
    std::vector<Bytes> outputs;
    std::vector<FrameView> views;
    for (size_t i = 0; i < frames.size(); ++i) outputs.emplace_back(slabs.chunks[i].bytes + 3, 0xEE);
    for (size_t i = 0; i < frames.size(); ++i)
      views.push_back({frames[i].data(), frames[i].size(), outputs[i].data(), outputs[i].size()});
    for (unsigned threads : {1u, 3u}) {
      Options policy;
      policy.threads = threads;
      const std::vector<size_t> lengths = decompress_batch(views, policy);
      ASSERT_EQ(lengths.size(), frames.size());
      for (size_t i = 0; i < frames.size(); ++i) {
        ASSERT_EQ(lengths[i], slabs.chunks[i].bytes) << c.label << ", frame " << i;
        Bytes expected(slabs.chunks[i].bytes);
        ASSERT_EQ(decompress_into(frames[i].data(), frames[i].size(), expected.data(), expected.size()),
                  expected.size());
        EXPECT_EQ(0, std::memcmp(outputs[i].data(), expected.data(), expected.size())) << c.label << ", frame " << i;
        // Nothing is written past the decoded chunk.
        for (size_t k = expected.size(); k < outputs[i].size(); ++k) ASSERT_EQ(outputs[i][k], 0xEE);
      }
    }
  }
}

TEST(Batch, EmptyBatches) {
  EXPECT_TRUE(compress_batch({}, DataType::of<float>(), Options{}).empty());
  EXPECT_TRUE(decompress_batch({}).empty());
  EXPECT_TRUE(compress_batch_into({}, DataType::of<float>(), Options{}, {}).empty());
  EXPECT_TRUE(compress_batch_from_device({}, DataType::of<float>(), Options{}).empty());
  EXPECT_TRUE(compress_batch_from_device_into({}, DataType::of<float>(), Options{}, {}).empty());
}

// compress_batch_into writes compress_batch's frames into the caller's rooms,
// byte for byte, and nothing past a frame; a room too small for its frame is
// an Error naming the chunk, as is a count of rooms that does not match.
TEST(Batch, IntoCallerRoomsGivesTheSameFrames) {
  Slabs slabs;
  Options options;
  options.preset = Preset::Fzgpu;
  options.mode = ErrorMode::Abs;
  options.bound = 1e-3;
  const std::vector<Bytes> expected = compress_batch(slabs.chunks, DataType::of<float>(), options);
  std::vector<Bytes> buffers;
  std::vector<FrameRoom> rooms;
  for (const ChunkView& c : slabs.chunks) buffers.emplace_back(max_frame_bytes(c.bytes, c.dims.size()) + 64, 0xEE);
  for (Bytes& b : buffers) rooms.push_back({b.data(), b.size() - 64});
  const std::vector<size_t> lengths = compress_batch_into(slabs.chunks, DataType::of<float>(), options, rooms);
  ASSERT_EQ(lengths.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(lengths[i], expected[i].size()) << "chunk " << i;
    EXPECT_TRUE(std::equal(expected[i].begin(), expected[i].end(), buffers[i].begin())) << "chunk " << i;
    for (size_t k = lengths[i]; k < buffers[i].size(); ++k) ASSERT_EQ(buffers[i][k], 0xEE) << "chunk " << i;
  }
  std::vector<FrameRoom> small = rooms;
  small[2].capacity = expected[2].size() - 1;
  try {
    compress_batch_into(slabs.chunks, DataType::of<float>(), options, small);
    FAIL() << "a frame larger than its room was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 2"), std::string::npos) << e.what();
  }
  rooms.pop_back();
  EXPECT_THROW(compress_batch_into(slabs.chunks, DataType::of<float>(), options, rooms), Error);
}

// compress_batch_from_device takes chunks in device memory only: host memory
// is refused before any work, naming the chunk (with no usable GPU, or in a
// build without CUDA, the same Error says there is none).
TEST(Batch, FromDeviceRefusesHostMemory) {
  Slabs slabs;
  std::vector<Bytes> buffers;
  std::vector<FrameRoom> rooms;
  for (const ChunkView& c : slabs.chunks) buffers.emplace_back(max_frame_bytes(c.bytes, c.dims.size()), 0xEE);
  for (Bytes& b : buffers) rooms.push_back({b.data(), b.size()});
  const auto refused = [](const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("chunk 0"), std::string::npos) << what;
    EXPECT_TRUE(what.find("not device memory") != std::string::npos ||
                what.find("no usable CUDA device") != std::string::npos)
        << what;
  };
  try {
    compress_batch_from_device(slabs.chunks, DataType::of<float>(), Options{});
    FAIL() << "host memory was taken for device memory";
  } catch (const Error& e) {
    refused(e);
  }
  try {
    compress_batch_from_device_into(slabs.chunks, DataType::of<float>(), Options{}, rooms);
    FAIL() << "host memory was taken for device memory (into rooms)";
  } catch (const Error& e) {
    refused(e);
  }
  for (const Bytes& b : buffers) EXPECT_EQ(std::count(b.begin(), b.end(), 0xEE), static_cast<long>(b.size()));
  rooms.pop_back();  // a room short: refused before anything is looked at
  EXPECT_THROW(compress_batch_from_device_into(slabs.chunks, DataType::of<float>(), Options{}, rooms), Error);
}

TEST(Batch, BadChunkIsNamedBeforeAnyWork) {
  Slabs slabs;
  std::vector<ChunkView> chunks = slabs.chunks;
  chunks[3].dims = {3, 91, 91};  // does not match its byte count
  try {
    compress_batch(chunks, DataType::of<float>(), Options{});
    FAIL() << "a chunk whose dims do not match its size was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 3"), std::string::npos) << e.what();
  }
  Options lossy;
  lossy.preset = Preset::Fzgpu;  // no bound
  EXPECT_THROW(compress_batch(slabs.chunks, DataType::of<float>(), lossy), Error);
}

TEST(Batch, BadFrameIsNamedAndTheOthersStillDecode) {
  Slabs slabs;
  std::vector<Bytes> frames = compress_batch(slabs.chunks, DataType::of<float>(), Options{});
  frames[4][frames[4].size() / 2] ^= 0x10;  // payload CRC no longer matches
  frames[2].resize(frames[2].size() - 1);   // truncated
  std::vector<Bytes> outputs;
  std::vector<FrameView> views;
  for (size_t i = 0; i < frames.size(); ++i) outputs.emplace_back(slabs.chunks[i].bytes, 0);
  for (size_t i = 0; i < frames.size(); ++i)
    views.push_back({frames[i].data(), frames[i].size(), outputs[i].data(), outputs[i].size()});
  try {
    Options two_threads;
    two_threads.threads = 2;
    decompress_batch(views, two_threads);
    FAIL() << "damaged frames were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frame 2"), std::string::npos) << e.what();  // the first bad one
  }
  for (size_t i : {0, 1, 3, 5})
    EXPECT_EQ(0, std::memcmp(outputs[i].data(), slabs.chunks[i].data, slabs.chunks[i].bytes)) << "frame " << i;
}

// Without a usable CUDA device (CI, or a build without CUDA), frames cannot be
// decoded into device memory: an Error that says so, not a crash.
TEST(Batch, DecodingIntoDeviceMemoryNeedsADevice) {
  if (device_api_available()) GTEST_SKIP() << "a CUDA device is usable: backend_identity_gpu_test covers it";
  Bytes out(16);
  const Bytes frame(32, 0);
  try {
    decompress_batch_to_device({{frame.data(), frame.size(), out.data(), out.size()}});
    FAIL() << "decoded into host memory claimed to be device memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(decompress_batch_to_device({}).empty());
}

}  // namespace
}  // namespace fz
