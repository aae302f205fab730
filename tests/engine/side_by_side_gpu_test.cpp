// Large chunks on the GPU (engine/src/cuda/device_pipeline.hpp): their
// independent stages side by side on lanes of their own (cuszhi-cr's three
// ANS stages), and the spline pipeline's first stages run while the host
// chooses the predictor (device_chunk_facts' DevicePrefix). Neither may
// change a byte: the frames equal the CPU's from host and from device
// memory, and decode to the CPU's values on the device. The prefix is taken
// only by the pipeline it was run for. Fields of 16-22 MiB made from the real
// ones, one per choice the chunk can make (3-D spline, folded spline,
// Lorenzo). Skips without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "api_internal.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "cuda/chunk_work.hpp"
#include "cuda/device_context.hpp"
#include "cuda/device_pipeline.hpp"
#include "fz/fz.hpp"
#include "pipeline_cache.hpp"

namespace fz::engine {
namespace {

struct LargeField {
  std::string what;
  std::vector<float> values;
  std::vector<uint64_t> dims;
  bool lorenzo;  // the choice expected of it
  bool fold;
};

std::vector<float> floats_of(const Bytes& raw) {
  std::vector<float> v(raw.size() / 4);
  std::memcpy(v.data(), raw.data(), v.size() * 4);
  return v;
}

// Index i of an axis of n points mirrored out to any length: 0..n-1, n-1..0, ...
size_t mirrored(size_t i, size_t n) {
  const size_t r = i % (2 * n);
  return r < n ? r : 2 * n - 1 - r;
}

// The three kinds: wmag91 mirrored to 176^3 (keeps the 3-D spline); four
// unrelated 2-D fields of 1024^2, mirrored from the real slices, stacked on
// a short axis (the folded spline); a random walk along rows, 64 x 256 x 256
// (Lorenzo) (choose_predictor on the CPU chose so at 1e-2, 1e-3 and 1e-4).
std::vector<LargeField> large_fields() {
  std::vector<LargeField> out;
  {
    const std::vector<float> w = floats_of(testing::read_field("wmag91.float"));
    const size_t n = 176;
    std::vector<float> v(n * n * n);
    for (size_t z = 0; z < n; ++z)
      for (size_t y = 0; y < n; ++y)
        for (size_t x = 0; x < n; ++x)
          v[(z * n + y) * n + x] = w[(mirrored(z, 91) * 91 + mirrored(y, 91)) * 91 + mirrored(x, 91)];
    out.push_back({"wmag91 to 176^3", std::move(v), {n, n, n}, false, false});
  }
  {
    const std::vector<float> a = floats_of(testing::read_field("999x999.float"));
    const std::vector<float> b = floats_of(testing::read_field("vorticity.512_512"));
    const Bytes p_raw = testing::read_field("pressure.384_384.f64");
    std::vector<double> p(p_raw.size() / 8);
    std::memcpy(p.data(), p_raw.data(), p.size() * 8);
    const size_t n = 1024;
    std::vector<float> v(4 * n * n);
    for (size_t y = 0; y < n; ++y)
      for (size_t x = 0; x < n; ++x) {
        v[(0 * n + y) * n + x] = a[mirrored(y, 999) * 999 + mirrored(x, 999)];
        v[(1 * n + y) * n + x] = b[mirrored(y, 512) * 512 + mirrored(x, 512)] * 1e5f;
        v[(2 * n + y) * n + x] = static_cast<float>(p[mirrored(y, 384) * 384 + mirrored(x, 384)] * 100);
        v[(3 * n + y) * n + x] = a[mirrored(x, 999) * 999 + mirrored(n - 1 - y, 999)];
      }
    out.push_back({"four 2-D fields stacked", std::move(v), {4, n, n}, false, true});
  }
  {
    std::mt19937_64 rng(1);
    std::normal_distribution<float> step(0.0f, 1.0f);
    std::vector<float> v(size_t{64} * 256 * 256);
    for (size_t row = 0; row < 64 * 256; ++row) {
      float x = 0;
      for (size_t i = 0; i < 256; ++i) v[row * 256 + i] = x += step(rng);
    }
    out.push_back({"random walks", std::move(v), {64, 256, 256}, true, false});
  }
  return out;
}

Options cuszhi_cr(double noa) {
  Options o;
  o.preset = Preset::CuszHiCr;
  o.mode = ErrorMode::Noa;
  o.bound = noa;
  return o;
}

Bytes download(const testing::DeviceBuffer& buffer, size_t n) {
  Bytes out(n);
  if (n) EXPECT_EQ(cudaMemcpy(out.data(), buffer.data(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

TEST(SideBySide, LargeChunksGiveTheCpusFramesAndValues) {
  FZ_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(device_api_available());
  const DataType dtype = DataType::of<float>();
  for (const LargeField& f : large_fields()) {
    const size_t bytes = f.values.size() * 4;
    ASSERT_GE(bytes, cuda::kSpeculativePrefixMinBytes) << f.what;
    float lo = INFINITY, hi = -INFINITY;
    for (float x : f.values) lo = std::min(lo, x), hi = std::max(hi, x);
    testing::DeviceBuffer d_data(bytes);
    ASSERT_EQ(cudaMemcpy(d_data.data(), f.values.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    for (double noa : {1e-2, 1e-3, 1e-4}) {
      SCOPED_TRACE(f.what + " NOA " + std::to_string(noa));
      const Options o = cuszhi_cr(noa);
      const Bytes cpu = compress_with(f.values.data(), bytes, dtype, f.dims, o, BackendUse::kCpu);
      ASSERT_EQ(compress_with(f.values.data(), bytes, dtype, f.dims, o, BackendUse::kGpu), cpu)
          << "the GPU's frame from host memory differs from the CPU's";
      testing::DeviceBuffer d_frame(max_frame_bytes(bytes, f.dims.size()));
      const size_t n = compress_on_device(d_data.data(), bytes, dtype, f.dims, o, d_frame.data(), d_frame.size());
      ASSERT_EQ(download(d_frame, n), cpu) << "the device-resident frame differs from the CPU's";

      std::vector<float> expected(f.values.size());
      ASSERT_EQ(decompress_into_on(cpu.data(), cpu.size(), expected.data(), bytes, 0, BackendUse::kCpu), bytes);
      const double bound = noa * (static_cast<double>(hi) - lo);
      for (size_t i = 0; i < expected.size(); ++i)
        ASSERT_LE(std::fabs(static_cast<double>(expected[i]) - f.values[i]), bound) << "element " << i;
      testing::DeviceBuffer d_out(bytes);
      ASSERT_EQ(decompress_on_device(d_frame.data(), n, d_out.data(), bytes), bytes);
      const Bytes on_device = download(d_out, bytes);
      EXPECT_EQ(std::memcmp(on_device.data(), expected.data(), bytes), 0) << "the device decoded other values";
      std::vector<float> from_host_path(f.values.size());
      ASSERT_EQ(decompress_into_on(cpu.data(), cpu.size(), from_host_path.data(), bytes, 0, BackendUse::kGpu), bytes);
      EXPECT_EQ(from_host_path, expected) << "the GPU decoded other values from host memory";
    }
  }
}

TEST(SideBySide, TheSplinePrefixServesOnlyThePipelineItWasRunFor) {
  FZ_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(device_api_available());
  const DataType dtype = DataType::of<float>();
  cuda::DeviceContext& context = cuda::DeviceContext::of(0);
  for (const LargeField& f : large_fields()) {
    const size_t bytes = f.values.size() * 4;
    testing::DeviceBuffer d_data(bytes);
    ASSERT_EQ(cudaMemcpy(d_data.data(), f.values.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    for (double noa : {1e-2, 1e-4}) {
      SCOPED_TRACE(f.what + " NOA " + std::to_string(noa));
      const Options o = cuszhi_cr(noa);
      cuda::LaneLease lane = context.lease();
      cuda::ChunkWork work(context, *lane);
      cuda::DevicePrefix prefix;
      const FiniteRange values = cuda::device_chunk_facts(static_cast<const uint8_t*>(d_data.data()), bytes, dtype,
                                                          f.dims, o, work, *lane, &prefix);
      EXPECT_EQ(values.lorenzo, f.lorenzo);
      EXPECT_EQ(values.fold, f.fold);
      ASSERT_TRUE(prefix.pipeline) << "no prefix was run for a chunk of " << bytes << " bytes";
      ASSERT_GT(prefix.nodes, 0u);
      ASSERT_EQ(prefix.buffers.at(0).data, d_data.data());
      const auto chosen = cached_forward_pipeline(dtype, f.dims, o, values);
      const bool spline_kept = !f.lorenzo && !f.fold;
      EXPECT_EQ(cuda::shared_prefix_nodes(prefix, *chosen), spline_kept ? prefix.nodes : 0u);
      FiniteRange other = values;
      other.fold = !values.fold && !values.lorenzo;
      other.lorenzo = false;
      EXPECT_EQ(cuda::shared_prefix_nodes(prefix, *cached_forward_pipeline(dtype, f.dims, o, other)),
                spline_kept ? 0u : prefix.nodes)
          << "the prefix must serve the 3-D spline pipeline and no other";
    }
  }
}

}  // namespace
}  // namespace fz::engine
