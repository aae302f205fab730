// Fill mask on the GPU: the CPU's values and mask for widths 1, 2, 4, 8 and
// fills that matter (NaN, netCDF's -1e34, 0, all-ones), fill at the start and
// the end, runs across tile and carry-scan boundaries, all-fill, no fill, the
// real fields with land-mask-like fill; decoding gives the CPU's bytes, and
// for hostile streams (padding bits, wrong sizes) a nonzero status exactly
// where the CPU throws FormatError (skipped without a CUDA device).
#include "fillmask/fillmask_cuda.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"
#include "fillmask/fillmask.hpp"

namespace fz {
namespace {

using testing::DeviceBuffer;
using testing::same_bytes;

fillmask::Streams gpu_encode(const Bytes& in, unsigned width, uint64_t fill, size_t misalign = 0) {
  const size_t n = in.size() / width;
  const size_t mask_size = fillmask::cuda::mask_bytes(n);
  DeviceBuffer d_in(misalign + in.size());
  d_in.upload(in, misalign);
  DeviceBuffer values(misalign + in.size() + testing::kGuardBytes, testing::kGuardFill);
  DeviceBuffer mask(misalign + mask_size + testing::kGuardBytes, testing::kGuardFill);
  DeviceBuffer scratch(fillmask::cuda::encode_scratch_bytes(in.size(), width));
  EXPECT_EQ(fillmask::cuda::encode(d_in.data() + misalign, in.size(), width, fill, values.data() + misalign,
                                   mask.data() + misalign, scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(testing::guard_intact(values, misalign + in.size())) << "wrote past the values";
  EXPECT_TRUE(testing::guard_intact(mask, misalign + mask_size)) << "wrote past the mask";
  return {values.download(in.size(), misalign), mask.download(mask_size, misalign)};
}

struct GpuDecoded {
  uint32_t status = 0;
  Bytes out;
};

GpuDecoded gpu_decode(const Bytes& values, const Bytes& mask, unsigned width, uint64_t fill, size_t max_out) {
  const DeviceBuffer d_values = testing::to_device(values);
  const DeviceBuffer d_mask = testing::to_device(mask);
  DeviceBuffer out(max_out + testing::kGuardBytes, testing::kGuardFill);
  DeviceBuffer status(sizeof(uint32_t), 0xAB);
  EXPECT_EQ(fillmask::cuda::decode(d_values.data(), values.size(), d_mask.data(), mask.size(), width, fill,
                                   out.data(), max_out, status.as<uint32_t>(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(testing::guard_intact(out, std::min(values.size(), max_out))) << "wrote past the output";
  GpuDecoded r;
  r.status = status.read<uint32_t>();
  if (r.status == 0) r.out = out.download(values.size());
  return r;
}

// Encode on both, compare, then decode the CPU's streams on the GPU.
void expect_matches(const Bytes& in, unsigned width, uint64_t fill, const std::string& what, size_t misalign = 0) {
  SCOPED_TRACE(what + " width=" + std::to_string(width));
  fillmask::Streams cpu;
  fillmask::encode(in, width, fill, cpu);
  const fillmask::Streams gpu = gpu_encode(in, width, fill, misalign);
  ASSERT_TRUE(same_bytes(gpu.mask, cpu.mask)) << "mask";
  ASSERT_TRUE(same_bytes(gpu.values, cpu.values)) << "values";
  const GpuDecoded back = gpu_decode(cpu.values, cpu.mask, width, fill, in.size());
  ASSERT_EQ(back.status, 0u);
  ASSERT_TRUE(same_bytes(back.out, in)) << "decode";
}

template <typename T>
Bytes words_bytes(const std::vector<T>& words) {
  Bytes b(words.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), words.data(), b.size());
  return b;
}

// Patterns of n words: `is_fill(i)` chooses fill or a distinct data word.
template <typename T, typename Pred>
Bytes pattern(size_t n, uint64_t fill, Pred is_fill, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> w(n);
  for (size_t i = 0; i < n; ++i) {
    if (is_fill(i)) {
      w[i] = static_cast<T>(fill);
    } else {
      T v = static_cast<T>(rng());
      if (v == static_cast<T>(fill)) v = static_cast<T>(v ^ 1);
      w[i] = v;
    }
  }
  return words_bytes(w);
}

// Fill bits per width: NaN and -1e34 for floats, 0 and all ones for any.
std::vector<uint64_t> fills_for(unsigned width) {
  std::vector<uint64_t> fills = {0, width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1};
  if (width == 4) {
    float nan = std::nanf(""), netcdf = -1e34f;
    uint32_t a, b;
    std::memcpy(&a, &nan, 4);
    std::memcpy(&b, &netcdf, 4);
    fills.push_back(a);
    fills.push_back(b);
  }
  if (width == 8) {
    double nan = std::nan(""), netcdf = -1e34;
    uint64_t a, b;
    std::memcpy(&a, &nan, 8);
    std::memcpy(&b, &netcdf, 8);
    fills.push_back(a);
    fills.push_back(b);
  }
  if (width == 2) fills.push_back(0x7E00);  // float16 NaN bits
  return fills;
}

template <typename T>
void sweep_patterns(uint64_t fill) {
  constexpr unsigned width = sizeof(T);
  constexpr size_t kTile = 4096;  // the kernels' tile; sizes around it and the carry scan's 1024 tiles
  const size_t sizes[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, kTile - 1, kTile, kTile + 1, 3 * kTile + 5, 16385, 100003};
  for (size_t n : sizes) {
    const std::string at = "n=" + std::to_string(n) + " fill=" + std::to_string(fill);
    expect_matches(pattern<T>(n, fill, [](size_t) { return false; }, n), width, fill, "no fill " + at);
    expect_matches(pattern<T>(n, fill, [](size_t) { return true; }, n), width, fill, "all fill " + at);
    expect_matches(pattern<T>(n, fill, [](size_t i) { return i == 0; }, n), width, fill, "fill at start " + at);
    expect_matches(pattern<T>(n, fill, [n](size_t i) { return i + 1 == n; }, n), width, fill, "fill at end " + at);
    expect_matches(pattern<T>(n, fill, [n](size_t i) { return i + 1 != n; }, n), width, fill,
                   "only last is data " + at);
    expect_matches(pattern<T>(n, fill, [](size_t i) { return i != 5000; }, n), width, fill, "one data word " + at);
    expect_matches(pattern<T>(n, fill, [](size_t i) { return i % 10 < 7; }, n), width, fill, "runs " + at);
    expect_matches(pattern<T>(n, fill, [](size_t i) { return (i / 3000) % 2 == 0; }, n), width, fill,
                   "long runs across tiles " + at);
    std::mt19937 rng(static_cast<unsigned>(n));
    std::vector<bool> coin(n);
    for (size_t i = 0; i < n; ++i) coin[i] = rng() % 2;
    expect_matches(pattern<T>(n, fill, [&coin](size_t i) { return coin[i]; }, n), width, fill, "random " + at);
  }
}

TEST(FillmaskCuda, MatchesTheCpuOnPatterns) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint64_t fill : fills_for(1)) sweep_patterns<uint8_t>(fill);
  for (uint64_t fill : fills_for(2)) sweep_patterns<uint16_t>(fill);
  for (uint64_t fill : fills_for(4)) sweep_patterns<uint32_t>(fill);
  for (uint64_t fill : fills_for(8)) sweep_patterns<uint64_t>(fill);
}

// More than 1024 tiles (the carry scan's block): the incoming value crosses
// scan passes, and a first data word far into the chunk feeds every fill
// element before it.
TEST(FillmaskCuda, CarriesAcrossManyTiles) {
  FZ_SKIP_WITHOUT_CUDA();
  const size_t n = 6'000'000;
  expect_matches(pattern<uint8_t>(n, 0xFF, [](size_t i) { return i < 4'500'000 || i % 1'000'000 != 7; }, 1), 1,
                 0xFF, "sparse data, first at 4.5M");
  expect_matches(pattern<uint32_t>(n, 0xF7F684DF, [](size_t i) { return i > 100 && i < 5'900'000; }, 2), 4,
                 0xF7F684DF, "one long run");
  expect_matches(pattern<uint64_t>(n, 0, [](size_t) { return true; }, 3), 8, 0, "all fill, large");
}

// The header's worked example, byte for byte.
TEST(FillmaskCuda, WorkedExample) {
  FZ_SKIP_WITHOUT_CUDA();
  const float f = -1e34f;
  const std::vector<float> x = {f, f, 1.5f, f, 2.0f, 2.5f, f, f, f, 3.0f};
  const fillmask::Streams gpu = gpu_encode(words_bytes(x), 4, 0xF7F684DF);
  EXPECT_EQ(gpu.mask, (Bytes{0xCB, 0x01}));
  EXPECT_EQ(gpu.values, words_bytes(std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, 2.0f, 2.5f, 2.5f, 2.5f, 2.5f, 3.0f}));
}

// Real fields with the values below a threshold made fill (-1e34 or NaN), as a
// land mask makes them.
TEST(FillmaskCuda, MatchesTheCpuOnRealFields) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const std::string& name : testing::field_names()) {
    const Bytes field = testing::read_field(name);
    const bool f64 = name.find("f64") != std::string::npos;
    expect_matches(field, f64 ? 8 : 4, 0, name + " as it is");
    Bytes masked = field;
    if (f64) {
      const double fill = -1e34;
      for (size_t i = 0; i + 8 <= masked.size(); i += 8) {
        double v;
        std::memcpy(&v, masked.data() + i, 8);
        if (v < 0) std::memcpy(masked.data() + i, &fill, 8);
      }
      uint64_t bits;
      std::memcpy(&bits, &fill, 8);
      expect_matches(masked, 8, bits, name + " negative values as -1e34");
    } else {
      const float fill = std::nanf("");
      std::vector<float> v(masked.size() / 4);
      std::memcpy(v.data(), masked.data(), masked.size());
      const float threshold = v[v.size() / 2];  // some value of the field: roughly half below it
      for (float& e : v)
        if (e < threshold) e = fill;
      masked = words_bytes(v);
      uint32_t bits;
      std::memcpy(&bits, &fill, 4);
      expect_matches(masked, 4, bits, name + " low values as NaN");
    }
  }
}

TEST(FillmaskCuda, MatchesTheCpuAtAnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in = pattern<uint32_t>(20000, 7, [](size_t i) { return i % 7 < 3; }, 9);
  for (size_t misalign : {1, 2, 3, 5}) expect_matches(in, 4, 7, "misalign " + std::to_string(misalign), misalign);
  const Bytes wide = pattern<uint64_t>(9999, 0, [](size_t i) { return i % 5 == 0; }, 10);
  for (size_t misalign : {1, 4, 7}) expect_matches(wide, 8, 0, "misalign " + std::to_string(misalign), misalign);
}

TEST(FillmaskCuda, RefusesWhatTheCpuRefusesAsUsage) {
  FZ_SKIP_WITHOUT_CUDA();
  DeviceBuffer in(64), values(64), mask(64), scratch(4096), status(4);
  EXPECT_EQ(fillmask::cuda::encode(in.data(), 64, 3, 0, values.data(), mask.data(), scratch.data(), nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(fillmask::cuda::encode(in.data(), 62, 4, 0, values.data(), mask.data(), scratch.data(), nullptr),
            cudaErrorInvalidValue) << "not whole elements";
  EXPECT_EQ(fillmask::cuda::encode(in.data(), 64, 2, 0x10000, values.data(), mask.data(), scratch.data(), nullptr),
            cudaErrorInvalidValue) << "fill bits above the width";
  EXPECT_EQ(fillmask::cuda::decode(values.data(), 64, mask.data(), 2, 1, 0x100, in.data(), 64, status.as<uint32_t>(),
                                   nullptr),
            cudaErrorInvalidValue);
}

// The GPU refuses exactly what the CPU refuses and decodes the rest as it does.
void expect_decode_agrees(const Bytes& values, const Bytes& mask, unsigned width, uint64_t fill, size_t max_out,
                          const std::string& what) {
  SCOPED_TRACE(what + " width=" + std::to_string(width) + " values=" + std::to_string(values.size()) +
               " mask=" + std::to_string(mask.size()) + " max_out=" + std::to_string(max_out));
  bool cpu_ok = true;
  Bytes cpu;
  try {
    fillmask::decode(values, mask, width, fill, cpu, max_out);
  } catch (const FormatError&) {
    cpu_ok = false;
  }
  const GpuDecoded gpu = gpu_decode(values, mask, width, fill, max_out);
  ASSERT_EQ(gpu.status == 0, cpu_ok) << "status " << gpu.status;
  if (cpu_ok) {
    EXPECT_TRUE(same_bytes(gpu.out, cpu));
  }
}

TEST(FillmaskCuda, HostileStreamsAreRefusedExactlyAsOnTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(5);
  for (unsigned width : testing::kCudaWidths)
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4097}, size_t{20001}}) {
      const uint64_t fill = fills_for(width).back();
      const Bytes values = testing::random_bytes(n * width, n + width);
      Bytes mask = testing::random_bytes(fillmask::cuda::mask_bytes(n), n);
      if (n % 8 != 0) mask.back() &= static_cast<uint8_t>((1u << (n % 8)) - 1);
      const std::string at = "n=" + std::to_string(n);
      // Valid: any values (a lossy stage may have changed those at fill positions), any mask bits.
      expect_decode_agrees(values, mask, width, fill, values.size(), "valid " + at);
      expect_decode_agrees(values, mask, width, fill, values.size() + 100, "valid, room to spare " + at);
      // Every padding bit of the last byte, one at a time.
      for (unsigned bit = n % 8; n % 8 != 0 && bit < 8; ++bit) {
        Bytes bad = mask;
        bad[bad.size() - 1] = static_cast<uint8_t>(bad[bad.size() - 1] | (1u << bit));
        expect_decode_agrees(values, bad, width, fill, values.size(), "padding bit " + std::to_string(bit) + " " + at);
      }
      // Mask one byte short, one long, empty.
      if (!mask.empty()) {
        expect_decode_agrees(values, Bytes(mask.begin(), mask.end() - 1), width, fill, values.size(),
                             "short mask " + at);
      }
      Bytes longer = mask;
      longer.push_back(0);
      expect_decode_agrees(values, longer, width, fill, values.size(), "long mask " + at);
      expect_decode_agrees(values, Bytes{}, width, fill, values.size(), "no mask " + at);
      // Values not whole elements, or decoding to more than allowed.
      if (width > 1) {
        Bytes ragged = values;
        ragged.push_back(static_cast<uint8_t>(rng()));
        expect_decode_agrees(ragged, mask, width, fill, ragged.size(), "ragged values " + at);
      }
      if (!values.empty()) expect_decode_agrees(values, mask, width, fill, values.size() - 1, "over the limit " + at);
    }
}

}  // namespace
}  // namespace fz
