// Byte transposition on the GPU: the CPU's bytes both ways for element sizes
// 1 .. 2^24 (both kernels: one thread per element up to 32 bytes, tiles
// above), lengths around whole elements and tile edges, the real fields, at
// any alignment (skipped without a CUDA device).
#include "bytetranspose/bytetranspose_cuda.hpp"

#include <gtest/gtest.h>

#include "bytetranspose/bytetranspose.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"

namespace fz {
namespace {

using testing::same_bytes;

using GpuCoder = cudaError_t (*)(const uint8_t*, size_t, uint32_t, uint8_t*, cudaStream_t);

Bytes run_on_gpu(GpuCoder coder, const Bytes& in, uint32_t s, size_t misalign = 0) {
  testing::DeviceBuffer d_in(in.size() + misalign);
  d_in.upload(in, misalign);
  testing::DeviceBuffer d_out(misalign + in.size() + testing::kGuardBytes, testing::kGuardFill);
  EXPECT_EQ(coder(d_in.data() + misalign, in.size(), s, d_out.data() + misalign, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(testing::guard_intact(d_out, misalign + in.size())) << "wrote past the output";
  return d_out.download(in.size(), misalign);
}

// GPU encode == CPU encode, GPU decode inverts it, and GPU decode of the raw
// input (any bytes are a stream) == CPU decode of it.
void expect_matches(const Bytes& in, uint32_t s, size_t misalign = 0) {
  Bytes cpu;
  bytetranspose::encode(in, s, cpu);
  ASSERT_TRUE(same_bytes(run_on_gpu(bytetranspose::cuda::encode, in, s, misalign), cpu)) << "encode";
  ASSERT_TRUE(same_bytes(run_on_gpu(bytetranspose::cuda::decode, cpu, s, misalign), in)) << "decode of the CPU stream";
  Bytes cpu_decoded;
  bytetranspose::decode(in, s, cpu_decoded);
  ASSERT_TRUE(same_bytes(run_on_gpu(bytetranspose::cuda::decode, in, s, misalign), cpu_decoded))
      << "decode of raw bytes";
}

constexpr uint32_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 31, 32, 33, 48, 63, 64, 65, 100, 1000, 4097};

TEST(BytetransposeCuda, MatchesTheCpuAroundElementAndTileEdges) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint32_t s : kSizes)
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{31}, size_t{32}, size_t{33}, size_t{255}, size_t{1000}})
      for (size_t trailing : {size_t{0}, size_t{1}, size_t{s > 1 ? s - 1 : 0}}) {
        const size_t size = n * s + trailing;
        SCOPED_TRACE("s=" + std::to_string(s) + " n=" + std::to_string(n) + " trailing=" + std::to_string(trailing));
        expect_matches(testing::random_bytes(size, s * 1000 + n + trailing), s);
      }
}

TEST(BytetransposeCuda, MatchesTheCpuOnStandardInputs) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& input : testing::standard_inputs())
    for (uint32_t s : {2u, 3u, 5u, 12u, 16u, 24u, 40u, 999u}) {
      SCOPED_TRACE(input.name + " s=" + std::to_string(s));
      expect_matches(input.bytes, s);
    }
}

// Sizes up to the format's limit 2^24: few elements, each wider than any tile row.
TEST(BytetransposeCuda, MatchesTheCpuForHugeElements) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint32_t s : {(1u << 16) + 3, 1u << 20, 1u << 24}) {
    SCOPED_TRACE("s=" + std::to_string(s));
    expect_matches(testing::random_bytes(size_t{s} * 2 + 5, s), s);
    expect_matches(testing::random_bytes(size_t{s} - 1, s + 1), s);  // no whole element: a copy
  }
}

TEST(BytetransposeCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in = testing::smooth_words(3 * 16384 + 1001, 4, 5);
  for (uint32_t s : {3u, 12u, 24u, 33u, 100u})
    for (size_t misalign : {1, 2, 3, 5}) {
      SCOPED_TRACE("s=" + std::to_string(s) + " misalign=" + std::to_string(misalign));
      expect_matches(in, s, misalign);
    }
}

TEST(BytetransposeCuda, RefusesBadElementSizes) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::DeviceBuffer in(16), out(16);
  for (uint32_t s : {0u, (1u << 24) + 1, ~0u}) {
    EXPECT_EQ(bytetranspose::cuda::encode(in.data(), 16, s, out.data(), nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(bytetranspose::cuda::decode(in.data(), 16, s, out.data(), nullptr), cudaErrorInvalidValue);
  }
}

}  // namespace
}  // namespace fz
