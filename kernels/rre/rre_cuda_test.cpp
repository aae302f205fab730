// Rre on the GPU: the CPU's streams for every standard input and word size,
// and hostile streams judged exactly as the CPU judges them (skipped without a
// CUDA device). FZ_HOSTILE_TRIALS sets the bit-flip trials per word size (a
// compute-sanitizer run uses fewer).
#include "rre/rre_cuda.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "rre/rre.hpp"
#include "elimination/testing/elimination_cuda_checks.hpp"

namespace fz {
namespace {

const testing::CudaWordCoder kRre{{rre::encode, rre::decode},
                                   rre::cuda::encode_scratch_bytes,
                                   rre::cuda::encode,
                                   rre::cuda::decode_scratch_bytes,
                                   rre::cuda::decode};

size_t hostile_trials() {
  const char* env = std::getenv("FZ_HOSTILE_TRIALS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 300;
}

TEST(RreCuda, EncodeMatchesTheCpuAndDecodesItsStreams) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_encode_matches_cpu(kRre);
}

TEST(RreCuda, EncodeOfALengthOnTheDeviceMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_device_length_encode_matches_cpu(kRre, elimination::Rule::kChanged);
}

TEST(RreCuda, HostileStreamsAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_hostile_streams_judged_like_the_cpu(kRre, hostile_trials());
}

TEST(RreCuda, LargeSizeTablesAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_large_size_tables_judged_like_the_cpu(kRre);
}

TEST(RreCuda, OneBlockAndPerSubchunkDecodesJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_few_and_many_subchunks_judged_like_the_cpu(kRre);
}

TEST(RreCuda, RefusesBadWordSizes) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_word_sizes_refused_on_gpu(kRre);
}

}  // namespace
}  // namespace fz
