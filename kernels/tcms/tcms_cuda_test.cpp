// TCMS on the GPU: the CPU's bytes both ways for every standard input (edge
// sizes, synthetic patterns, the real fields) and width, trailing bytes
// included, at any alignment (skipped without a CUDA device).
#include "tcms/tcms_cuda.hpp"

#include <gtest/gtest.h>

#include "common/testing/width_transform_cuda_checks.hpp"
#include "tcms/tcms.hpp"

namespace fz {
namespace {

void cpu_encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { tcms::encode(in, width, out, exec); }
void cpu_decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { tcms::decode(in, width, out, exec); }

const testing::CudaWidthTransform kTcms{cpu_encode, cpu_decode, tcms::cuda::encode, tcms::cuda::decode};

TEST(TcmsCuda, MatchesTheCpuOnStandardInputs) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_on_standard_inputs(kTcms);
}

// Every length 0..40 puts 0..7 trailing bytes behind each width's words.
TEST(TcmsCuda, MatchesTheCpuForEveryTrailingLength) {
  FZ_SKIP_WITHOUT_CUDA();
  for (size_t size = 0; size <= 40; ++size) {
    const Bytes in = testing::random_bytes(size, 77 + size);
    for (unsigned width : testing::kCudaWidths) {
      SCOPED_TRACE("size=" + std::to_string(size) + " width=" + std::to_string(width));
      Bytes cpu;
      tcms::encode(in, width, cpu);
      EXPECT_TRUE(testing::same_bytes(testing::run_on_gpu(tcms::cuda::encode, in, width), cpu));
      Bytes cpu_decoded;
      tcms::decode(in, width, cpu_decoded);
      EXPECT_TRUE(testing::same_bytes(testing::run_on_gpu(tcms::cuda::decode, in, width), cpu_decoded));
    }
  }
}

TEST(TcmsCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_matches_cpu_misaligned(kTcms);
}

TEST(TcmsCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_widths_refused(kTcms);
}

}  // namespace
}  // namespace fz
