// The fused DIFFNB -> bit-shuffle -> RZE1 GPU coder (bitshuffle_rze_cuda.hpp,
// encode_differenced / decode_differenced) against the CPU's three stages one
// after the other, through the checks the pair and RZE pass: the same stream
// for every standard input (edge sizes, partial last sub-chunks and words
// included), CPU streams decoded back, hostile streams judged exactly as the
// CPU judges them, and bad widths and misaligned pointers refused (skipped
// without a CUDA device). The checks' word sizes 1 and 2 run as width 4: the
// fused coder takes 4- and 8-byte words only (the engine runs the stages
// one by one for others).
#include "bitshuffle_rze/bitshuffle_rze_cuda.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "bitshuffle/bitshuffle.hpp"
#include "diffnb/diffnb.hpp"
#include "elimination/testing/elimination_cuda_checks.hpp"
#include "rze/rze.hpp"

namespace fz {
namespace {

unsigned width_of(unsigned k) { return k == 1 || k == 2 ? 4 : k; }

void cpu_encode(ByteSpan in, unsigned k, Bytes& out, const Executor& exec) {
  Bytes differences, shuffled;
  diffnb::encode(in, width_of(k), differences, exec);
  bitshuffle::encode(differences, width_of(k), shuffled, exec);
  rze::encode(shuffled, 1, out, exec);
}

void cpu_decode(ByteSpan in, unsigned k, Bytes& out, size_t max_out, const Executor& exec) {
  Bytes shuffled, differences;
  rze::decode(in, 1, shuffled, max_out, exec);
  bitshuffle::decode(shuffled, width_of(k), differences, exec);
  diffnb::decode(differences, width_of(k), out, exec);
}

cudaError_t gpu_encode(const uint8_t* in, size_t n, unsigned k, uint8_t* out, uint64_t* encoded_size, void* scratch,
                       cudaStream_t stream) {
  return bitshuffle_rze::cuda::encode_differenced(in, n, width_of(k), out, encoded_size, scratch, stream);
}

cudaError_t gpu_decode(const uint8_t* in, size_t in_size, unsigned k, uint8_t* out, size_t max_out,
                       uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  return bitshuffle_rze::cuda::decode_differenced(in, in_size, width_of(k), out, max_out, decoded_size, status,
                                                  scratch, stream);
}

const testing::CudaWordCoder kFused{{cpu_encode, cpu_decode},
                                     bitshuffle_rze::cuda::encode_differenced_scratch_bytes,
                                     gpu_encode,
                                     bitshuffle_rze::cuda::decode_scratch_bytes,
                                     gpu_decode};

size_t hostile_trials() {
  const char* env = std::getenv("FZ_HOSTILE_TRIALS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 300;
}

TEST(DiffnbBitshuffleRzeCuda, EncodeMatchesTheCpuStagesAndDecodesTheirStreams) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_gpu_encode_matches_cpu(kFused);
}

TEST(DiffnbBitshuffleRzeCuda, HostileStreamsAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_hostile_streams_judged_like_the_cpu(kFused, hostile_trials());
}

TEST(DiffnbBitshuffleRzeCuda, LargeSizeTablesAreJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_large_size_tables_judged_like_the_cpu(kFused);
}

TEST(DiffnbBitshuffleRzeCuda, OneBlockAndPerSubchunkDecodesJudgedLikeTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_few_and_many_subchunks_judged_like_the_cpu(kFused);
}

TEST(DiffnbBitshuffleRzeCuda, RefusesBadWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  testing::expect_bad_word_sizes_refused_on_gpu(kFused);
}

TEST(DiffnbBitshuffleRzeCuda, RefusesMisalignedInputAndOutput) {
  FZ_SKIP_WITHOUT_CUDA();
  const testing::DeviceBuffer in(2 * kBlockBytes + 16), out(elimination::cuda::max_encoded_bytes(2 * kBlockBytes) + 16),
      scratch(kFused.encode_scratch_bytes(2 * kBlockBytes) + kFused.decode_scratch_bytes(out.size(), in.size())),
      size(8), status(4);
  EXPECT_EQ(bitshuffle_rze::cuda::encode_differenced(in.data() + 4, 2 * kBlockBytes, 4, out.data(),
                                                     size.as<uint64_t>(), scratch.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(bitshuffle_rze::cuda::decode_differenced(out.data(), 64, 8, in.data() + 8, 2 * kBlockBytes,
                                                     size.as<uint64_t>(), status.as<uint32_t>(), scratch.data(),
                                                     nullptr),
            cudaErrorInvalidValue);
  // Widths the fused coder leaves to the stages one by one.
  EXPECT_EQ(bitshuffle_rze::cuda::encode_differenced(in.data(), 2 * kBlockBytes, 2, out.data(), size.as<uint64_t>(),
                                                     scratch.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
}  // namespace fz
