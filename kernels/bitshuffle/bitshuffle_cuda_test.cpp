// bitshuffle on the GPU: the CPU's bytes both ways for every standard input and
// width, at any alignment (skipped without a CUDA device).
#include "bitshuffle/bitshuffle_cuda.hpp"

#include <gtest/gtest.h>

#include "bitshuffle/bitshuffle.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"

namespace fz {
namespace {

void cpu_decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { bitshuffle::decode(in, width, out, exec); }

const testing::CudaWidthTransform kBitshuffle{bitshuffle::encode, cpu_decode, bitshuffle::cuda::encode, bitshuffle::cuda::decode};

TEST(BitshuffleCuda, MatchesTheCpuOnStandardInputs) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_on_standard_inputs(kBitshuffle);
}

TEST(BitshuffleCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_misaligned(kBitshuffle);
}

TEST(BitshuffleCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_widths_refused(kBitshuffle);
}

}  // namespace
}  // namespace fz
