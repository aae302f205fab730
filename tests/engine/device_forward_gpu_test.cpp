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
#include <limits>
#include <random>
#include <set>
#include <thread>

#include "api_internal.hpp"
#include "bitshuffle/bitshuffle_stage.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "cuda/device_context.hpp"
#include "diffnb/diffnb_stage.hpp"
#include "fault_injection.hpp"
#include "frame.hpp"
#include "fz/fz.hpp"
#include "presets/presets.hpp"
#include "quantize/quantize.hpp"
#include "quantize/quantize_stage.hpp"
#include "rze/rze_stage.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {


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
  FZ_SKIP_WITHOUT_CUDA();
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
  FZ_SKIP_WITHOUT_CUDA();
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
  FZ_SKIP_WITHOUT_CUDA();
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

// A stage with no GPU version (every stage of this build has one; a stage
// added later may not): the pipeline it is in stays on the CPU both ways.
class CpuOnlyCopy final : public Stage {
 public:
  StageType type() const override { return StageType::Tcms; }
  std::string name() const override { return "cpu-only copy"; }
  Bytes config() const override { return {}; }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext&) const override {
    out.assign(1, Bytes(in.at(0).data, in.at(0).data + in.at(0).size));
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext&) const override {
    in.assign(1, Bytes(out.at(0).data, out.at(0).data + out.at(0).size));
  }
};

TEST(DeviceForward, PipelinesWithoutGpuStagesStayOnTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes field = testing::read_field("wmag91.float");
  for (bool first : {true, false}) {
    Pipeline p;
    uint8_t current = Pipeline::kChunk;
    if (first) current = p.add(std::make_unique<CpuOnlyCopy>(), {current})[0];
    current = p.add(make_bitshuffle(4), {current})[0];
    if (!first) current = p.add(std::make_unique<CpuOnlyCopy>(), {current})[0];
    p.add(make_rze(1), {current});
    EXPECT_FALSE(runs_on_device(p));
    EXPECT_FALSE(inverse_runs_on_device(p));
    EXPECT_FALSE(forward_on_device(p, ByteSpan(field), 0).has_value());
    auto exec = make_pool_executor(1);
    const StageContext ctx{*exec, 2 * field.size() + 65536};
    const std::vector<Bytes> stored = p.forward(ByteSpan(field), ctx);
    std::vector<ByteSpan> views(stored.begin(), stored.end());
    Bytes out(field.size());
    EXPECT_FALSE(inverse_on_device(p, views, out.data(), out.size(), ctx.max_stream_bytes, 0).has_value());
  }
}

// pfpl (quantize -> diffnb -> bit-shuffle -> RZE) and fzgpu (Lorenzo ->
// bit-shuffle -> RZE) on the GPU: the same stored buffers as the CPU, for real
// fields in float32 and float64, every mode each preset has, several bounds,
// and data with NaN, inf, -0 and denormals.
TEST(DeviceForward, LossyStoredBuffersEqualTheCpus) {
  FZ_SKIP_WITHOUT_CUDA();
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
  FZ_SKIP_WITHOUT_CUDA();
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
  FZ_SKIP_WITHOUT_CUDA();
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

// compress_into on the GPU path writes the CPU's frame into caller memory,
// also over the chunk itself, whether the frame comes back in one trip (a
// 64 KiB chunk) or through the pipelined download (3 MB); a frame that does
// not fit spills and leaves the target alone; and when the GPU fails (an
// injected allocation failure) the CPU's fallback still finds the chunk intact.
TEST(DeviceForward, CompressIntoWritesTheCpusFrameAlsoInPlace) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes field = testing::read_field("wmag91.float");
  for (const std::vector<uint64_t>& dims : std::vector<std::vector<uint64_t>>{{16, 32, 32}, {91, 91, 91}}) {
    const size_t bytes = 4 * static_cast<size_t>(dims[0] * dims[1] * dims[2]);
    const Bytes chunk(field.begin(), field.begin() + static_cast<std::ptrdiff_t>(bytes));
    for (Preset preset : {Preset::Lossless, Preset::Pfpl, Preset::Fzgpu, Preset::Cusz}) {
      Options o;
      o.preset = preset;
      if (preset != Preset::Lossless) {
        o.mode = ErrorMode::Noa;
        o.bound = preset == Preset::Cusz ? 1e-4 : 1e-3;
      }
      const std::string what = std::string(preset_name(preset)) + " " + std::to_string(bytes) + " bytes";
      const DataType f32 = DataType::of<float>();
      const Bytes cpu = compress_with(chunk.data(), bytes, f32, dims, o, BackendUse::kCpu);
      ASSERT_LT(cpu.size(), bytes) << what;
      Bytes target(bytes, 0xEE);
      EXPECT_EQ(compress_into_with(chunk.data(), bytes, f32, dims, o, target.data(), bytes, nullptr, BackendUse::kGpu),
                cpu.size())
          << what;
      EXPECT_TRUE(Bytes(target.begin(), target.begin() + cpu.size()) == cpu) << what;
      EXPECT_EQ(target[cpu.size()], 0xEE) << what << ": wrote past the frame";
      Bytes in_place = chunk;
      EXPECT_EQ(compress_into_with(in_place.data(), bytes, f32, dims, o, in_place.data(), bytes, nullptr,
                                   BackendUse::kGpu),
                cpu.size())
          << what;
      EXPECT_TRUE(Bytes(in_place.begin(), in_place.begin() + cpu.size()) == cpu) << what << ": in place";
      Bytes small(cpu.size() - 1, 0x11), spill;
      EXPECT_EQ(compress_into_with(chunk.data(), bytes, f32, dims, o, small.data(), small.size(), &spill,
                                   BackendUse::kGpu),
                0u)
          << what;
      EXPECT_TRUE(spill == cpu) << what << ": spilled frame";
      EXPECT_TRUE(small == Bytes(cpu.size() - 1, 0x11)) << what << ": target written although the frame spilled";
      // (A repeated chunk of 256 KiB or less replays a CUDA graph, which
      // allocates nothing: the failure is injected into the 3 MB chunks.)
      if (bytes <= (size_t{256} << 10)) continue;
      fault_injection::device_allocation_failures = 1;
      Bytes fallback = chunk;
      EXPECT_EQ(compress_into_with(fallback.data(), bytes, f32, dims, o, fallback.data(), bytes, nullptr,
                                   BackendUse::kGpu),
                cpu.size())
          << what;
      EXPECT_EQ(fault_injection::device_allocation_failures.exchange(0), 0) << what << ": the failure was not reached";
      EXPECT_TRUE(Bytes(fallback.begin(), fallback.begin() + cpu.size()) == cpu) << what << ": CPU fallback in place";
    }
  }
}

// Through the public API with device "cuda": frames decode to the input.
TEST(DeviceForward, PublicApiRoundTripOnTheGpu) {
  FZ_SKIP_WITHOUT_CUDA();
  Options on_gpu;
  on_gpu.device = "cuda";
  for (const Case& c : cases()) {
    const Bytes frame = compress(c.data.data(), c.data.size(), c.dtype, {c.data.size() / c.dtype.size}, on_gpu);
    const Decoded d = decompress(frame.data(), frame.size(), on_gpu);
    EXPECT_TRUE(d.data == c.data) << c.what;
    Bytes into(c.data.size(), 0xA5);  // decompress_into decodes on the GPU
    EXPECT_EQ(decompress_into(frame.data(), frame.size(), into.data(), into.size(), on_gpu), c.data.size()) << c.what;
    EXPECT_TRUE(into == c.data) << c.what;
  }
}

// The GPU decoder checks the frame's payload CRC itself (on the device for
// payloads of 64 KiB or more, on the host below): a wrong checksum refuses the
// frame, the right one decodes it; through the public API a corrupted payload
// is reported as such, whichever side checked it.
TEST(DeviceInverse, PayloadChecksumIsCheckedOnTheGpuPath) {
  FZ_SKIP_WITHOUT_CUDA();
  Options on_gpu;
  on_gpu.device = "cuda";
  const Bytes field = testing::read_field("wmag91.float");
  for (size_t bytes : {size_t{4096}, size_t{60000}, field.size()}) {  // small payloads and a 2.9 MB one
    const Bytes chunk(field.begin(), field.begin() + bytes);
    const Bytes frame = compress(chunk.data(), chunk.size(), DataType::of<float>(), {bytes / 4}, on_gpu);
    const ParsedFrame parsed = parse_frame(frame.data(), frame.size());
    ASSERT_FALSE(parsed.info.raw) << bytes;
    Pipeline p;
    for (const StageInfo& st : parsed.info.stages) p.add(parse_stage(st.type_id, ByteSpan(st.config)), st.inputs);
    Bytes out(bytes, 0xA5);
    const uint32_t crc = parsed.info.payload_crc;
    EXPECT_EQ(inverse_on_device(p, parsed.stored, out.data(), out.size(), bytes + 4096, 0, 0, crc), bytes) << bytes;
    EXPECT_TRUE(out == chunk) << bytes;
    EXPECT_FALSE(inverse_on_device(p, parsed.stored, out.data(), out.size(), bytes + 4096, 0, 0, crc ^ 1u)) << bytes;

    // A flipped payload bit: the GPU refuses it (its checksum), and the API
    // names the corruption after the host's check.
    Bytes corrupted = frame;
    corrupted[parsed.info.header_bytes + (parsed.info.frame_bytes - parsed.info.header_bytes) / 2] ^= 0x10;
    try {
      decompress_into(corrupted.data(), corrupted.size(), out.data(), out.size(), on_gpu);
      ADD_FAILURE() << bytes << ": a corrupted payload decoded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("payload checksum mismatch"), std::string::npos) << e.what();
    }
  }
}

// Pipelines that come again run as CUDA graphs on the lane (cuda/forward_graphs.hpp):
// the first chunk of a key launches stage by stage, the second captures the
// graph, later ones replay it, each with its own data. Every frame equals the
// CPU's. The chunks of a key share their size and (NOA) value range: a chunk,
// its reverse, and two more permutations of it. Huffman's pipeline (cusz)
// reads back midway and is remembered as not capturable; chunks over 256 KiB
// never get a graph.
TEST(DeviceForward, RepeatedPipelinesReplayAsGraphsWithTheCpusFrames) {
  FZ_SKIP_WITHOUT_CUDA();
  Options on_gpu;
  on_gpu.device = "cuda";
  const Bytes field = testing::read_field("wmag91.float");
  enum class Expect { kGraph, kNotCapturable, kTooLarge };
  struct Config {
    Preset preset;
    ErrorMode mode;
    double bound;
    size_t bytes;
    Expect expect;
  };
  const Config configs[] = {
      {Preset::Lossless, ErrorMode::Abs, 0, 4096, Expect::kGraph},
      {Preset::Fzgpu, ErrorMode::Noa, 1e-3, 65536, Expect::kGraph},
      {Preset::Pfpl, ErrorMode::Noa, 1e-3, 16384, Expect::kGraph},
      {Preset::Fzgpu, ErrorMode::Abs, 0.05, 4096, Expect::kGraph},
      {Preset::Cusz, ErrorMode::Noa, 1e-4, 65536, Expect::kNotCapturable},
      {Preset::Fzgpu, ErrorMode::Noa, 1e-3, 256 << 10, Expect::kGraph},  // the largest that gets one
      {Preset::Pfpl, ErrorMode::Rel, 1e-2, 512 << 10, Expect::kTooLarge},
      {Preset::Lossless, ErrorMode::Abs, 0, 1 << 20, Expect::kTooLarge},
  };
  for (const Config& c : configs) {
    const size_t n = c.bytes / 4;
    std::vector<float> base(n);
    for (size_t i = 0; i < n; ++i) std::memcpy(&base[i], field.data() + 4 * (i % (field.size() / 4)), 4);
    Options o;
    o.preset = c.preset;
    o.mode = c.mode;
    o.bound = c.bound;
    const std::vector<uint64_t> dims = {n / 64, 4, 16};
    const ForwardGraphCounts before = forward_graph_counts(0);
    for (int round = 0; round < 4; ++round) {
      std::vector<float> chunk = base;
      if (round == 1) std::reverse(chunk.begin(), chunk.end());
      if (round >= 2) std::rotate(chunk.begin(), chunk.begin() + (round * 997) % n, chunk.end());
      const std::string what = std::string(preset_name(c.preset)) + " " + std::to_string(c.bytes) + " round " +
                               std::to_string(round);
      const Bytes cpu = compress_with(chunk.data(), c.bytes, DataType::of<float>(), dims, o, BackendUse::kCpu);
      const Bytes gpu = compress_with(chunk.data(), c.bytes, DataType::of<float>(), dims, o, BackendUse::kGpu);
      EXPECT_TRUE(gpu == cpu) << what;
      std::vector<float> back(n);
      EXPECT_EQ(decompress_into(gpu.data(), gpu.size(), back.data(), c.bytes, on_gpu), c.bytes) << what;
    }
    const ForwardGraphCounts counts = forward_graph_counts(0);
    const std::string what = std::string(preset_name(c.preset)) + " " + std::to_string(c.bytes);
    switch (c.expect) {
      case Expect::kGraph:
        EXPECT_TRUE(counts.last_is_graph) << what;
        break;
      case Expect::kNotCapturable:
        EXPECT_FALSE(counts.last_is_graph) << what;  // the lane's latest entry: this key, without a graph
        EXPECT_GE(counts.uncapturable, 1u) << what;
        break;
      case Expect::kTooLarge:  // nothing captured, nothing evicted
        EXPECT_EQ(counts.captured, before.captured) << what;
        EXPECT_EQ(counts.uncapturable, before.uncapturable) << what;
        break;
    }
  }
}

// ---- Lossy pipelines decoded on the GPU -------------------------------------

struct LossyField {
  std::string name;
  DataType dtype;
  Bytes data;
  std::vector<uint64_t> dims;
};

Bytes widened(const Bytes& f32) {
  Bytes out(f32.size() * 2);
  for (size_t i = 0; i < f32.size() / 4; ++i) {
    float f;
    std::memcpy(&f, f32.data() + 4 * i, 4);
    const double d = f;
    std::memcpy(out.data() + 8 * i, &d, 8);
  }
  return out;
}

// A 1-D series with NaN, inf, -0, +0, denormals and huge values among smooth data.
template <typename T>
Bytes specials_1d(size_t n) {
  std::mt19937 rng(11);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0), T(0.0), std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min() * 7, std::numeric_limits<T>::min() / 3,
                        std::numeric_limits<T>::max() / 4, -std::numeric_limits<T>::max()};
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 89 == 0 ? specials[(i / 89) % 10] : static_cast<T>(std::sin(i * 0.001) * 100 + (rng() % 1000) * 1e-4);
  Bytes b(n * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Every real field (float32, their float64 widening for the 3-D ones, the
// float64 field), and 1-D series with special values in both widths.
std::vector<LossyField> lossy_fields() {
  std::vector<LossyField> out;
  const Bytes wmag = testing::read_field("wmag91.float");
  out.push_back({"wmag91 f32", DataType::of<float>(), wmag, {91, 91, 91}});
  out.push_back({"wmag91 f64", DataType::of<double>(), widened(wmag), {91, 91, 91}});
  out.push_back({"999x999 f32", DataType::of<float>(), testing::read_field("999x999.float"), {999, 999}});
  const Bytes vort3 = testing::read_field("vorticity.128_128_41");
  out.push_back({"vorticity 41x128x128 f32", DataType::of<float>(), vort3, {41, 128, 128}});
  out.push_back({"vorticity 41x128x128 f64", DataType::of<double>(), widened(vort3), {41, 128, 128}});
  out.push_back({"vorticity 512x512 f32", DataType::of<float>(), testing::read_field("vorticity.512_512"), {512, 512}});
  out.push_back({"const32x32x59 f32", DataType::of<float>(), testing::read_field("const32x32x59.float"), {59, 32, 32}});
  out.push_back({"pressure f64", DataType::of<double>(), testing::read_field("pressure.384_384.f64"), {384, 384}});
  out.push_back({"specials f32 1-D", DataType::of<float>(), specials_1d<float>(70001), {70001}});
  out.push_back({"specials f64 1-D", DataType::of<double>(), specials_1d<double>(50003), {50003}});
  return out;
}

// The span of a field's ordinary values (finite, below 1e30 in magnitude: the
// specials series holds +-max), so that ABS bounds mean the same for every field.
double span_of(const LossyField& f) {
  double low = INFINITY, high = -INFINITY;
  for (size_t i = 0; i < f.data.size() / f.dtype.size; ++i) {
    double x;
    if (f.dtype.size == 4) {
      float v;
      std::memcpy(&v, f.data.data() + 4 * i, 4);
      x = v;
    } else {
      std::memcpy(&x, f.data.data() + 8 * i, 8);
    }
    if (!(std::fabs(x) < 1e30)) continue;
    low = std::min(low, x);
    high = std::max(high, x);
  }
  return high > low ? high - low : 1.0;
}

// The CPU's decode of `streams` (the reference), or nothing when it refuses them.
std::optional<Bytes> cpu_decode(const Pipeline& p, const std::vector<ByteSpan>& streams, size_t capacity,
                                size_t max_stream_bytes) {
  auto exec = make_pool_executor(2);
  StageContext ctx{*exec, max_stream_bytes};
  Bytes out(capacity, 0);
  try {
    out.resize(p.inverse_into(streams, out.data(), out.size(), ctx));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

std::optional<Bytes> gpu_decode(const Pipeline& p, const std::vector<ByteSpan>& streams, size_t capacity,
                                size_t max_stream_bytes) {
  Bytes out(capacity, 0x5A);
  const auto length = inverse_on_device(p, streams, out.data(), out.size(), max_stream_bytes, 0);
  if (!length) return std::nullopt;
  out.resize(*length);
  return out;
}

bool has_stage(const Pipeline& p, StageType type) {
  for (const StageNode& node : p.nodes())
    if (node.stage->type() == type) return true;
  return false;
}

// pfpl (ABS/NOA/REL) and fzgpu (ABS/NOA) frames of real fields decode on the
// GPU to the CPU's bytes, whichever device wrote them (here the CPU).
TEST(DeviceInverse, LossyChunksDecodeToTheCpusBytes) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(2);
  size_t checked = 0, quantized = 0, predicted = 0;
  for (const LossyField& f : lossy_fields()) {
    const double span = span_of(f);
    for (Preset preset : {Preset::Pfpl, Preset::Fzgpu})
      for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa, ErrorMode::Rel})
        for (double bound : {1e-2, 1e-3, 1e-5}) {
          if (mode == ErrorMode::Rel && preset != Preset::Pfpl) continue;
          Options o;
          o.preset = preset;
          o.mode = mode;
          o.bound = mode == ErrorMode::Abs ? bound * span : bound;
          const std::string what = f.name + " " + preset_name(preset) + " " + mode_name(mode) + " " + std::to_string(bound);
          const Pipeline p = build_pipeline(f.dtype, f.dims, o, ByteSpan(f.data), *exec);
          ASSERT_TRUE(inverse_runs_on_device(p)) << what;
          quantized += has_stage(p, StageType::Quantize);
          predicted += has_stage(p, StageType::Lorenzo);
          const std::vector<Bytes> streams = cpu_forward(p, f.data);
          const size_t max_bytes = f.data.size() + 4096;
          const auto cpu = cpu_decode(p, spans(streams), f.data.size(), max_bytes);
          ASSERT_TRUE(cpu.has_value()) << what;
          const auto gpu = gpu_decode(p, spans(streams), f.data.size() + 64, max_bytes);
          ASSERT_TRUE(gpu.has_value()) << what << ": refused on the GPU";
          EXPECT_TRUE(*gpu == *cpu) << what;
          ++checked;
        }
  }
  EXPECT_EQ(checked, 10u * 15u);
  EXPECT_GE(quantized, 80u) << "pfpl chunks that went through the quantizer";
  EXPECT_GE(predicted, 50u) << "fzgpu chunks that went through Lorenzo";
}

// The quantizer's methods and modes that this version's presets do not write
// (NOA, CONSTANT, LOSSLESS, a fill value) still decode on the GPU: frames
// written by other versions or tools may hold them. The second chain sends
// params and outliers through other stages, so the GPU reads params back
// from the device instead of the frame.
TEST(DeviceInverse, EveryQuantizeMethodDecodes) {
  FZ_SKIP_WITHOUT_CUDA();
  struct Input {
    std::string name;
    unsigned width;
    Bytes data;
  };
  std::vector<Input> inputs;
  const Bytes wmag = testing::read_field("wmag91.float");
  inputs.push_back({"wmag91 f32", 4, wmag});
  inputs.push_back({"wmag91 f64", 8, widened(wmag)});
  inputs.push_back({"specials f32", 4, specials_1d<float>(40009)});
  inputs.push_back({"specials f64", 8, specials_1d<double>(40009)});
  for (unsigned width : {4u, 8u}) {
    // A constant field with NaN, inf, -0 and the fill value among it: CONSTANT under NOA.
    Bytes c(width * 30011);
    for (size_t i = 0; i < 30011; ++i) {
      const double v = i % 101 == 0 ? NAN : i % 103 == 0 ? -INFINITY : i % 107 == 0 ? -0.0 : i % 109 == 0 ? -9999.0 : 2.5;
      if (width == 4) {
        const float x = static_cast<float>(v);
        std::memcpy(c.data() + 4 * i, &x, 4);
      } else {
        std::memcpy(c.data() + 8 * i, &v, 8);
      }
    }
    inputs.push_back({"constant " + std::to_string(width), width, c});
    inputs.push_back({"empty " + std::to_string(width), width, Bytes{}});
    inputs.push_back({"one " + std::to_string(width), width, Bytes(width, 0x3F)});
  }
  std::set<std::pair<int, int>> seen;  // (mode, method) pairs decoded
  size_t checked = 0;
  for (const Input& in : inputs)
    for (int mode = 0; mode <= 2; ++mode)
      for (double bound : {1e-3, 1e-6, 1e-320})  // the last goes LOSSLESS (below every normal step)
        for (bool fill : {false, true})
          for (int chain = 0; chain < 2; ++chain) {
            quantize::Config q;
            q.width = in.width;
            q.mode = static_cast<quantize::Mode>(mode);
            q.bound = mode == 2 && bound < 1e-300 ? 1e-18 : bound;  // REL: 1 + 1e-18 rounds to 1 -> LOSSLESS
            if (fill) {
              if (in.width == 4) {
                const float x = -9999.0f;
                uint32_t bits;
                std::memcpy(&bits, &x, 4);
                q.fill = bits;
              } else {
                const double x = -9999.0;
                uint64_t bits;
                std::memcpy(&bits, &x, 8);
                q.fill = bits;
              }
            }
            Pipeline p;
            const auto streams = p.add(make_quantize(q), {Pipeline::kChunk});
            const uint8_t diff = p.add(make_diffnb(in.width), {streams[0]})[0];
            const uint8_t planes = p.add(make_bitshuffle(in.width), {diff})[0];
            p.add(make_rze(1), {planes});
            if (chain == 1) {
              p.add(make_bitshuffle(in.width), {streams[1]});
              p.add(make_diffnb(1), {streams[2]});
            }
            const std::string what = in.name + " mode " + std::to_string(mode) + " bound " + std::to_string(q.bound) +
                                     (fill ? " fill" : "") + " chain " + std::to_string(chain);
            ASSERT_TRUE(inverse_runs_on_device(p)) << what;
            const std::vector<Bytes> stored = cpu_forward(p, in.data);
            if (chain == 0) {
              const quantize::Params params = quantize::read_params(ByteSpan(stored.at(1)));  // ids 2 (outliers), 3 (params), 6
              seen.insert({static_cast<int>(params.mode), static_cast<int>(params.method)});
            }
            const size_t max_bytes = in.data.size() + 4096;
            const auto cpu = cpu_decode(p, spans(stored), in.data.size(), max_bytes);
            ASSERT_TRUE(cpu.has_value()) << what;
            EXPECT_TRUE(*cpu == in.data || mode != 0 || bound > 1e-300) << what << ": LOSSLESS is exact";
            const auto gpu = gpu_decode(p, spans(stored), in.data.size() + 64, max_bytes);
            ASSERT_TRUE(gpu.has_value()) << what << ": refused on the GPU";
            EXPECT_TRUE(*gpu == *cpu) << what;
            ++checked;
          }
  EXPECT_EQ(checked, inputs.size() * 3 * 3 * 2 * 2);
  using quantize::Method;
  for (int mode = 0; mode <= 2; ++mode) {
    EXPECT_TRUE(seen.count({mode, static_cast<int>(Method::kQuantized)})) << "mode " << mode << " QUANTIZED";
    EXPECT_TRUE(seen.count({mode, static_cast<int>(Method::kLossless)})) << "mode " << mode << " LOSSLESS";
  }
  EXPECT_TRUE(seen.count({1, static_cast<int>(Method::kConstant)})) << "NOA CONSTANT";
}

// Damaged pfpl and fzgpu frames: bit flips in the codes' stream, the outliers
// and params, truncations and extensions. The GPU refuses exactly what the
// CPU refuses (it then decodes on the CPU, which names the error), and what
// it accepts it decodes to the CPU's bytes; nothing crashes and the device
// stays usable.
TEST(DeviceInverse, DamagedLossyStreamsAreRefusedOrDecodedAsTheCpuDoes) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(2);
  struct Target {
    std::string name;
    DataType dtype;
    Bytes data;
    std::vector<uint64_t> dims;
    Preset preset;
    ErrorMode mode;
    double bound;
  };
  const Bytes vort = testing::read_field("vorticity.512_512");
  const Bytes pressure = testing::read_field("pressure.384_384.f64");
  const std::vector<Target> targets = {
      {"pfpl ABS vorticity f32", DataType::of<float>(), vort, {512, 512}, Preset::Pfpl, ErrorMode::Abs, 1e-6},
      {"pfpl REL pressure f64", DataType::of<double>(), pressure, {384, 384}, Preset::Pfpl, ErrorMode::Rel, 1e-3},
      {"pfpl NOA specials f32", DataType::of<float>(), specials_1d<float>(70001), {70001}, Preset::Pfpl, ErrorMode::Noa, 1e-4},
      {"fzgpu NOA vorticity f32", DataType::of<float>(), vort, {512, 512}, Preset::Fzgpu, ErrorMode::Noa, 1e-3},
      {"fzgpu ABS pressure f64", DataType::of<double>(), pressure, {384, 384}, Preset::Fzgpu, ErrorMode::Abs, 1e-4},
      {"fzgpu NOA specials f64", DataType::of<double>(), specials_1d<double>(50003), {50003}, Preset::Fzgpu, ErrorMode::Noa, 1e-3},
  };
  std::mt19937 rng(17);
  size_t refused = 0, decoded = 0, disagreements = 0;
  for (const Target& t : targets) {
    Options o;
    o.preset = t.preset;
    o.mode = t.mode;
    o.bound = t.bound;
    const Pipeline p = build_pipeline(t.dtype, t.dims, o, ByteSpan(t.data), *exec);
    ASSERT_TRUE(inverse_runs_on_device(p)) << t.name;
    ASSERT_TRUE(has_stage(p, StageType::Quantize) || has_stage(p, StageType::Lorenzo)) << t.name;
    const std::vector<Bytes> clean = cpu_forward(p, t.data);
    const size_t max_bytes = t.data.size() + 4096;
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<Bytes> damaged = clean;
      Bytes& s = damaged[rng() % damaged.size()];
      const int kind = trial % 8;
      if (kind == 7 && !s.empty()) {
        s.resize(rng() % s.size());  // truncated
      } else if (kind == 6) {
        for (int k = rng() % 9; k >= 0; --k) s.push_back(static_cast<uint8_t>(rng()));  // extended
      } else if (!s.empty()) {
        for (int flips = 1 + kind % 3; flips > 0; --flips) {
          // Half the flips in the first 64 bytes: headers, params, outlier counts.
          const size_t at = rng() % 2 ? rng() % std::min<size_t>(s.size(), 64) : rng() % s.size();
          s[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
      }
      const std::string what = t.name + " trial " + std::to_string(trial);
      const auto cpu = cpu_decode(p, spans(damaged), t.data.size(), max_bytes);
      const auto gpu = gpu_decode(p, spans(damaged), t.data.size(), max_bytes);
      if (gpu.has_value() != cpu.has_value()) ++disagreements;
      if (!gpu) {
        ++refused;
        continue;
      }
      ++decoded;
      ASSERT_TRUE(cpu.has_value()) << what << ": the GPU accepted streams the CPU refuses";
      EXPECT_TRUE(*gpu == *cpu) << what;
    }
  }
  EXPECT_GT(refused, 100u);
  EXPECT_GT(decoded, 100u);
  EXPECT_EQ(disagreements, 0u) << "the GPU refused streams the CPU decodes";
  EXPECT_FALSE(cuda::DeviceContext::of(0).broken()) << "malformed data is not a CUDA failure";
}

}  // namespace
}  // namespace fz::engine
