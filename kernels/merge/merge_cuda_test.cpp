// MERGE / SPLIT on the GPU: the CPU's stream for any set of parts (empty
// ones, one, many past a header batch, real fields), the CPU's parts back,
// and for hostile headers (every check of merge::decode, random damage) a
// nonzero status exactly where the CPU throws FormatError, from the stream's
// host bytes and from device memory alike (skipped without a CUDA device).
#include "merge/merge_cuda.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_cuda_checks.hpp"
#include "merge/merge.hpp"

namespace fz {
namespace {

using testing::DeviceBuffer;
using testing::same_bytes;

Bytes gpu_merge(const std::vector<Bytes>& parts) {
  std::vector<std::unique_ptr<DeviceBuffer>> on_device;
  std::vector<merge::cuda::Part> views;
  for (const Bytes& p : parts) {
    on_device.push_back(std::make_unique<DeviceBuffer>(testing::to_device(p)));
    views.push_back({on_device.back()->data(), p.size()});
  }
  const size_t size = merge::cuda::encoded_size(views);
  DeviceBuffer out(size + testing::kGuardBytes, testing::kGuardFill);
  EXPECT_EQ(merge::cuda::encode(views, out.data(), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(testing::guard_intact(out, size)) << "wrote past the stream";
  return out.download(size);
}

Bytes cpu_merge(const std::vector<Bytes>& parts) {
  std::vector<ByteSpan> spans(parts.begin(), parts.end());
  Bytes out;
  merge::encode(spans, out);
  return out;
}

// What the GPU side makes of a stream: the layout read from the host bytes,
// the one read from device memory (they must agree), and the parts split out.
struct GpuSplit {
  uint32_t status = 0;
  std::vector<Bytes> parts;
};

GpuSplit gpu_split(const Bytes& stream, size_t max_total, size_t max_parts) {
  const merge::cuda::Layout from_host = merge::cuda::read_layout(
      ByteSpan(stream.data(), merge::cuda::header_bytes(stream.size(), max_parts)), stream.size(), max_total,
      max_parts);
  const DeviceBuffer d_in = testing::to_device(stream);
  merge::cuda::Layout from_device;
  EXPECT_EQ(merge::cuda::read_layout(d_in.data(), stream.size(), max_total, max_parts, from_device, nullptr),
            cudaSuccess);
  EXPECT_EQ(from_host.status, from_device.status);
  EXPECT_EQ(from_host.sizes, from_device.sizes);
  EXPECT_EQ(from_host.offsets, from_device.offsets);
  GpuSplit r;
  r.status = from_device.status;
  if (r.status != 0) {
    EXPECT_TRUE(from_device.sizes.empty());
    return r;
  }
  std::vector<std::unique_ptr<DeviceBuffer>> outs;
  std::vector<uint8_t*> pointers;
  for (uint64_t size : from_device.sizes) {
    outs.push_back(std::make_unique<DeviceBuffer>(size + testing::kGuardBytes, testing::kGuardFill));
    pointers.push_back(outs.back()->data());
  }
  EXPECT_EQ(merge::cuda::split(d_in.data(), from_device, pointers.data(), nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_TRUE(testing::guard_intact(*outs[i], from_device.sizes[i])) << "part " << i;
    r.parts.push_back(outs[i]->download(from_device.sizes[i]));
  }
  return r;
}

// The GPU refuses exactly what the CPU refuses and splits the rest as it does.
void expect_agrees_with_cpu(const Bytes& stream, size_t max_total, size_t max_parts, const std::string& what) {
  SCOPED_TRACE(what);
  bool cpu_ok = true;
  std::vector<Bytes> cpu;
  try {
    cpu = merge::decode(stream, max_total, max_parts);
  } catch (const FormatError&) {
    cpu_ok = false;
  }
  const GpuSplit gpu = gpu_split(stream, max_total, max_parts);
  ASSERT_EQ(gpu.status == 0, cpu_ok) << "status " << gpu.status;
  if (!cpu_ok) return;
  ASSERT_EQ(gpu.parts.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_TRUE(same_bytes(gpu.parts[i], cpu[i])) << "part " << i;
}

std::vector<std::vector<Bytes>> part_sets() {
  std::vector<std::vector<Bytes>> sets;
  sets.push_back({Bytes{}});
  sets.push_back({testing::random_bytes(1, 1)});
  sets.push_back({Bytes{}, testing::random_bytes(7, 2), Bytes{}});
  sets.push_back({testing::random_bytes(16385, 3), testing::zero_bytes(16384), testing::random_bytes(3, 4)});
  std::vector<Bytes> many;  // past one header batch (64 sizes per launch) several times
  for (size_t i = 0; i < 300; ++i) many.push_back(testing::random_bytes(i % 17 == 0 ? 0 : i * 7 % 1000, 100 + i));
  sets.push_back(many);
  sets.push_back({testing::read_field("wmag91.float"), testing::read_field("pressure.384_384.f64"),
                  testing::read_field("const32x32x59.float")});
  return sets;
}

TEST(MergeCuda, StreamsEqualTheCpusAndSplitBack) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& parts : part_sets()) {
    SCOPED_TRACE("parts=" + std::to_string(parts.size()));
    const Bytes cpu = cpu_merge(parts);
    ASSERT_TRUE(same_bytes(gpu_merge(parts), cpu));
    const GpuSplit gpu = gpu_split(cpu, cpu.size(), 4096);
    ASSERT_EQ(gpu.status, 0u);
    ASSERT_EQ(gpu.parts.size(), parts.size());
    for (size_t i = 0; i < parts.size(); ++i) EXPECT_TRUE(same_bytes(gpu.parts[i], parts[i])) << "part " << i;
  }
}

TEST(MergeCuda, RefusesNoPartsOrTooMany) {
  FZ_SKIP_WITHOUT_CUDA();
  DeviceBuffer out(16);
  EXPECT_EQ(merge::cuda::encode({}, out.data(), nullptr), cudaErrorInvalidValue);
}

Bytes header(uint32_t count, const std::vector<uint64_t>& sizes, size_t payload) {
  Bytes b;
  append_le<uint32_t>(b, count);
  for (uint64_t s : sizes) append_le<uint64_t>(b, s);
  const Bytes body = testing::random_bytes(payload, payload);
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

// One stream per check of merge::decode, each refused (and the valid
// neighbours of some accepted), under several limits.
TEST(MergeCuda, HostileHeadersAreRefusedExactlyAsOnTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const uint64_t huge = ~uint64_t{0};
  struct Case {
    std::string what;
    Bytes stream;
  };
  const std::vector<Case> cases = {
      {"empty", Bytes{}},
      {"3 bytes", Bytes{1, 0, 0}},
      {"count 0", header(0, {}, 0)},
      {"count 0 with payload", header(0, {}, 10)},
      {"count 1, no table", header(1, {}, 0)},
      {"count 2, half a table", header(2, {0}, 4)},
      {"count 2^32-1", header(0xFFFFFFFFu, {1, 2}, 3)},
      {"one empty part", header(1, {0}, 0)},
      {"one part, exact", header(1, {5}, 5)},
      {"one part, short payload", header(1, {5}, 4)},
      {"one part, trailing byte", header(1, {5}, 6)},
      {"size 2^64-1", header(1, {huge}, 10)},
      {"sizes that overflow a sum", header(2, {huge, 2}, 1)},
      {"sizes that overflow, second", header(2, {1, huge}, 1)},
      {"sizes 2^63 twice", header(2, {uint64_t{1} << 63, uint64_t{1} << 63}, 0)},
      {"three parts exact", header(3, {1, 0, 9}, 10)},
      {"three parts, one too long", header(3, {1, 0, 10}, 10)},
      {"three parts, one byte left", header(3, {1, 0, 8}, 10)},
      {"big exact", header(2, {100000, 1}, 100001)},
  };
  for (const Case& c : cases)
    for (size_t max_total : {size_t{0}, size_t{5}, size_t{9}, size_t{10}, size_t{100000}, size_t{1} << 40})
      for (size_t max_parts : {size_t{1}, size_t{2}, size_t{3}, size_t{4096}})
        expect_agrees_with_cpu(c.stream, max_total, max_parts,
                               c.what + " max_total=" + std::to_string(max_total) +
                                   " max_parts=" + std::to_string(max_parts));
}

// Random damage to valid streams: flipped bits in and near the header,
// truncations, extensions.
TEST(MergeCuda, DamagedStreamsAgreeWithTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(11);
  const std::vector<Bytes> sources = {cpu_merge({testing::random_bytes(40, 1), Bytes{}, testing::random_bytes(9, 2)}),
                                      cpu_merge({testing::random_bytes(3000, 3)})};
  size_t refused = 0, accepted = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Bytes s = sources[trial % 2];
    const size_t header_end = std::min<size_t>(s.size(), 4 + 8 * 3);
    switch (trial % 4) {
      case 0: s[rng() % header_end] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      case 1: s.resize(rng() % s.size()); break;
      case 2: s.push_back(static_cast<uint8_t>(rng())); break;
      default: s[rng() % header_end] = static_cast<uint8_t>(rng()); break;
    }
    const size_t max_parts = trial % 3 == 0 ? 3 : 4096;
    bool cpu_ok = true;
    try {
      merge::decode(s, 1 << 20, max_parts);
    } catch (const FormatError&) {
      cpu_ok = false;
    }
    (cpu_ok ? accepted : refused)++;
    expect_agrees_with_cpu(s, 1 << 20, max_parts, "trial " + std::to_string(trial));
  }
  EXPECT_GT(refused, 100u);
  EXPECT_GT(accepted, 10u);
}

}  // namespace
}  // namespace fz
