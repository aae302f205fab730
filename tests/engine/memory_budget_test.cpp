// Chunks the process lacks the memory for: compressing stores them raw in
// their frame (over the chunk itself when the buffer has room for the header,
// so nothing more is allocated) and says so; decoding refuses with a clear
// Error instead of allocating memory the kernel would kill the process for.
// The available memory is injected (fault_injection::available_memory); the
// real figures come from /proc/meminfo and the cgroup.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fault_injection.hpp"
#include "frame.hpp"
#include "fz/fz.hpp"
#include "memory_budget.hpp"

namespace fz {
namespace {

// A smooth float32 field of `mib` MiB, which every preset compresses well.
std::vector<float> smooth_field(size_t mib) {
  std::vector<float> v((mib << 20) / sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(double(i % 4096) * 1e-3) * 100.0);
  return v;
}

// Sets the available memory for one test, restores "read it from the system".
struct InjectedMemory {
  explicit InjectedMemory(int64_t bytes) { engine::fault_injection::available_memory = bytes; }
  ~InjectedMemory() { engine::fault_injection::available_memory = -1; }
};

Options pfpl() {
  Options o;
  o.preset = Preset::Pfpl;
  o.mode = ErrorMode::Abs;
  o.bound = 1e-3;
  return o;
}

TEST(MemoryBudget, SystemFiguresAreRead) {
  EXPECT_GT(total_memory(), uint64_t{64} << 20);
  EXPECT_GT(engine::available_memory_bytes(), 0u);
  EXPECT_LE(engine::available_memory_bytes(), total_memory());
}

TEST(MemoryBudget, ChunkWithoutMemoryToCompressIsStoredRawInPlace) {
  std::vector<float> chunk = smooth_field(64);
  const std::vector<float> original = chunk;
  const size_t bytes = chunk.size() * sizeof(float);
  // The buffer has room for the raw frame's header, as the filter grows HDF5's.
  std::vector<uint8_t> buffer(max_frame_bytes(bytes, 1));
  std::memcpy(buffer.data(), chunk.data(), bytes);
  size_t written = 0;
  testing::internal::CaptureStderr();
  {
    InjectedMemory tight(16 << 20);
    Bytes spill;
    written = compress_into(buffer.data(), bytes, DataType::of<float>(), {chunk.size()}, pfpl(), buffer.data(),
                            buffer.size(), &spill);
    EXPECT_TRUE(spill.empty());
  }
  const std::string said = testing::internal::GetCapturedStderr();
  ASSERT_GT(written, bytes);
  EXPECT_NE(said.find("not enough memory to compress a chunk of 64 MiB"), std::string::npos) << said;
  EXPECT_NE(said.find("stored it uncompressed in its frame"), std::string::npos) << said;
  EXPECT_TRUE(inspect(buffer.data(), written).raw);
  std::vector<float> back(chunk.size());
  ASSERT_EQ(decompress_into(buffer.data(), written, back.data(), bytes), bytes);
  EXPECT_EQ(std::memcmp(back.data(), original.data(), bytes), 0);
}

TEST(MemoryBudget, WithMemoryTheSameChunkCompresses) {
  std::vector<float> chunk = smooth_field(64);
  const size_t bytes = chunk.size() * sizeof(float);
  InjectedMemory plenty(int64_t{8} << 30);
  Bytes spill;
  const size_t written =
      compress_into(chunk.data(), bytes, DataType::of<float>(), {chunk.size()}, pfpl(), chunk.data(), bytes, &spill);
  ASSERT_GT(written, 0u);
  EXPECT_LT(written, bytes / 4);
  EXPECT_FALSE(inspect(chunk.data(), written).raw);
}

TEST(MemoryBudget, DecodingWithoutMemoryIsAClearError) {
  const std::vector<float> chunk = smooth_field(64);
  const size_t bytes = chunk.size() * sizeof(float);
  const Bytes frame = compress(chunk.data(), bytes, DataType::of<float>(), {chunk.size()}, pfpl());
  std::vector<float> out(chunk.size());
  InjectedMemory tight(1 << 20);
  try {
    decompress_into(frame.data(), frame.size(), out.data(), bytes);
    FAIL() << "decoded without the memory it needs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not enough memory to decompress a chunk of 64 MiB"), std::string::npos)
        << e.what();
  }
}

TEST(MemoryBudget, UnknownMemoryRefusesNothing) {
  InjectedMemory unknown(0);
  EXPECT_NO_THROW(require_memory(uint64_t{1} << 32, uint64_t{1} << 40, "compress"));
}

TEST(MemoryBudget, SmallChunksAreNotChecked) {
  const std::vector<float> chunk = smooth_field(1);
  const size_t bytes = chunk.size() * sizeof(float);
  InjectedMemory tiny(1);
  const Bytes frame = compress(chunk.data(), bytes, DataType::of<float>(), {chunk.size()}, pfpl());
  EXPECT_FALSE(inspect(frame.data(), frame.size()).raw);
  std::vector<float> out(chunk.size());
  EXPECT_EQ(decompress_into(frame.data(), frame.size(), out.data(), bytes), bytes);
  EXPECT_NO_THROW(require_memory(engine::kMemoryCheckMinBytes - 1, uint64_t{1} << 40, "compress"));
  EXPECT_THROW(require_memory(engine::kMemoryCheckMinBytes, uint64_t{1} << 40, "compress"), Error);
}

}  // namespace
}  // namespace fz
