// Checks shared by the GPU tests of the length-preserving width transforms
// (bitshuffle, diffnb): on every standard input and width, GPU encode gives
// the CPU's bytes, GPU decode inverts the CPU's streams and decodes arbitrary
// bytes as the CPU does, at any buffer alignment, never writing past the end.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "common/bytes.hpp"
#include "common/executor.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"

namespace fz::testing {

inline constexpr unsigned kCudaWidths[] = {1, 2, 4, 8};

// Equal byte strings, or where they first differ (never the whole strings).
inline ::testing::AssertionResult same_bytes(const Bytes& actual, const Bytes& expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "sizes differ: " << actual.size() << " vs " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] != expected[i])
      return ::testing::AssertionFailure() << "first difference at byte " << i << ": " << int{actual[i]} << " vs "
                                           << int{expected[i]};
  }
  return ::testing::AssertionSuccess();
}

struct CudaWidthTransform {
  using CpuCoder = void (*)(ByteSpan, unsigned, Bytes&, const Executor&);
  using GpuCoder = cudaError_t (*)(const uint8_t*, size_t, unsigned, uint8_t*, cudaStream_t);
  CpuCoder cpu_encode;
  CpuCoder cpu_decode;
  GpuCoder gpu_encode;
  GpuCoder gpu_decode;
};

// Runs a GPU coder on `in` placed `misalign` bytes past an aligned address,
// writing `misalign` bytes past one too; checks the guard after the output.
inline Bytes run_on_gpu(CudaWidthTransform::GpuCoder coder, const Bytes& in, unsigned width, size_t misalign = 0) {
  DeviceBuffer d_in(in.size() + misalign);
  d_in.upload(in, misalign);
  DeviceBuffer d_out(misalign + in.size() + kGuardBytes, kGuardFill);
  EXPECT_EQ(coder(d_in.data() + misalign, in.size(), width, d_out.data() + misalign, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(guard_intact(d_out, misalign + in.size())) << "wrote past the output";
  return d_out.download(in.size(), misalign);
}

inline void expect_gpu_matches_cpu_on_standard_inputs(const CudaWidthTransform& t) {
  for (const auto& input : standard_inputs()) {
    for (unsigned width : kCudaWidths) {
      SCOPED_TRACE(input.name + " width=" + std::to_string(width));
      Bytes cpu;
      t.cpu_encode(input.bytes, width, cpu, serial_executor());
      ASSERT_TRUE(same_bytes(run_on_gpu(t.gpu_encode, input.bytes, width), cpu)) << "encode";
      ASSERT_TRUE(same_bytes(run_on_gpu(t.gpu_decode, cpu, width), input.bytes)) << "decode of the CPU stream";
      // Any bytes are a stream: decoding the input itself must agree too.
      Bytes cpu_decoded;
      t.cpu_decode(input.bytes, width, cpu_decoded, serial_executor());
      ASSERT_TRUE(same_bytes(run_on_gpu(t.gpu_decode, input.bytes, width), cpu_decoded)) << "decode of raw bytes";
    }
  }
}

inline void expect_gpu_matches_cpu_misaligned(const CudaWidthTransform& t) {
  const Bytes in = smooth_words(3 * 16384 + 1001, 8, 11);
  for (unsigned width : kCudaWidths) {
    Bytes cpu;
    t.cpu_encode(in, width, cpu, serial_executor());
    for (size_t misalign : {1, 2, 3, 5}) {
      SCOPED_TRACE("width=" + std::to_string(width) + " misalign=" + std::to_string(misalign));
      EXPECT_TRUE(same_bytes(run_on_gpu(t.gpu_encode, in, width, misalign), cpu));
      EXPECT_TRUE(same_bytes(run_on_gpu(t.gpu_decode, cpu, width, misalign), in));
    }
  }
}

inline void expect_bad_widths_refused(const CudaWidthTransform& t) {
  DeviceBuffer in(16), out(16);
  for (unsigned width : {0u, 3u, 5u, 16u}) {
    EXPECT_EQ(t.gpu_encode(in.data(), 16, width, out.data(), nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(t.gpu_decode(in.data(), 16, width, out.data(), nullptr), cudaErrorInvalidValue);
  }
}

}  // namespace fz::testing
