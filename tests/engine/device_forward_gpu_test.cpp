// Pipelines on the GPU (engine/src/device_forward.hpp): the stored buffers, and
// so the frames, equal the CPU's byte for byte. GPU tests: labelled "gpu",
// skipped where no CUDA device is usable (CI).
#include "device_forward.hpp"

#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "common/testing/test_data.hpp"
#include "cuda/device_context.hpp"
#include "fault_injection.hpp"
#include "fz/fz.hpp"
#include "presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

bool have_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device"

struct Case {
  std::string what;
  DataType dtype;
  Bytes data;
};

Bytes noise(size_t n, uint32_t seed, unsigned smooth) {
  std::mt19937 rng(seed);
  Bytes b(n);
  uint8_t v = 0;
  for (size_t i = 0; i < n; ++i) b[i] = smooth ? static_cast<uint8_t>(v += (rng() % 3) - 1) : static_cast<uint8_t>(rng());
  return b;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const DataType types[] = {DataType::of<uint8_t>(), DataType::of<int16_t>(), DataType::of<uint32_t>(),
                            DataType::of<float>(), DataType::of<double>(), DataType::of<uint64_t>()};
  for (const DataType& t : types)
    for (size_t elements : {size_t{0}, size_t{1}, size_t{7}, size_t{16383}, size_t{16384}, size_t{16385}, size_t{786433}})
      for (unsigned smooth : {0u, 1u})
        out.push_back({"size " + std::to_string(t.size) + " x " + std::to_string(elements) + (smooth ? " smooth" : " noise"),
                       t, noise(elements * t.size, static_cast<uint32_t>(elements + t.size), smooth)});
  out.push_back({"zeros", DataType::of<float>(), Bytes(1 << 20, 0)});
  for (const char* name : {"wmag91.float", "999x999.float", "const32x32x59.float"})
    out.push_back({name, DataType::of<float>(), testing::read_field(name)});
  out.push_back({"pressure", DataType::of<double>(), testing::read_field("pressure.384_384.f64")});
  return out;
}

std::vector<Bytes> cpu_forward(const Pipeline& p, const Bytes& data) {
  auto exec = make_pool_executor(2);
  StageContext ctx{*exec, data.size() + 4096};
  return p.forward(ByteSpan(data), ctx);
}

TEST(DeviceForward, LosslessStoredBuffersEqualTheCpus) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  Options options;
  size_t checked = 0;
  for (const Case& c : cases()) {
    const std::vector<uint64_t> dims{c.data.size() / c.dtype.size};
    const Pipeline p = build_pipeline(c.dtype, dims, options, ByteSpan(c.data), *exec);
    ASSERT_TRUE(runs_on_device(p)) << c.what << ": the lossless chain of a little-endian word type runs on the GPU";
    const auto gpu = forward_on_device(p, ByteSpan(c.data), 0);
    ASSERT_TRUE(gpu.has_value()) << c.what;
    EXPECT_TRUE(*gpu == cpu_forward(p, c.data)) << c.what;
    ++checked;
  }
  EXPECT_GT(checked, 80u);
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& streams) {
  std::vector<ByteSpan> out;
  for (const Bytes& b : streams) out.emplace_back(b);
  return out;
}

TEST(DeviceInverse, LosslessChunksEqualTheInput) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  size_t checked = 0;
  for (const Case& c : cases()) {
    const Pipeline p = build_pipeline(c.dtype, {c.data.size() / c.dtype.size}, Options{}, ByteSpan(c.data), *exec);
    ASSERT_TRUE(inverse_runs_on_device(p)) << c.what;
    const std::vector<Bytes> streams = cpu_forward(p, c.data);
    Bytes out(c.data.size() + 64, 0xA5);
    const auto length = inverse_on_device(p, spans(streams), out.data(), out.size(), c.data.size() + 4096, 0);
    ASSERT_TRUE(length.has_value()) << c.what;
    EXPECT_EQ(*length, c.data.size()) << c.what;
    EXPECT_TRUE(std::equal(c.data.begin(), c.data.end(), out.begin())) << c.what;
    ++checked;
  }
  EXPECT_GT(checked, 80u);
}

// Damaged streams: the GPU either refuses (the CPU then decodes and reports)
// or, where the damage still makes a valid stream, gives the CPU's bytes.
TEST(DeviceInverse, DamagedStreamsAreRefusedOrDecodedAsTheCpuDoes) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  const Bytes field = testing::read_field("wmag91.float");
  const Pipeline p = build_pipeline(DataType::of<float>(), {field.size() / 4}, Options{}, ByteSpan(field), *exec);
  const std::vector<Bytes> streams = cpu_forward(p, field);
  ASSERT_EQ(streams.size(), 1u);
  std::mt19937 rng(7);
  size_t refused = 0, decoded = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Bytes damaged = streams[0];
    const size_t at = trial < 40 ? rng() % std::min<size_t>(damaged.size(), 200) : rng() % damaged.size();
    damaged[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (trial % 10 == 9) damaged.resize(rng() % damaged.size());
    Bytes gpu(field.size(), 0);
    const auto length = inverse_on_device(p, {ByteSpan(damaged)}, gpu.data(), gpu.size(), field.size() + 4096, 0);
    Bytes cpu(field.size(), 0);
    bool cpu_ok = true;
    size_t cpu_length = 0;
    try {
      StageContext ctx{*exec, field.size() + 4096};
      cpu_length = p.inverse_into({ByteSpan(damaged)}, cpu.data(), cpu.size(), ctx);
    } catch (const std::exception&) {
      cpu_ok = false;
    }
    if (!length) {
      ++refused;
      continue;
    }
    ++decoded;
    ASSERT_TRUE(cpu_ok) << "trial " << trial << ": the GPU accepted a stream the CPU refuses";
    ASSERT_EQ(*length, cpu_length) << "trial " << trial;
    EXPECT_TRUE(gpu == cpu) << "trial " << trial;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_FALSE(cuda::DeviceContext::of(0).broken()) << "malformed data is not a CUDA failure";
}

TEST(DeviceForward, PipelinesWithoutGpuStagesStayOnTheCpu) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  const Bytes field = testing::read_field("wmag91.float");
  Options lossy;
  lossy.preset = Preset::Cusz;
  lossy.mode = ErrorMode::Noa;
  lossy.bound = 1e-3;
  const Pipeline p = build_pipeline(DataType::of<float>(), {91, 91, 91}, lossy, ByteSpan(field), *exec);
  EXPECT_FALSE(runs_on_device(p)) << "no GPU Huffman yet";
  EXPECT_FALSE(forward_on_device(p, ByteSpan(field), 0).has_value());
  DataType big = DataType::of<float>();
  big.order = ByteOrder::Big;
  const Pipeline swapped = build_pipeline(big, {91, 91, 91}, Options{}, ByteSpan(field), *exec);
  EXPECT_FALSE(runs_on_device(swapped)) << "no GPU byte swap yet";
}

// pfpl (quantize -> diffnb -> bit-shuffle -> RZE) and fzgpu (Lorenzo ->
// bit-shuffle -> RZE) on the GPU: the same stored buffers as the CPU, for real
// fields in float32 and float64, every mode each preset has, several bounds,
// and data with NaN, inf, -0 and denormals.
TEST(DeviceForward, LossyStoredBuffersEqualTheCpus) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  struct Field {
    std::string name;
    DataType dtype;
    Bytes data;
    std::vector<uint64_t> dims;
  };
  std::vector<Field> fields;
  const Bytes wmag = testing::read_field("wmag91.float");
  fields.push_back({"wmag91 f32", DataType::of<float>(), wmag, {91, 91, 91}});
  {
    std::vector<double> wide(wmag.size() / 4);
    for (size_t i = 0; i < wide.size(); ++i) {
      float f;
      std::memcpy(&f, wmag.data() + 4 * i, 4);
      wide[i] = f;
    }
    Bytes b(wide.size() * 8);
    std::memcpy(b.data(), wide.data(), b.size());
    fields.push_back({"wmag91 f64", DataType::of<double>(), b, {91, 91, 91}});
  }
  fields.push_back({"999x999 f32", DataType::of<float>(), testing::read_field("999x999.float"), {999, 999}});
  fields.push_back({"pressure f64", DataType::of<double>(), testing::read_field("pressure.384_384.f64"), {384, 384}});
  {
    std::mt19937 rng(3);
    std::vector<float> v(70001);
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -1e-41f, 3e38f, 0.0f};
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = i % 97 == 0 ? specials[(i / 97) % 8] : static_cast<float>(std::sin(i * 0.001) * 100 + (rng() % 1000) * 1e-4);
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    fields.push_back({"specials f32 1-D", DataType::of<float>(), b, {v.size()}});
  }
  size_t checked = 0;
  for (const Field& f : fields)
    for (Preset preset : {Preset::Pfpl, Preset::Fzgpu})
      for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa, ErrorMode::Rel})
        for (double bound : {1e-2, 1e-4}) {
          if (mode == ErrorMode::Rel && preset != Preset::Pfpl) continue;
          Options o;
          o.preset = preset;
          o.mode = mode;
          o.bound = mode == ErrorMode::Abs ? bound * 10 : bound;
          const std::string what = f.name + " " + preset_name(preset) + " " + mode_name(mode) + " " + std::to_string(bound);
          const Pipeline p = build_pipeline(f.dtype, f.dims, o, ByteSpan(f.data), *exec);
          ASSERT_TRUE(runs_on_device(p)) << what;
          const auto gpu = forward_on_device(p, ByteSpan(f.data), 0);
          ASSERT_TRUE(gpu.has_value()) << what;
          EXPECT_TRUE(*gpu == cpu_forward(p, f.data)) << what;
          ++checked;
        }
  EXPECT_EQ(checked, 5u * 10u);
}

TEST(DeviceForward, AllocationFailureFallsBackAndTheDeviceStaysUsable) {
  REQUIRE_DEVICE();
  auto exec = make_pool_executor(1);
  const Bytes field = testing::read_field("999x999.float");
  const Pipeline p = build_pipeline(DataType::of<float>(), {999, 999}, Options{}, ByteSpan(field), *exec);
  fault_injection::device_allocation_failures = 1;
  EXPECT_FALSE(forward_on_device(p, ByteSpan(field), 0).has_value());
  EXPECT_FALSE(cuda::DeviceContext::of(0).broken());
  const auto again = forward_on_device(p, ByteSpan(field), 0);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(*again == cpu_forward(p, field));
}

TEST(DeviceForward, ConcurrentChunksFromSeveralThreads) {
  REQUIRE_DEVICE();
  const std::vector<Case> all = cases();
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto exec = make_pool_executor(1);
      for (size_t k = t; k < all.size(); k += 4) {
        const Case& c = all[k];
        const Pipeline p = build_pipeline(c.dtype, {c.data.size() / c.dtype.size}, Options{}, ByteSpan(c.data), *exec);
        const auto gpu = forward_on_device(p, ByteSpan(c.data), 0);
        if (!gpu || *gpu != cpu_forward(p, c.data)) ++mismatches[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// Through the public API with H5Z_FZ_DEVICE=cuda: frames decode to the input.
TEST(DeviceForward, PublicApiRoundTripOnTheGpu) {
  REQUIRE_DEVICE();
  setenv("H5Z_FZ_DEVICE", "cuda", 1);  // read once, at the engine's first call in this process
  for (const Case& c : cases()) {
    const Bytes frame = compress(c.data.data(), c.data.size(), c.dtype, {c.data.size() / c.dtype.size}, Options{});
    const Decoded d = decompress(frame.data(), frame.size());
    EXPECT_TRUE(d.data == c.data) << c.what;
    Bytes into(c.data.size(), 0xA5);  // decompress_into decodes on the GPU
    EXPECT_EQ(decompress_into(frame.data(), frame.size(), into.data(), into.size()), c.data.size()) << c.what;
    EXPECT_TRUE(into == c.data) << c.what;
  }
}

}  // namespace
}  // namespace fz::engine
