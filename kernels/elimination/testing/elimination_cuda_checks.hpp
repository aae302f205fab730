// Checks shared by the GPU tests of RZE and RRE: GPU encode gives the CPU's
// stream (and length) for every standard input and word size; GPU decode of
// CPU streams gives the input with status 0; and for hostile streams
// (truncations, flipped bits, wrong sizes, wrong lengths, random bytes) the
// GPU agrees with the CPU decoder: a nonzero status exactly where the CPU
// throws FormatError, the CPU's bytes otherwise, never a write past max_out.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "elimination/elimination_cuda.hpp"
#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"
#include "common/testing/word_coder_checks.hpp"

namespace fz::testing {

struct CudaWordCoder {
  WordCoder cpu;
  size_t (*encode_scratch_bytes)(size_t n);
  cudaError_t (*encode)(const uint8_t* in, size_t n, unsigned k, uint8_t* out, uint64_t* encoded_size,
                        void* scratch, cudaStream_t stream);
  size_t (*decode_scratch_bytes)(size_t in_size, size_t max_out);
  cudaError_t (*decode)(const uint8_t* in, size_t in_size, unsigned k, uint8_t* out, size_t max_out,
                        uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream);
};

inline Bytes gpu_encode(const CudaWordCoder& c, const Bytes& in, unsigned k) {
  const size_t capacity = elimination::cuda::max_encoded_bytes(in.size());
  const DeviceBuffer d_in = to_device(in);
  const DeviceBuffer d_out(capacity + kGuardBytes, kGuardFill);
  const DeviceBuffer scratch(c.encode_scratch_bytes(in.size()));
  const DeviceBuffer d_size(sizeof(uint64_t));
  EXPECT_EQ(c.encode(d_in.data(), in.size(), k, d_out.data(), d_size.as<uint64_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(guard_intact(d_out, capacity)) << "wrote past max_encoded_bytes";
  const uint64_t size = d_size.read<uint64_t>();
  EXPECT_LE(size, capacity);
  return d_out.download(std::min<size_t>(size, capacity));
}

struct GpuDecoded {
  Bytes out;
  uint64_t size = 0;
  uint32_t status = 0;
};

inline GpuDecoded gpu_decode(const CudaWordCoder& c, const Bytes& stream, unsigned k, size_t max_out) {
  // The stream alone in its allocation, so that an over-read is at least
  // likely to fault (compute-sanitizer catches every one).
  const DeviceBuffer d_in = to_device(stream);
  const DeviceBuffer d_out(max_out + kGuardBytes, kGuardFill);
  const DeviceBuffer scratch(c.decode_scratch_bytes(stream.size(), max_out));
  const DeviceBuffer d_size(sizeof(uint64_t));
  const DeviceBuffer d_status(sizeof(uint32_t));
  EXPECT_EQ(c.decode(d_in.data(), stream.size(), k, d_out.data(), max_out, d_size.as<uint64_t>(),
                     d_status.as<uint32_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(guard_intact(d_out, max_out)) << "wrote past max_out";
  GpuDecoded r;
  r.size = d_size.read<uint64_t>();
  r.status = d_status.read<uint32_t>();
  if (r.status == 0) r.out = d_out.download(std::min<size_t>(r.size, max_out));
  return r;
}

inline void expect_gpu_encode_matches_cpu(const CudaWordCoder& c) {
  std::vector<NamedInput> inputs = standard_inputs();
  inputs.push_back({"bitshuffled_smooth", bitshuffled_smooth(5 * kBlockBytes + 333)});
  inputs.push_back({"varying_density", varying_density_bytes(9 * kBlockBytes + 1000, 7)});
  for (const auto& input : inputs) {
    for (unsigned k : kWordSizes) {
      SCOPED_TRACE(input.name + " k=" + std::to_string(k));
      const Bytes cpu = c.cpu.encode(input.bytes, k);
      ASSERT_TRUE(same_bytes(gpu_encode(c, input.bytes, k), cpu)) << "encode";
      const GpuDecoded tight = gpu_decode(c, cpu, k, input.bytes.size());
      ASSERT_EQ(tight.status, 0u);
      ASSERT_EQ(tight.size, input.bytes.size());
      ASSERT_TRUE(same_bytes(tight.out, input.bytes)) << "decode of the CPU stream";
    }
  }
}

// The encoder told its input's length on the device (as a Huffman stream
// reaches it): for every standard input and word size, with allocations 0,
// 1 and 3 blocks + 7 bytes longer than the input (junk past it), the CPU's
// stream and nothing past max_encoded_bytes(capacity); a length above the
// capacity writes nothing but a length no allocation holds.
inline void expect_device_length_encode_matches_cpu(const CudaWordCoder& c, elimination::Rule rule) {
  std::vector<NamedInput> inputs = standard_inputs();
  inputs.push_back({"bitshuffled_smooth", bitshuffled_smooth(5 * kBlockBytes + 333)});
  for (const auto& input : inputs)
    for (unsigned k : kWordSizes)
      for (size_t slack : {size_t{0}, size_t{1}, 3 * kBlockBytes + 7}) {
        SCOPED_TRACE(input.name + " k=" + std::to_string(k) + " slack " + std::to_string(slack));
        const Bytes cpu = c.cpu.encode(input.bytes, k);
        Bytes padded = input.bytes;
        for (size_t i = 0; i < slack; ++i) padded.push_back(static_cast<uint8_t>(i * 37 + 1));
        const size_t capacity = padded.size();
        const size_t most = elimination::cuda::max_encoded_bytes(capacity);
        const DeviceBuffer d_in = to_device(padded);
        const DeviceBuffer d_out(most + kGuardBytes, kGuardFill);
        const DeviceBuffer scratch(c.encode_scratch_bytes(capacity));
        const DeviceBuffer d_size(sizeof(uint64_t));
        const DeviceBuffer d_length(sizeof(uint64_t));
        const uint64_t length = input.bytes.size();
        cudaMemcpy(d_length.data(), &length, sizeof length, cudaMemcpyHostToDevice);
        ASSERT_EQ(elimination::cuda::encode_device_length(d_in.data(), d_length.as<uint64_t>(), capacity, k, rule,
                                                          d_out.data(), d_size.as<uint64_t>(), scratch.data(), nullptr),
                  cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_TRUE(guard_intact(d_out, most)) << "wrote past max_encoded_bytes(capacity)";
        const uint64_t size = d_size.read<uint64_t>();
        ASSERT_LE(size, most);
        EXPECT_TRUE(same_bytes(d_out.download(size), cpu)) << "encode with the length on the device";
      }
  // A length above the capacity.
  const Bytes in(3 * kBlockBytes, 1);
  const DeviceBuffer d_in = to_device(in);
  const size_t most = elimination::cuda::max_encoded_bytes(in.size());
  const DeviceBuffer d_out(most + kGuardBytes, kGuardFill);
  const DeviceBuffer scratch(c.encode_scratch_bytes(in.size()));
  const DeviceBuffer d_size(sizeof(uint64_t));
  const DeviceBuffer d_length(sizeof(uint64_t));
  const uint64_t too_long = in.size() + 1;
  cudaMemcpy(d_length.data(), &too_long, sizeof too_long, cudaMemcpyHostToDevice);
  ASSERT_EQ(elimination::cuda::encode_device_length(d_in.data(), d_length.as<uint64_t>(), in.size(), 1, rule,
                                                    d_out.data(), d_size.as<uint64_t>(), scratch.data(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(d_size.read<uint64_t>(), ~uint64_t{0});
  EXPECT_TRUE(guard_intact(d_out, 0)) << "wrote for a length above the capacity";
}

// The GPU decoder's verdict on `stream` equals the CPU's.
inline void expect_same_verdict(const CudaWordCoder& c, const Bytes& stream, unsigned k, size_t max_out,
                                const std::string& what) {
  SCOPED_TRACE(what + " k=" + std::to_string(k) + " max_out=" + std::to_string(max_out));
  bool cpu_refused = false;
  Bytes cpu_out;
  try {
    cpu_out = c.cpu.decode(stream, k, max_out);
  } catch (const FormatError&) {
    cpu_refused = true;
  }
  const GpuDecoded gpu = gpu_decode(c, stream, k, max_out);
  if (cpu_refused) {
    EXPECT_NE(gpu.status, 0u) << "the CPU refuses this stream";
    EXPECT_EQ(gpu.size, 0u);
  } else {
    EXPECT_EQ(gpu.status, 0u) << "the CPU accepts this stream";
    EXPECT_EQ(gpu.size, cpu_out.size());
    EXPECT_TRUE(same_bytes(gpu.out, cpu_out));
  }
}

inline void expect_hostile_streams_judged_like_the_cpu(const CudaWordCoder& c, size_t flips_per_word_size) {
  std::mt19937_64 rng(1234);
  const std::vector<Bytes> inputs = {bitshuffled_smooth(3 * kBlockBytes + 100), smooth_words(20000, 4, 3),
                                     alternating_bytes(700)};
  for (const Bytes& in : inputs) {
    for (unsigned k : kWordSizes) {
      const Bytes coded = c.cpu.encode(in, k);
      const size_t chunks = block_count(in.size());
      // Truncations: every length of short streams, a sample of long ones.
      const size_t step = coded.size() < 2000 ? 1 : coded.size() / 300;
      for (size_t len = 0; len < coded.size(); len += step) {
        expect_same_verdict(c, Bytes(coded.begin(), coded.begin() + static_cast<std::ptrdiff_t>(len)), k, in.size(),
                            "truncated to " + std::to_string(len));
      }
      // Appended bytes.
      Bytes longer = coded;
      longer.push_back(0);
      expect_same_verdict(c, longer, k, in.size(), "one byte appended");
      // A decoded length above max_out, and max_out just enough.
      expect_same_verdict(c, coded, k, in.size() - 1, "max_out below n");
      expect_same_verdict(c, coded, k, in.size() + 12345, "max_out above n");
      // Wrong stored lengths.
      for (uint64_t n : {uint64_t{0}, uint64_t{in.size() - 1}, uint64_t{in.size() + 1}, ~uint64_t{0},
                         uint64_t{1} << 40}) {
        Bytes hostile = coded;
        store_le<uint64_t>(hostile.data(), n);
        expect_same_verdict(c, hostile, k, in.size() + 1, "n=" + std::to_string(n));
      }
      // Wrong sub-chunk sizes.
      for (size_t i = 0; i < chunks; ++i) {
        const uint16_t size = stored_size(coded, i);
        for (uint16_t wrong : {uint16_t(size + 1), uint16_t(size - 1), uint16_t(0), uint16_t(0xFFFF),
                               static_cast<uint16_t>(block_length(in.size(), i))}) {
          Bytes hostile = coded;
          store_le<uint16_t>(hostile.data() + 8 + 2 * i, wrong);
          expect_same_verdict(c, hostile, k, in.size(), "size[" + std::to_string(i) + "]=" + std::to_string(wrong));
        }
      }
      // Flipped bits, mostly in the payload.
      for (size_t trial = 0; trial < flips_per_word_size; ++trial) {
        Bytes hostile = coded;
        const int flips = 1 + static_cast<int>(rng() % 3);
        for (int f = 0; f < flips; ++f) {
          const size_t at =
              (rng() % 4 == 0) ? rng() % std::min<size_t>(hostile.size(), 40) : rng() % hostile.size();
          hostile[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
        expect_same_verdict(c, hostile, k, in.size(), "bit flips, trial " + std::to_string(trial));
      }
      // Random payload bytes behind the stream's own header and size table.
      for (int trial = 0; trial < 20; ++trial) {
        Bytes hostile = coded;
        for (size_t i = 8 + 2 * chunks; i < hostile.size(); ++i) hostile[i] = static_cast<uint8_t>(rng());
        expect_same_verdict(c, hostile, k, in.size(), "random payload, trial " + std::to_string(trial));
      }
    }
  }
  // Short streams of random bytes.
  for (int trial = 0; trial < 200; ++trial) {
    Bytes hostile = random_bytes(rng() % 64, rng());
    if (hostile.size() >= 8) store_le<uint64_t>(hostile.data(), rng() % 200);
    expect_same_verdict(c, hostile, kWordSizes[trial % 4], 256, "random stream " + std::to_string(trial));
  }
}

// Size tables longer than one block reads in one launch (4096 entries, 64 MiB
// of output) go through the device-wide scan: both sides of that line, intact
// and with a wrong size, a truncation and a tight max_out.
inline void expect_large_size_tables_judged_like_the_cpu(const CudaWordCoder& c) {
  for (size_t blocks : {size_t{4096}, size_t{4100}}) {
    Bytes in(blocks * kBlockBytes, 0);
    std::mt19937_64 rng(blocks);
    for (size_t i = 0; i < in.size(); i += 1 + rng() % 3000) in[i] = static_cast<uint8_t>(rng());
    for (unsigned k : {1u, 8u}) {
      const Bytes coded = c.cpu.encode(in, k);
      const std::string what = std::to_string(blocks) + " blocks";
      expect_same_verdict(c, coded, k, in.size(), what + ", intact");
      expect_same_verdict(c, coded, k, in.size() - 1, what + ", max_out below n");
      expect_same_verdict(c, Bytes(coded.begin(), coded.end() - 1), k, in.size(), what + ", truncated by one");
      for (size_t i : {size_t{0}, blocks - 1}) {
        Bytes hostile = coded;
        store_le<uint16_t>(hostile.data() + 8 + 2 * i, static_cast<uint16_t>(stored_size(coded, i) + 1));
        expect_same_verdict(c, hostile, k, in.size(), what + ", size[" + std::to_string(i) + "] + 1");
      }
    }
  }
}

// Streams of up to 4 sub-chunks decode in one launch of one block, longer ones
// with a block per sub-chunk: both sides of that line (4 and 5 sub-chunks),
// intact and damaged, judged and decoded as the CPU does.
inline void expect_few_and_many_subchunks_judged_like_the_cpu(const CudaWordCoder& c) {
  std::mt19937_64 rng(4);
  for (size_t bytes : {size_t{4} * kBlockBytes, size_t{4} * kBlockBytes + 1}) {
    const Bytes in = bitshuffled_smooth(bytes);
    for (unsigned k : kWordSizes) {
      const Bytes coded = c.cpu.encode(in, k);
      const std::string what = std::to_string(block_count(bytes)) + " sub-chunks";
      expect_same_verdict(c, coded, k, in.size(), what + ", intact");
      expect_same_verdict(c, coded, k, in.size() - 1, what + ", max_out below n");
      expect_same_verdict(c, Bytes(coded.begin(), coded.end() - 1), k, in.size(), what + ", truncated by one");
      for (size_t i = 0; i < block_count(bytes); ++i) {
        Bytes hostile = coded;
        store_le<uint16_t>(hostile.data() + 8 + 2 * i, static_cast<uint16_t>(stored_size(coded, i) - 1));
        expect_same_verdict(c, hostile, k, in.size(), what + ", size[" + std::to_string(i) + "] - 1");
      }
      for (int trial = 0; trial < 60; ++trial) {
        Bytes hostile = coded;
        hostile[rng() % hostile.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        expect_same_verdict(c, hostile, k, in.size(), what + ", bit flip " + std::to_string(trial));
      }
    }
  }
}

inline void expect_bad_word_sizes_refused_on_gpu(const CudaWordCoder& c) {
  const DeviceBuffer in(64), out(1024), scratch(c.decode_scratch_bytes(64, 1024) + c.encode_scratch_bytes(64)),
      size(8), status(4);
  for (unsigned k : {0u, 3u, 16u}) {
    EXPECT_EQ(c.encode(in.data(), 64, k, out.data(), size.as<uint64_t>(), scratch.data(), nullptr),
              cudaErrorInvalidValue);
    EXPECT_EQ(c.decode(in.data(), 64, k, out.data(), 1024, size.as<uint64_t>(), status.as<uint32_t>(),
                       scratch.data(), nullptr),
              cudaErrorInvalidValue);
  }
}

}  // namespace fz::testing
