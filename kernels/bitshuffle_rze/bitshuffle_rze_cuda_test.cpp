// The fused bit-shuffle -> RZE1 GPU coder against the CPU's two stages one
// after the other: the same stream for every standard input and width (the
// real fields, edge sizes, kept bytes at every packing offset), CPU streams
// decoded back, hostile streams judged exactly as the CPU judges them, and bad
// widths and misaligned pointers refused (skipped without a CUDA device).
// FZ_HOSTILE_TRIALS sets the bit-flip trials per width.
#include "bitshuffle_rze/bitshuffle_rze_cuda.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "bitshuffle/bitshuffle.hpp"
#include "elimination/testing/elimination_cuda_checks.hpp"
#include "rze/rze.hpp"

namespace fz {
namespace {

// What the engine's two stages write one after the other; the "word size" of
// the shared checks is the bit-shuffle's width.
void cpu_encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  Bytes shuffled;
  bitshuffle::encode(in, width, shuffled, exec);
  rze::encode(shuffled, 1, out, exec);
}

void cpu_decode(ByteSpan in, unsigned width, Bytes& out, size_t max_out, const Executor& exec) {
  Bytes shuffled;
  rze::decode(in, 1, shuffled, max_out, exec);
  bitshuffle::decode(shuffled, width, out, exec);
}

const testing::CudaWordCoder kFused{{cpu_encode, cpu_decode},
                                     bitshuffle_rze::cuda::encode_scratch_bytes,
                                     bitshuffle_rze::cuda::encode,
                                     bitshuffle_rze::cuda::decode_scratch_bytes,
                                     bitshuffle_rze::cuda::decode};

size_t hostile_trials() {
  const char* env = std::getenv("FZ_HOSTILE_TRIALS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 300;
}

TEST(BitshuffleRzeCuda, EncodeMatchesTheCpuStagesAndDecodesTheirStreams) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_encode_matches_cpu(kFused);
}

TEST(BitshuffleRzeCuda, HostileStreamsAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_hostile_streams_judged_like_the_cpu(kFused, hostile_trials());
}

TEST(BitshuffleRzeCuda, LargeSizeTablesAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_large_size_tables_judged_like_the_cpu(kFused);
}

TEST(BitshuffleRzeCuda, OneBlockAndPerSubchunkDecodesJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_few_and_many_subchunks_judged_like_the_cpu(kFused);
}

TEST(BitshuffleRzeCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_word_sizes_refused_on_gpu(kFused);
}

// Encode reads and decode writes whole 16-byte vectors: other alignments are
// refused before anything is enqueued (the engine then runs the two stages).
TEST(BitshuffleRzeCuda, RefusesMisalignedInputAndOutput) {
  FZ_SKIP_WITHOUT_CUDA();
  const testing::DeviceBuffer in(2 * kBlockBytes + 16), out(elimination::cuda::max_encoded_bytes(2 * kBlockBytes) + 16),
      scratch(kFused.encode_scratch_bytes(2 * kBlockBytes) + kFused.decode_scratch_bytes(out.size(), in.size())),
      size(8), status(4);
  EXPECT_EQ(bitshuffle_rze::cuda::encode(in.data() + 4, 2 * kBlockBytes, 4, out.data(), size.as<uint64_t>(),
                                         scratch.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(bitshuffle_rze::cuda::decode(out.data(), 64, 4, in.data() + 8, 2 * kBlockBytes, size.as<uint64_t>(),
                                         status.as<uint32_t>(), scratch.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace fz
