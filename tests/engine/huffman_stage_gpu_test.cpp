// The Huffman stage on the GPU (kernels/huffman/huffman_stage_cuda.cpp): its
// stream equals the CPU's; its inverse decodes a stream stored in the frame
// (host bytes at hand) and one that another GPU stage rebuilt (RZE: only the
// device holds it, the stage reads its header back); damaged streams and the
// caller's size limit are refused exactly where the CPU refuses them. GPU
// tests: labelled "gpu", skipped where no CUDA device is usable.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "device_forward.hpp"
#include "bitshuffle/bitshuffle_stage.hpp"
#include "huffman/huffman_stage.hpp"
#include "pipeline.hpp"
#include "rze/rze_stage.hpp"
#include "stage_names.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {


constexpr huffman::Config kCusz{1024, 16, 16384};

// Symbols shaped like Lorenzo codes: a real field's neighbour differences
// around the middle of the alphabet.
Bytes field_codes(size_t n, double step) {
  const Bytes field = testing::read_field("wmag91.float");
  Bytes out(2 * n);
  float previous = 0;
  for (size_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, field.data() + 4 * (i % (field.size() / 4)), 4);
    const long q = std::lround((x - previous) / step) + 512;
    store_le<uint16_t>(out.data() + 2 * i, static_cast<uint16_t>(std::clamp<long>(q, 0, 1023)));
    previous = x;
  }
  return out;
}

Pipeline huffman_alone(const huffman::Config& c) {
  Pipeline p;
  p.add(make_huffman(c), {Pipeline::kChunk});
  return p;
}

Pipeline huffman_then_rze(const huffman::Config& c) {
  Pipeline p;
  const uint8_t bits = p.add(make_huffman(c), {Pipeline::kChunk})[0];
  p.add(make_rze(1), {bits});
  return p;
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& streams) {
  std::vector<ByteSpan> out;
  for (const Bytes& b : streams) out.emplace_back(b);
  return out;
}

std::optional<size_t> cpu_inverse(const Pipeline& p, const std::vector<ByteSpan>& stored, Bytes& dst,
                                  size_t max_stream_bytes) {
  auto exec = make_pool_executor(1);
  try {
    StageContext ctx{*exec, max_stream_bytes};
    return p.inverse_into(stored, dst.data(), dst.size(), ctx);
  } catch (const FormatError&) {
    return std::nullopt;
  }
}

void expect_round_trip(const Pipeline& p, const Bytes& data, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(runs_on_device(p));
  ASSERT_TRUE(inverse_runs_on_device(p));
  auto exec = make_pool_executor(2);
  StageContext ctx{*exec, data.size() + 4096};
  const std::vector<Bytes> cpu = p.forward(ByteSpan(data), ctx);
  const auto gpu = forward_on_device(p, ByteSpan(data), 0);
  ASSERT_TRUE(gpu.has_value());
  ASSERT_EQ(gpu->size(), cpu.size());
  for (size_t k = 0; k < cpu.size(); ++k) EXPECT_TRUE((*gpu)[k] == cpu[k]) << "stored buffer " << k;
  Bytes out(data.size() + 64, 0xA5);
  const auto length = inverse_on_device(p, spans(cpu), out.data(), out.size(), data.size() + 4096, 0);
  ASSERT_TRUE(length.has_value());
  ASSERT_EQ(*length, data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), out.begin()));
}

TEST(HuffmanStageOnDevice, StreamStoredInTheFrame) {
  FZ_SKIP_WITHOUT_CUDA();
  for (size_t n : {size_t{0}, size_t{1}, size_t{16383}, size_t{16385}, size_t{753571}})
    for (double step : {0.5, 0.01}) {
      expect_round_trip(huffman_alone(kCusz), field_codes(n, step),
                        "n " + std::to_string(n) + " step " + std::to_string(step));
    }
}

// RZE's GPU inverse rebuilds the Huffman stream on the device: the stage reads
// its header back. Blocks of 64 symbols make a block table longer than the
// first read (16 KiB), which takes a second.
TEST(HuffmanStageOnDevice, StreamRebuiltOnTheDevice) {
  FZ_SKIP_WITHOUT_CUDA();
  expect_round_trip(huffman_then_rze(kCusz), field_codes(753571, 0.05), "cusz blocks");
  expect_round_trip(huffman_then_rze(kCusz), field_codes(0, 0.05), "empty");
  expect_round_trip(huffman_then_rze(kCusz), Bytes(200000, 0), "one symbol: runs of zero words");
  expect_round_trip(huffman_then_rze(huffman::Config{1024, 16, 64}), field_codes(400000, 0.05),
                    "a block table of 25 KiB");
}

// The GPU Huffman stream's length stays on the device (the host does not
// wait for it). RZE and RRE read it there; a stage that needs it on the
// host sends the pipeline to the CPU, which writes the same bytes.
TEST(HuffmanStageOnDevice, OnlyStagesTakingDeviceLengthsFollowItOnTheDevice) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes data = field_codes(100000, 0.05);
  Pipeline shuffled;
  const uint8_t bits = shuffled.add(make_huffman(kCusz), {Pipeline::kChunk})[0];
  shuffled.add(make_bitshuffle(1), {bits});
  EXPECT_FALSE(make_huffman(kCusz)->device_output_size_on_host(0));
  EXPECT_TRUE(make_rze(1)->device_forward_takes_device_sizes());
  EXPECT_FALSE(make_bitshuffle(1)->device_forward_takes_device_sizes());
  EXPECT_FALSE(runs_on_device(shuffled));
  EXPECT_FALSE(forward_on_device(shuffled, ByteSpan(data), 0).has_value());
  EXPECT_TRUE(runs_on_device(huffman_then_rze(kCusz)));
}

TEST(HuffmanStageOnDevice, DamagedStreamsRefusedWhereTheCpuRefuses) {
  FZ_SKIP_WITHOUT_CUDA();
  const Pipeline p = huffman_alone(huffman::Config{1024, 16, 1000});
  const Bytes data = field_codes(20000, 0.05);
  auto exec = make_pool_executor(1);
  StageContext ctx{*exec, data.size()};
  const Bytes stream = p.forward(ByteSpan(data), ctx).at(0);
  std::mt19937_64 rng(7);
  size_t refused = 0, decoded = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Bytes damaged = stream;
    if (trial % 10 == 9) {
      damaged.resize(rng() % stream.size());
    } else {
      // Half the flips in the header and tables, half anywhere.
      const size_t span = trial % 2 ? damaged.size() : std::min<size_t>(damaged.size(), 800);
      const size_t bit = rng() % (8 * span);
      damaged[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    }
    Bytes cpu(data.size()), gpu(data.size());
    const auto cpu_length = cpu_inverse(p, {ByteSpan(damaged)}, cpu, data.size());
    const auto gpu_length = inverse_on_device(p, {ByteSpan(damaged)}, gpu.data(), gpu.size(), data.size(), 0);
    ASSERT_EQ(gpu_length.has_value(), cpu_length.has_value()) << "trial " << trial;
    if (!gpu_length) {
      ++refused;
      continue;
    }
    ++decoded;
    ASSERT_EQ(*gpu_length, *cpu_length);
    EXPECT_TRUE(gpu == cpu) << "trial " << trial;
  }
  EXPECT_GT(refused, 100u);
  // The limit: a stream that decodes to more than max_stream_bytes is refused.
  Bytes out(data.size());
  EXPECT_FALSE(inverse_on_device(p, {ByteSpan(stream)}, out.data(), out.size(), data.size() - 2, 0).has_value());
  EXPECT_FALSE(cpu_inverse(p, {ByteSpan(stream)}, out, data.size() - 2).has_value());
  EXPECT_TRUE(inverse_on_device(p, {ByteSpan(stream)}, out.data(), out.size(), data.size(), 0).has_value());
  EXPECT_TRUE(out == data);
}

TEST(HuffmanStageOnDevice, SymbolOutsideTheAlphabetIsAUsageError) {
  FZ_SKIP_WITHOUT_CUDA();
  Bytes data = field_codes(5000, 0.05);
  store_le<uint16_t>(data.data() + 2 * 4321, 1024);
  const Pipeline p = huffman_alone(kCusz);
  auto exec = make_pool_executor(1);
  StageContext ctx{*exec, data.size() + 4096};
  EXPECT_THROW(p.forward(ByteSpan(data), ctx), UsageError);
  EXPECT_THROW(forward_on_device(p, ByteSpan(data), 0), UsageError);
  data.push_back(0);  // odd length
  EXPECT_THROW(p.forward(ByteSpan(data), ctx), UsageError);
  EXPECT_THROW(forward_on_device(p, ByteSpan(data), 0), UsageError);
}

}  // namespace
}  // namespace fz::engine
