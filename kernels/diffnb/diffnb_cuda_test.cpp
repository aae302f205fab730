// diffnb on the GPU: the CPU's bytes both ways for every standard input and
// width, at any alignment (skipped without a CUDA device).
#include "diffnb/diffnb_cuda.hpp"

#include <gtest/gtest.h>

#include "diffnb/diffnb.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"

namespace fz {
namespace {

void cpu_decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { diffnb::decode(in, width, out, exec); }

const testing::CudaWidthTransform kDiffnb{diffnb::encode, cpu_decode, diffnb::cuda::encode, diffnb::cuda::decode};

TEST(DiffnbCuda, MatchesTheCpuOnStandardInputs) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_on_standard_inputs(kDiffnb);
}

TEST(DiffnbCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_misaligned(kDiffnb);
}

TEST(DiffnbCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_widths_refused(kDiffnb);
}

}  // namespace
}  // namespace fz
