// NOA's value range on the GPU (cuda/value_range_cuda.hpp) against the CPU's
// finite_range and contains_element: the same FiniteRange, bit for bit, for
// real fields and hostile inputs, both widths and byte orders, every size
// class and unaligned device pointers. Also prints the range pass's GB/s on a
// 512 MiB float32 buffer (information, no assertion). GPU test: labelled
// "gpu", skipped where no CUDA device is usable.
#include "cuda/value_range_cuda.hpp"

#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "thread_pool.hpp"
#include "value_range.hpp"

namespace fz::engine {
namespace {


#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Device memory for one test, freed at the end.
struct DeviceMemory {
  uint8_t* p = nullptr;
  explicit DeviceMemory(size_t bytes) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(bytes, 1)) != cudaSuccess) p = nullptr;
  }
  ~DeviceMemory() { cudaFree(p); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

uint64_t bits_of(double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}

// Equal as the engine uses them: flags, and min/max with their exact bits
// (so -0.0 and +0.0 differ).
::testing::AssertionResult same_range(const FiniteRange& gpu, const FiniteRange& cpu) {
  if (gpu.any == cpu.any && gpu.has_fill == cpu.has_fill && gpu.has_missing == cpu.has_missing &&
      bits_of(gpu.min) == bits_of(cpu.min) && bits_of(gpu.max) == bits_of(cpu.max))
    return ::testing::AssertionSuccess();
  char text[256];
  std::snprintf(text, sizeof text, "GPU any %d fill %d missing %d [%a, %a] vs CPU any %d fill %d missing %d [%a, %a]",
                gpu.any, gpu.has_fill, gpu.has_missing, gpu.min, gpu.max, cpu.any, cpu.has_fill, cpu.has_missing,
                cpu.min, cpu.max);
  return ::testing::AssertionFailure() << text;
}

// Runs both device functions over `bytes` placed `offset` bytes into a device
// buffer (offset 0: as cudaMalloc returns it). One stream, one download.
struct Runner {
  cudaStream_t stream = nullptr;
  Runner() { cudaStreamCreate(&stream); }
  ~Runner() { cudaStreamDestroy(stream); }

  struct Result {
    FiniteRange range;
    bool contains = false;
  };

  Result run(const Bytes& bytes, size_t offset, unsigned width, bool big_endian, std::optional<uint64_t> fill,
             uint64_t pattern, std::optional<uint64_t> missing = std::nullopt) {
    struct Downloaded {
      cuda::DeviceRange range;
      uint32_t found;
    };
    DeviceMemory data(bytes.size() + offset);
    DeviceMemory scratch(cuda::finite_range_scratch_bytes(bytes.size(), width));
    DeviceMemory small(sizeof(Downloaded));
    EXPECT_TRUE(data.p && scratch.p && small.p);
    auto* out = reinterpret_cast<Downloaded*>(small.p);
    // Poison: every field must be written.
    EXPECT_EQ(cudaMemsetAsync(small.p, 0xA7, sizeof(Downloaded), stream), cudaSuccess);
    if (!bytes.empty()) {
      EXPECT_EQ(cudaMemcpyAsync(data.p + offset, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream),
                cudaSuccess);
    }
    EXPECT_EQ(cuda::finite_range(data.p + offset, bytes.size(), width, big_endian, fill, missing, &out->range, scratch.p,
                                 stream),
              cudaSuccess);
    EXPECT_EQ(cuda::contains_element(data.p + offset, bytes.size(), width, big_endian, pattern, &out->found, stream),
              cudaSuccess);
    Downloaded host{};
    EXPECT_EQ(cudaMemcpyAsync(&host, small.p, sizeof host, cudaMemcpyDeviceToHost, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_LE(host.found, 1u);
    EXPECT_LE(host.range.any, 1u);
    EXPECT_LE(host.range.has_fill, 1u);
    EXPECT_LE(host.range.has_missing, 1u);
    return {cuda::to_finite_range(host.range, width), host.found == 1};
  }
};

// Checks one input against the CPU at several offsets, both byte orders.
void check_input(Runner& runner, const std::string& what, const Bytes& native, unsigned width,
                 std::optional<uint64_t> fill, uint64_t pattern, const std::vector<size_t>& offsets,
                 std::optional<uint64_t> missing = std::nullopt) {
  for (bool big : {false, true}) {
    Bytes bytes = native;
    if (big)
      for (size_t i = 0; i + width <= bytes.size(); i += width) std::reverse(bytes.begin() + i, bytes.begin() + i + width);
    const FiniteRange cpu = finite_range(ByteSpan(bytes), width, big, fill, missing, serial_executor());
    const bool cpu_contains = contains_element(ByteSpan(bytes), width, big, pattern);
    for (size_t offset : offsets) {
      const Runner::Result gpu = runner.run(bytes, offset, width, big, fill, pattern, missing);
      EXPECT_TRUE(same_range(gpu.range, cpu)) << what << (big ? " big-endian" : "") << " offset " << offset;
      EXPECT_EQ(gpu.contains, cpu_contains) << what << (big ? " big-endian" : "") << " offset " << offset;
    }
  }
}

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
uint64_t element_bits(T x) {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof x);
  return b;
}

TEST(ValueRangeGpu, RealFieldsMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  Runner runner;
  for (const std::string& name : testing::field_names()) {
    const Bytes field = testing::read_field(name);
    const unsigned width = name.find("f64") != std::string::npos ? 8 : 4;
    // Fill: an element that occurs (a value from the middle), and one that does not.
    uint64_t present = 0;
    std::memcpy(&present, field.data() + (field.size() / width / 2) * width, width);
    const uint64_t absent = width == 4 ? element_bits(-1e34f) : element_bits(-1e300);
    for (std::optional<uint64_t> fill : {std::optional<uint64_t>{}, std::optional<uint64_t>{present},
                                         std::optional<uint64_t>{absent}})
      check_input(runner, name, field, width, fill, present, {0, 3, static_cast<size_t>(width)});
    check_input(runner, name + " absent pattern", field, width, std::nullopt, absent, {0});
  }
}

// Two special values (HDF5's fill value and a missing value, issue 28 item
// 1): both left out of the range and both reported, on the GPU as on the
// CPU; present, absent, equal to each other, and the missing value alone.
TEST(ValueRangeGpu, FillAndMissingValuesMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  Runner runner;
  for (const std::string& name : testing::field_names()) {
    Bytes field = testing::read_field(name);
    const unsigned width = name.find("f64") != std::string::npos ? 8 : 4;
    const uint64_t fill = width == 4 ? element_bits(9.96921e36f) : element_bits(9.969209968386869e36);
    const uint64_t missing = width == 4 ? element_bits(-1e30f) : element_bits(-1e300);
    const uint64_t absent = width == 4 ? element_bits(-7.5e20f) : element_bits(-7.5e200);
    const size_t n = field.size() / width;
    for (size_t i = 0; i < n; i += 11) std::memcpy(field.data() + i * width, &fill, width);
    for (size_t i = 5; i < n / 2; i += 13) std::memcpy(field.data() + i * width, &missing, width);
    using F = std::optional<uint64_t>;
    const std::pair<F, F> cases[] = {{F{fill}, F{missing}}, {F{fill}, F{absent}}, {F{absent}, F{missing}},
                                     {F{}, F{missing}},     {F{fill}, F{fill}},   {F{missing}, F{fill}}};
    for (const auto& [f, m] : cases)
      check_input(runner, name + " fill and missing", field, width, f, missing, {0, 3, static_cast<size_t>(width)}, m);
  }
}

// Inputs chosen to break a careless reduction, at sizes around every edge of
// the vector loop (head, 16-byte body, tail, one block, several blocks) and
// at offsets that break element and vector alignment.
template <typename T>
void adversarial() {
  using Lim = std::numeric_limits<T>;
  const unsigned width = sizeof(T);
  const T fill_value = T(-9999.0);
  const uint64_t fill = element_bits(fill_value);
  Runner runner;
  std::mt19937 rng(5);
  struct Pattern {
    std::string name;
    std::vector<T> (*make)(size_t, std::mt19937&);
  };
  const Pattern patterns[] = {
      {"all NaN", [](size_t n, std::mt19937&) { return std::vector<T>(n, Lim::quiet_NaN()); }},
      {"all fill", [](size_t n, std::mt19937&) { return std::vector<T>(n, T(-9999.0)); }},
      {"only +0.0", [](size_t n, std::mt19937&) { return std::vector<T>(n, T(0.0)); }},
      {"only -0.0", [](size_t n, std::mt19937&) { return std::vector<T>(n, T(-0.0)); }},
      {"-0.0 and +0.0", [](size_t n, std::mt19937& r) {
         std::vector<T> v(n);
         for (T& x : v) x = r() % 2 ? T(0.0) : T(-0.0);
         return v;
       }},
      {"zeros and one positive", [](size_t n, std::mt19937& r) {
         std::vector<T> v(n, T(-0.0));
         for (T& x : v) x = r() % 2 ? T(0.0) : T(-0.0);
         if (n) v[r() % n] = T(3.5);
         return v;
       }},
      {"denormals", [](size_t n, std::mt19937& r) {
         std::vector<T> v(n);
         for (T& x : v) x = Lim::denorm_min() * static_cast<T>(1 + r() % 1000) * (r() % 2 ? T(1) : T(-1));
         return v;
       }},
      {"positive denormals only", [](size_t n, std::mt19937& r) {
         std::vector<T> v(n);
         for (T& x : v) x = Lim::denorm_min() * static_cast<T>(1 + r() % 1000);
         return v;
       }},
      {"huge and inf", [](size_t n, std::mt19937& r) {
         const T choices[] = {Lim::max(), -Lim::max(), Lim::infinity(), -Lim::infinity(), Lim::quiet_NaN(),
                              Lim::max() / 2};
         std::vector<T> v(n);
         for (T& x : v) x = choices[r() % 6];
         return v;
       }},
      {"NaN payloads and inf", [](size_t n, std::mt19937& r) {
         std::vector<T> v(n);
         for (T& x : v) {
           uint64_t b = element_bits(Lim::infinity()) | (r() % 2 ? 0 : 1);  // inf or a NaN
           if (r() % 2) b |= uint64_t{1} << (8 * sizeof(T) - 1);
           std::memcpy(&x, &b, sizeof x);
         }
         return v;
       }},
      {"mixed specials", [](size_t n, std::mt19937& r) {
         const T choices[] = {Lim::quiet_NaN(), Lim::infinity(), -Lim::infinity(), T(0.0), T(-0.0),
                              Lim::denorm_min(), -Lim::denorm_min(), Lim::min(), -Lim::max(), T(-9999.0)};
         std::normal_distribution<double> normal;
         std::vector<T> v(n);
         for (T& x : v) x = r() % 3 ? static_cast<T>(std::ldexp(normal(r), static_cast<int>(r() % 60) - 30)) : choices[r() % 10];
         return v;
       }},
      {"one finite among NaN at the end", [](size_t n, std::mt19937&) {
         std::vector<T> v(n, Lim::quiet_NaN());
         if (n) v[n - 1] = T(-7.25);
         return v;
       }},
      {"one finite among fill at the start", [](size_t n, std::mt19937&) {
         std::vector<T> v(n, T(-9999.0));
         if (n) v[0] = T(1e-3);
         return v;
       }},
  };
  const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 255, 256, 257, 4095, 4097, 65537, 1000003};
  for (const Pattern& pattern : patterns)
    for (size_t n : sizes) {
      const std::vector<T> values = pattern.make(n, rng);
      Bytes bytes = bytes_of(values);
      if (n % 3 == 1) bytes.push_back(0xFF);  // a partial trailing element is ignored
      const uint64_t probe = n ? element_bits(values[rng() % n]) : fill;
      const std::string what = std::string(pattern.name) + " f" + std::to_string(8 * width) + " n " + std::to_string(n);
      const std::vector<size_t> offsets =
          n <= 4097 ? std::vector<size_t>{0, 1, 4, 8, 12, 13} : std::vector<size_t>{0, 4, 7};
      for (std::optional<uint64_t> f : {std::optional<uint64_t>{}, std::optional<uint64_t>{fill}})
        check_input(runner, what, bytes, width, f, probe, offsets);
      check_input(runner, what + " fill = -0.0", bytes, width, element_bits(T(-0.0)), element_bits(T(0.0)), {0});
    }
  (void)fill_value;
}

TEST(ValueRangeGpu, AdversarialFloat32) {
  FZ_SKIP_WITHOUT_CUDA();
  adversarial<float>();
}

TEST(ValueRangeGpu, AdversarialFloat64) {
  FZ_SKIP_WITHOUT_CUDA();
  adversarial<double>();
}

TEST(ValueRangeGpu, ExtremesInEveryPosition) {
  FZ_SKIP_WITHOUT_CUDA();
  // The smallest and largest value alone at each position of a small buffer
  // (every lane of the vector, the head and the tail), at two offsets.
  Runner runner;
  for (size_t n : {size_t{13}, size_t{40}}) {
    for (size_t at = 0; at < n; ++at) {
      std::vector<float> v(n, 1.0f);
      v[at] = -2.0f;
      v[(at * 7 + 3) % n] = std::numeric_limits<float>::denorm_min();
      v[(at * 5 + 1) % n] = 5.0f;
      const Bytes b = bytes_of(v);
      check_input(runner, "f32 at " + std::to_string(at), b, 4, std::nullopt, element_bits(5.0f), {0, 8});
      std::vector<double> w(v.begin(), v.end());
      check_input(runner, "f64 at " + std::to_string(at), bytes_of(w), 8, std::nullopt, element_bits(-2.0), {0, 8});
    }
  }
}

TEST(ValueRangeGpu, RefusesOtherWidths) {
  FZ_SKIP_WITHOUT_CUDA();
  EXPECT_EQ(cuda::finite_range(nullptr, 0, 2, false, std::nullopt, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::contains_element(nullptr, 0, 16, false, 0, nullptr, nullptr), cudaErrorInvalidValue);
}

// 512 MiB of float32 (wmag91 tiled): the same range as the CPU, and the GB/s
// of the range pass on this device (printed; no assertion).
TEST(ValueRangeGpu, LargeBufferMatchesAndThroughput) {
  FZ_SKIP_WITHOUT_CUDA();
  const size_t bytes = size_t{512} << 20;
  const Bytes field = testing::read_field("wmag91.float");
  Bytes big(bytes);
  for (size_t at = 0; at < bytes; at += field.size()) std::memcpy(big.data() + at, field.data(), std::min(field.size(), bytes - at));
  // The extremes far apart, so that different blocks find them.
  const float low = -1234.5f, high = 98765.0f;
  std::memcpy(big.data() + 4 * 17, &low, 4);
  std::memcpy(big.data() + bytes - 4 * 5, &high, 4);
  auto exec = make_pool_executor(8);
  const FiniteRange cpu = finite_range(ByteSpan(big), 4, false, std::nullopt, *exec);

  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  DeviceMemory data(bytes), scratch(cuda::finite_range_scratch_bytes(bytes, 4)), result(sizeof(cuda::DeviceRange));
  ASSERT_TRUE(data.p && scratch.p && result.p);
  CUDA_OK(cudaMemcpy(data.p, big.data(), bytes, cudaMemcpyHostToDevice));
  auto* range = reinterpret_cast<cuda::DeviceRange*>(result.p);
  CUDA_OK(cuda::finite_range(data.p, bytes, 4, false, std::nullopt, range, scratch.p, stream));  // warm-up
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  const int runs = 20;
  CUDA_OK(cudaEventRecord(start, stream));
  for (int r = 0; r < runs; ++r) CUDA_OK(cuda::finite_range(data.p, bytes, 4, false, std::nullopt, range, scratch.p, stream));
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  cuda::DeviceRange host;
  CUDA_OK(cudaMemcpy(&host, range, sizeof host, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(same_range(cuda::to_finite_range(host, 4), cpu));
  EXPECT_EQ(cpu.min, -1234.5);
  EXPECT_EQ(cpu.max, 98765.0);

  // The same with a fill value and big-endian input (the costliest variant).
  const uint64_t fill = element_bits(-1e34f);
  CUDA_OK(cudaEventRecord(start, stream));
  for (int r = 0; r < runs; ++r) CUDA_OK(cuda::finite_range(data.p, bytes, 4, true, fill, range, scratch.p, stream));
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms_swapped = 0;
  CUDA_OK(cudaEventElapsedTime(&ms_swapped, start, stop));
  // contains_element over the same buffer (an absent pattern: the whole pass).
  DeviceMemory found(4);
  CUDA_OK(cudaEventRecord(start, stream));
  for (int r = 0; r < runs; ++r) CUDA_OK(cuda::contains_element(data.p, bytes, 4, false, fill, reinterpret_cast<uint32_t*>(found.p), stream));
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms_contains = 0;
  CUDA_OK(cudaEventElapsedTime(&ms_contains, start, stop));
  uint32_t found_host = 7;
  CUDA_OK(cudaMemcpy(&found_host, found.p, 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(found_host, 0u);

  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  const double gb = static_cast<double>(bytes) * runs / 1e9;
  std::printf("[ info ] %s, 512 MiB float32: finite_range %.1f GB/s (%.3f ms), big-endian + fill %.1f GB/s, "
              "contains_element %.1f GB/s\n",
              prop.name, gb / (ms / 1e3), ms / runs, gb / (ms_swapped / 1e3), gb / (ms_contains / 1e3));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace fz::engine
