// Rze on the GPU: the CPU's streams for every standard input and word size,
// and hostile streams judged exactly as the CPU judges them (skipped without a
// CUDA device). FZ_HOSTILE_TRIALS sets the bit-flip trials per word size (a
// compute-sanitizer run uses fewer).
#include "rze/rze_cuda.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "rze/rze.hpp"
#include "elimination/testing/elimination_cuda_checks.hpp"

namespace fz {
namespace {

const testing::CudaWordCoder kRze{{rze::encode, rze::decode},
                                   rze::cuda::encode_scratch_bytes,
                                   rze::cuda::encode,
                                   rze::cuda::decode_scratch_bytes,
                                   rze::cuda::decode};

size_t hostile_trials() {
  const char* env = std::getenv("FZ_HOSTILE_TRIALS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 300;
}

TEST(RzeCuda, EncodeMatchesTheCpuAndDecodesItsStreams) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_encode_matches_cpu(kRze);
}

TEST(RzeCuda, EncodeOfALengthOnTheDeviceMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_device_length_encode_matches_cpu(kRze, elimination::Rule::kNonZero);
}

TEST(RzeCuda, HostileStreamsAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_hostile_streams_judged_like_the_cpu(kRze, hostile_trials());
}

TEST(RzeCuda, LargeSizeTablesAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_large_size_tables_judged_like_the_cpu(kRze);
}

TEST(RzeCuda, OneBlockAndPerSubchunkDecodesJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_few_and_many_subchunks_judged_like_the_cpu(kRze);
}

TEST(RzeCuda, RefusesBadWordSizes) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_word_sizes_refused_on_gpu(kRze);
}

}  // namespace
}  // namespace fz
