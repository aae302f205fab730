// Device memory per chunk (issue 31 item 5), on the device-resident API: a
// large chunk's compress and decompress hold no more than their budgets
// beyond the caller's input and output (the default memory pool's high-water
// mark, which the engine allocates from), the chunk is decoded straight into
// the caller's buffer where it may be and copied where it may not, and
// Lorenzo's outlier stream, whose room stops at the chunk's size, still
// gives the CPU's (raw) frame when noise makes it longer. Skips without a
// CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "api_internal.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {

using testing::DeviceBuffer;
using testing::to_device;

// wmag91 mirrored out to side^3 float32 (smooth joins, as compressible as the field).
Bytes mirrored_wmag(size_t side) {
  const Bytes w = testing::read_field("wmag91.float");
  auto m = [](size_t i) { const size_t r = i % 182; return r < 91 ? r : 181 - r; };
  Bytes out(side * side * side * 4);
  for (size_t z = 0; z < side; ++z)
    for (size_t y = 0; y < side; ++y)
      for (size_t x = 0; x < side; ++x)
        std::memcpy(out.data() + 4 * ((z * side + y) * side + x), w.data() + 4 * ((m(z) * 91 + m(y)) * 91 + m(x)), 4);
  return out;
}

// Bytes the engine held at its peak during `call`, beyond what it held before
// (lane arenas, up to 64 MiB each, stay in use between calls: the caller
// warms them up first).
template <typename Call>
size_t pool_peak_during(Call&& call) {
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, device), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  uint64_t before = 0, high = 0;  // (cuuint64_t, which the runtime API does not declare)
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &before), cudaSuccess);
  EXPECT_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), cudaSuccess);  // resets it
  call();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), cudaSuccess);
  return high > before ? static_cast<size_t>(high - before) : 0;
}

Options noa(Preset preset, double bound) {
  Options o;
  o.preset = preset;
  o.mode = ErrorMode::Noa;
  o.bound = bound;
  return o;
}

// A 64 MiB chunk (the size from which Lorenzo, the quantizer and the spline
// size their outliers exactly): the device's frame is the CPU's, it decodes
// to the CPU's bytes, and the engine holds no more than each preset's budget
// beyond input and output (before issue 31 item 5, on 512 MiB: fzgpu and
// cusz 5.4-5.9x compressing, every stream and scratch array kept to the end
// and the outliers' room 3.25x the chunk, 3.7-3.9x decompressing, two
// chunk-sized arrays in Lorenzo's decoder and the chunk decoded beside the
// caller's buffer, then copied; pfpl 4.1 / 3.1x; the spline presets 3.6-5.1x
// compressing, the side stream's room 2x the chunk).
TEST(DeviceMemory, LargeChunksStayWithinTheirBudgets) {
  FZ_SKIP_WITHOUT_CUDA();
  const size_t side = 256;
  const Bytes data = mirrored_wmag(side);
  const std::vector<uint64_t> dims{side, side, side};
  const DataType dtype = DataType::of<float>();
  const DeviceBuffer d_data = to_device(data);
  DeviceBuffer d_frame(max_frame_bytes(data.size(), 3));
  DeviceBuffer d_out(data.size());
  // Budgets x the chunk, compressing and decompressing: Lorenzo's prequantized
  // words and codes (1.5x) beside the streams; pfpl's codes and the coded
  // stream (2x), its codes rebuilt beside the chunk (1x); the spline's codes
  // and what the code coder makes of them.
  struct Budget {
    Preset preset;
    double compress, decompress;
  };
  for (const Budget& b : {Budget{Preset::Fzgpu, 2.0, 0.75}, Budget{Preset::Cusz, 2.0, 0.75},
                          Budget{Preset::Pfpl, 2.25, 1.25}, Budget{Preset::CuszHiTp, 2.0, 1.0},
                          Budget{Preset::CuszHiCr, 2.75, 1.0}}) {
    const Preset preset = b.preset;
    const Options o = noa(preset, 1e-3);
    const std::string what = preset_name(preset);
    const Bytes cpu = compress_with(data.data(), data.size(), dtype, dims, o, BackendUse::kCpu);
    // Two calls first: the lane's arena grows to its size after the first.
    size_t n = 0;
    for (int warm = 0; warm < 2; ++warm)
      n = compress_on_device(d_data.data(), data.size(), dtype, dims, o, d_frame.data(), d_frame.size());
    const size_t compress_peak = pool_peak_during([&] {
      n = compress_on_device(d_data.data(), data.size(), dtype, dims, o, d_frame.data(), d_frame.size());
    });
    ASSERT_EQ(d_frame.download(n), cpu) << what << ": the device's frame differs from the CPU's";
    Bytes expected(data.size());
    ASSERT_EQ(decompress_into_on(cpu.data(), cpu.size(), expected.data(), expected.size(), 0, BackendUse::kCpu),
              data.size());
    size_t m = 0;
    for (int warm = 0; warm < 2; ++warm) m = decompress_on_device(d_frame.data(), n, d_out.data(), d_out.size());
    const size_t decompress_peak =
        pool_peak_during([&] { m = decompress_on_device(d_frame.data(), n, d_out.data(), d_out.size()); });
    ASSERT_EQ(m, data.size()) << what;
    EXPECT_EQ(d_out.download(m), expected) << what << ": the device's decode differs from the CPU's";
    const double chunk = static_cast<double>(data.size());
    EXPECT_LE(compress_peak / chunk, b.compress) << what << ": device memory while compressing, x the chunk";
    EXPECT_LE(decompress_peak / chunk, b.decompress) << what << ": device memory while decompressing, x the chunk";
    std::printf("%s, 64 MiB chunk: device memory %.2fx compressing, %.2fx decompressing\n", what.c_str(),
                compress_peak / chunk, decompress_peak / chunk);
  }
}

// Decoding straight into the caller's buffer is only for an aligned buffer
// apart from the frame: an unaligned one, and one over the frame's own bytes
// (which the decoders still read), get the chunk copied there afterwards.
// And a chunk off 16 bytes gives the same frame through the fused coders'
// fallbacks.
TEST(DeviceMemory, DecodesIntoAnyOutputBuffer) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes data = testing::read_field("wmag91.float");
  const std::vector<uint64_t> dims{91, 91, 91};
  for (Preset preset : {Preset::Fzgpu, Preset::Cusz, Preset::Pfpl, Preset::Lossless}) {
    const Options o = preset == Preset::Lossless ? Options{} : noa(preset, 1e-3);
    const std::string what = preset_name(preset);
    const Bytes frame = compress_with(data.data(), data.size(), DataType::of<float>(), dims, o, BackendUse::kCpu);
    Bytes expected(data.size());
    ASSERT_EQ(decompress_into_on(frame.data(), frame.size(), expected.data(), expected.size(), 0, BackendUse::kCpu),
              data.size());
    // Frame first, then room for the chunk that begins inside the frame.
    DeviceBuffer buffer(frame.size() + data.size() + 64);
    ASSERT_EQ(cudaMemcpy(buffer.data(), frame.data(), frame.size(), cudaMemcpyHostToDevice), cudaSuccess);
    uint8_t* over_frame = buffer.data() + frame.size() / 2 / 256 * 256;
    ASSERT_EQ(decompress_on_device(buffer.data(), frame.size(), over_frame, data.size()), data.size()) << what;
    EXPECT_EQ(buffer.download(data.size(), static_cast<size_t>(over_frame - buffer.data())), expected)
        << what << ": output over the frame";
    // An unaligned chunk too: the fused coders' fallbacks (the stages one by one).
    DeviceBuffer unaligned(data.size() + 16);
    ASSERT_EQ(cudaMemcpy(unaligned.data() + 4, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
    DeviceBuffer from_unaligned(max_frame_bytes(data.size(), 3));
    const size_t n = compress_on_device(unaligned.data() + 4, data.size(), DataType::of<float>(), dims, o,
                                        from_unaligned.data(), from_unaligned.size());
    EXPECT_EQ(from_unaligned.download(n), frame) << what << ": frame of an unaligned chunk";
    const DeviceBuffer d_frame = to_device(frame);
    DeviceBuffer out(data.size() + 64);
    ASSERT_EQ(decompress_on_device(d_frame.data(), frame.size(), out.data() + 4, data.size()), data.size()) << what;
    EXPECT_EQ(out.download(data.size(), 4), expected) << what << ": unaligned output";
  }
}

// Noise under a tight bound makes nearly every element an outlier (Lorenzo's
// records, the quantizer's outliers, the spline's side stream), streams up to
// 3.25x the chunk: on the device their room stops at the chunk's size, and
// the frame is the raw one, as the CPU writes it. Both ways of sizing the
// room: capped (1 MiB) and read back (64 MiB).
TEST(DeviceMemory, OutliersLongerThanTheChunkGiveTheRawFrame) {
  FZ_SKIP_WITHOUT_CUDA();
  for (size_t side : {64, 256}) {
    std::mt19937 rng(static_cast<uint32_t>(side));
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    Bytes data(side * side * side * 4);
    for (size_t i = 0; i < data.size(); i += 4) {
      const float v = uniform(rng);
      std::memcpy(data.data() + i, &v, 4);
    }
    const std::vector<uint64_t> dims{side, side, side};
    for (Preset preset : {Preset::Fzgpu, Preset::Cusz, Preset::Pfpl, Preset::CuszHiTp}) {
      Options o;
      o.preset = preset;
      o.mode = ErrorMode::Abs;
      o.bound = 1e-7;
      const std::string what = std::string(preset_name(preset)) + " side " + std::to_string(side);
      const Bytes cpu = compress_with(data.data(), data.size(), DataType::of<float>(), dims, o, BackendUse::kCpu);
      // (pfpl keeps most of this noise as codes: its outliers, sized exactly
      // at 64 MiB, are many but fewer than the elements.)
      if (preset != Preset::Pfpl) {
        ASSERT_TRUE(inspect(cpu.data(), cpu.size()).raw) << what << ": the CPU's frame should be raw";
      }
      const DeviceBuffer d_data = to_device(data);
      DeviceBuffer d_frame(max_frame_bytes(data.size(), 3));
      const size_t n =
          compress_on_device(d_data.data(), data.size(), DataType::of<float>(), dims, o, d_frame.data(), d_frame.size());
      EXPECT_EQ(d_frame.download(n), cpu) << what << ": device-resident";
      const Bytes gpu = compress_with(data.data(), data.size(), DataType::of<float>(), dims, o, BackendUse::kGpu);
      EXPECT_EQ(gpu, cpu) << what << ": host chunk on the GPU";
    }
  }
}

}  // namespace
}  // namespace fz
