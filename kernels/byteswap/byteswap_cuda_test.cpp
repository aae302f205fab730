// Byte swap on the GPU: the CPU's bytes for every standard input (edge sizes,
// synthetic patterns, the real fields) and width 1, 2, 4, 8, trailing bytes
// included, at any alignment; applying it twice gives the input back
// (skipped without a CUDA device).
#include "byteswap/byteswap_cuda.hpp"

#include <gtest/gtest.h>

#include "byteswap/byteswap.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"

namespace fz {
namespace {

void cpu_apply(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { byteswap::apply(in, width, out, exec); }

// Its own inverse: "decode" is the same transform.
const testing::CudaWidthTransform kByteswap{cpu_apply, cpu_apply, byteswap::cuda::apply, byteswap::cuda::apply};

TEST(ByteswapCuda, MatchesTheCpuOnStandardInputs) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_on_standard_inputs(kByteswap);
}

TEST(ByteswapCuda, MatchesTheCpuForEveryTrailingLength) {
  FZ_SKIP_WITHOUT_CUDA();
  for (size_t size = 0; size <= 40; ++size) {
    const Bytes in = testing::random_bytes(size, 91 + size);
    for (unsigned width : testing::kCudaWidths) {
      SCOPED_TRACE("size=" + std::to_string(size) + " width=" + std::to_string(width));
      Bytes cpu;
      byteswap::apply(in, width, cpu);
      EXPECT_TRUE(testing::same_bytes(testing::run_on_gpu(byteswap::cuda::apply, in, width), cpu));
    }
  }
}

// A known word, so that a swap that agreed with a wrong CPU would still fail.
TEST(ByteswapCuda, ReversesTheBytesOfEachWord) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in{1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(testing::run_on_gpu(byteswap::cuda::apply, in, 2), (Bytes{2, 1, 4, 3, 6, 5, 8, 7, 9}));
  EXPECT_EQ(testing::run_on_gpu(byteswap::cuda::apply, in, 4), (Bytes{4, 3, 2, 1, 8, 7, 6, 5, 9}));
  EXPECT_EQ(testing::run_on_gpu(byteswap::cuda::apply, in, 8), (Bytes{8, 7, 6, 5, 4, 3, 2, 1, 9}));
  EXPECT_EQ(testing::run_on_gpu(byteswap::cuda::apply, in, 1), in);
}

TEST(ByteswapCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_misaligned(kByteswap);
}

TEST(ByteswapCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_widths_refused(kByteswap);
}

}  // namespace
}  // namespace fz
