// The GPU CRC32C (cuda/crc32c_cuda.hpp) against the CPU's crc32c(): every
// short length, lengths around every power of two up to 1 GiB, every
// alignment, splits into spans (empty ones, more spans than one launch takes),
// continued checksums; real field bytes. GPU test: labelled "gpu", skipped
// where no CUDA device is usable. Prints its throughput on 512 MiB (no timing
// is asserted).
#include "cuda/crc32c_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "crc32c.hpp"

namespace fz::engine {
namespace {

using fz::testing::DeviceBuffer;

// `bytes` of the real field wmag91 repeated; each repetition XORed with its
// index so that no two tiles of a long message hold the same bytes.
Bytes tiled_field(size_t bytes) {
  static const Bytes field = fz::testing::read_field("wmag91.float");
  Bytes out(bytes);
  for (size_t at = 0, copy = 0; at < bytes; at += field.size(), ++copy) {
    const size_t n = std::min(field.size(), bytes - at);
    std::memcpy(out.data() + at, field.data(), n);
    out[at] ^= static_cast<uint8_t>(copy);
  }
  return out;
}

// Runs the GPU checksum and reads it back; fails the test on a CUDA error.
class GpuCrc {
 public:
  GpuCrc() : result_(64, 0x5A) { cudaStreamCreate(&stream_); }
  ~GpuCrc() { cudaStreamDestroy(stream_); }

  uint32_t spans(const std::vector<cuda::DeviceSpan>& spans, uint32_t crc = 0) {
    size_t total = 0;
    for (const auto& s : spans) total += s.size;
    reserve_scratch(cuda::crc32c_scratch_bytes(total, spans.size()));
    const cudaError_t status = cuda::crc32c_spans(spans.data(), spans.size(), slot(), scratch_->data(), stream_, crc);
    return finish(status);
  }
  uint32_t one(const void* data, size_t size, uint32_t crc = 0) {
    reserve_scratch(cuda::crc32c_scratch_bytes(size));
    return finish(cuda::crc32c(data, size, slot(), scratch_->data(), stream_, crc));
  }
  // The result lands in the middle of a small device array: its neighbours
  // and the bytes past the scratch must stay untouched.
  bool neighbours_intact() const {
    const Bytes all = result_.download(result_.size());
    for (size_t i = 0; i < all.size(); ++i)
      if ((i < kSlot || i >= kSlot + 4) && all[i] != 0x5A) return false;
    return !scratch_ || fz::testing::guard_intact(*scratch_, scratch_used_);
  }

 private:
  static constexpr size_t kSlot = 28;
  uint32_t* slot() const { return reinterpret_cast<uint32_t*>(result_.data() + kSlot); }
  void reserve_scratch(size_t bytes) {
    scratch_used_ = bytes;
    if (!scratch_ || scratch_->size() < bytes + fz::testing::kGuardBytes)
      scratch_ = std::make_unique<DeviceBuffer>(bytes + fz::testing::kGuardBytes, fz::testing::kGuardFill);
  }
  uint32_t finish(cudaError_t status) {
    EXPECT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return result_.read<uint32_t>(kSlot);
  }

  DeviceBuffer result_;
  std::unique_ptr<DeviceBuffer> scratch_;
  size_t scratch_used_ = 0;
  cudaStream_t stream_ = nullptr;
};

TEST(Crc32cGpu, CheckValueAndEmpty) {
  FZ_SKIP_WITHOUT_CUDA();
  GpuCrc gpu;
  const Bytes text = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  DeviceBuffer d = fz::testing::to_device(text);
  EXPECT_EQ(gpu.one(d.data(), 9), 0xE3069283u);
  EXPECT_EQ(gpu.one(d.data(), 0), 0u);
  EXPECT_EQ(gpu.one(nullptr, 0), 0u);
  EXPECT_EQ(gpu.one(nullptr, 0, 0xA1B2C3D4u), 0xA1B2C3D4u);
  EXPECT_EQ(gpu.spans({}), 0u);
  EXPECT_EQ(gpu.spans({{nullptr, 0}, {d.data(), 0}}, 77u), 77u);
  EXPECT_TRUE(gpu.neighbours_intact());
}

TEST(Crc32cGpu, EveryLengthAndAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  constexpr size_t kLongest = size_t{1} << 27;
  const Bytes host = tiled_field(kLongest + 64);
  DeviceBuffer device = fz::testing::to_device(host);
  ASSERT_TRUE(device.ok());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (size_t p = 512; p <= kLongest; p *= 2)
    for (long d : {-17, -16, -15, -3, -1, 0, 1, 3, 15, 16, 17}) lengths.push_back(p + d);
  for (size_t tile : {size_t{32768}, size_t{262144}})  // the smallest and largest tiles
    for (size_t k : {1, 2, 3, 5})
      for (long d : {-4097, -4096, -1, 0, 1, 4095, 4096}) lengths.push_back(k * tile + d);
  for (size_t n : {size_t{3} << 20, size_t{7} << 20, (size_t{16} << 20) - 1, (size_t{16} << 20) + 4097})
    lengths.push_back(n);
  GpuCrc gpu;
  int mismatches = 0;
  for (size_t n : lengths) {
    const unsigned alignments = n <= 3 * 4096 + 300 ? 16 : 4;
    for (unsigned a = 0; a < alignments && mismatches < 10; ++a) {
      const size_t offset = alignments == 16 ? a : (a * 5 + 3) % 16;
      const uint32_t want = crc32c(host.data() + offset, n);
      const uint32_t got = gpu.one(device.data() + offset, n);
      if (got != want) {
        ADD_FAILURE() << "length " << n << " offset " << offset << ": GPU " << std::hex << got << ", CPU " << want;
        ++mismatches;
      }
    }
  }
  EXPECT_TRUE(gpu.neighbours_intact());
}

TEST(Crc32cGpu, ContinuesAPreviousChecksum) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes host = tiled_field(5'000'000);
  DeviceBuffer device = fz::testing::to_device(host);
  GpuCrc gpu;
  for (size_t cut : {size_t{0}, size_t{1}, size_t{4096}, size_t{1234567}, host.size()}) {
    const uint32_t first = crc32c(host.data(), cut);
    EXPECT_EQ(gpu.one(device.data() + cut, host.size() - cut, first), crc32c(host.data(), host.size())) << cut;
  }
}

// The payload of a frame: its stored streams concatenated, each in its own
// allocation, at any alignment, some empty.
TEST(Crc32cGpu, SpansEqualTheirConcatenation) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes host = tiled_field(3 * 262144 + 54321);
  std::mt19937_64 random(17);
  GpuCrc gpu;
  for (int round = 0; round < 80; ++round) {
    const size_t total = round < 25 ? random() % 9000 : random() % (host.size() + 1);
    std::vector<size_t> cuts = {0, total};
    // Up to 100 spans: more than one launch's worth (32) of non-empty spans.
    const int pieces = round % 10 == 0 ? 100 : 1 + static_cast<int>(random() % 12);
    for (int i = 0; i < pieces; ++i) cuts.push_back(total ? random() % (total + 1) : 0);
    if (round % 3 == 0) cuts.push_back(cuts.back());
    std::sort(cuts.begin(), cuts.end());
    std::vector<DeviceBuffer> buffers;
    std::vector<cuda::DeviceSpan> spans;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const size_t size = cuts[i + 1] - cuts[i], shift = random() % 16;
      buffers.emplace_back(size + 16);
      if (size) cudaMemcpy(buffers.back().data() + shift, host.data() + cuts[i], size, cudaMemcpyHostToDevice);
      spans.push_back({size || random() % 2 ? buffers.back().data() + shift : nullptr, size});
    }
    const uint32_t previous = round % 2 ? 0u : static_cast<uint32_t>(random());
    ASSERT_EQ(gpu.spans(spans, previous), crc32c(host.data(), total, previous))
        << "round " << round << ", " << spans.size() << " spans, " << total << " bytes";
  }
  EXPECT_TRUE(gpu.neighbours_intact());
}

TEST(Crc32cGpu, OneGiB) {
  FZ_SKIP_WITHOUT_CUDA();
  constexpr size_t kGiB = size_t{1} << 30;
  const Bytes host = tiled_field(kGiB + 16);
  DeviceBuffer device = fz::testing::to_device(host);
  ASSERT_TRUE(device.ok()) << "1 GiB of device memory";
  GpuCrc gpu;
  EXPECT_EQ(gpu.one(device.data(), kGiB), crc32c(host.data(), kGiB));
  EXPECT_EQ(gpu.one(device.data() + 5, kGiB + 3), crc32c(host.data() + 5, kGiB + 3));
  // Split where a frame would split it: three streams.
  const std::vector<cuda::DeviceSpan> spans = {
      {device.data(), 1000}, {device.data() + 1000, kGiB / 2}, {device.data() + 1000 + kGiB / 2, kGiB / 2 - 1000}};
  EXPECT_EQ(gpu.spans(spans), crc32c(host.data(), kGiB));
  EXPECT_TRUE(gpu.neighbours_intact());
}

TEST(Crc32cGpu, RefusesMissingPointers) {
  FZ_SKIP_WITHOUT_CUDA();
  DeviceBuffer result(4), scratch(cuda::crc32c_scratch_bytes(100));
  auto* slot = result.as<uint32_t>();
  EXPECT_EQ(cuda::crc32c(result.data(), 4, nullptr, scratch.data(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::crc32c(nullptr, 4, slot, scratch.data(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::crc32c(result.data(), 4, slot, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::crc32c_spans(nullptr, 2, slot, scratch.data(), nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::crc32c(nullptr, 0, slot, nullptr, nullptr), cudaSuccess);  // nothing to read
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Information only: GB/s (1e9 bytes) on 512 MiB of field bytes, best of 20.
TEST(Crc32cGpu, ThroughputOn512MiB) {
  FZ_SKIP_WITHOUT_CUDA();
  constexpr size_t kBytes = size_t{512} << 20;
  const Bytes host = tiled_field(kBytes);
  DeviceBuffer device = fz::testing::to_device(host);
  DeviceBuffer result(4), scratch(cuda::crc32c_scratch_bytes(kBytes, 8));
  ASSERT_TRUE(device.ok() && scratch.ok());
  const uint32_t want = crc32c(host.data(), kBytes);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<cuda::DeviceSpan> eight;
  for (int i = 0; i < 8; ++i) eight.push_back({device.data() + i * (kBytes / 8), kBytes / 8});
  for (int spans : {1, 8}) {
    float best_ms = 1e30f;
    for (int rep = 0; rep < 23; ++rep) {
      cudaEventRecord(start, stream);
      const cudaError_t status =
          spans == 1 ? cuda::crc32c(device.data(), kBytes, result.as<uint32_t>(), scratch.data(), stream)
                     : cuda::crc32c_spans(eight.data(), eight.size(), result.as<uint32_t>(), scratch.data(), stream);
      ASSERT_EQ(status, cudaSuccess);
      cudaEventRecord(stop, stream);
      ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (rep >= 3) best_ms = std::min(best_ms, ms);  // three warm-up runs
      ASSERT_EQ(result.read<uint32_t>(), want);
    }
    std::printf("[   INFO   ] CRC32C on the GPU, 512 MiB of wmag91 bytes in %d span(s): %.3f ms, %.1f GB/s\n", spans,
                best_ms, kBytes / 1e6 / best_ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace fz::engine
