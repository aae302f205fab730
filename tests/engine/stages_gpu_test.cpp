// Pipelines built from TCMS, byte swap, byte transpose, merge and fill mask on
// the GPU (engine/src/device_forward.hpp), with the bit-shuffle and RZE after
// them fused into one pass: the stored buffers equal the CPU's
// byte for byte, the GPU inverse gives the input back, and damaged or
// over-limit streams are refused by the GPU exactly where the CPU refuses
// them. GPU tests: labelled "gpu", skipped where no CUDA device is usable.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "bitshuffle/bitshuffle_stage.hpp"
#include "byteswap/byteswap_stage.hpp"
#include "bytetranspose/bytetranspose_stage.hpp"
#include "common/stage/stage_device.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "cuda/device_context.hpp"
#include "device_forward.hpp"
#include "diffnb/diffnb_stage.hpp"
#include "fillmask/fillmask_stage.hpp"
#include "fz/fz.hpp"
#include "merge/merge_stage.hpp"
#include "presets/presets.hpp"
#include "rre/rre_stage.hpp"
#include "rze/rze_stage.hpp"
#include "tcms/tcms_stage.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {


// The engine's bound on any stream of a frame (api.cpp): a merged stream
// holds the chunk and its side streams, so it is larger than the chunk.
size_t stream_limit(size_t chunk_bytes) { return 2 * chunk_bytes + 65536; }

std::vector<Bytes> cpu_forward(const Pipeline& p, const Bytes& data) {
  auto exec = make_pool_executor(2);
  StageContext ctx{*exec, stream_limit(data.size())};
  return p.forward(ByteSpan(data), ctx);
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& streams) {
  std::vector<ByteSpan> out;
  for (const Bytes& b : streams) out.emplace_back(b);
  return out;
}

// The CPU's inverse into dst: its length, or nothing where it throws.
std::optional<size_t> cpu_inverse(const Pipeline& p, const std::vector<ByteSpan>& stored, Bytes& dst,
                                  size_t max_stream_bytes) {
  auto exec = make_pool_executor(1);
  try {
    StageContext ctx{*exec, max_stream_bytes};
    return p.inverse_into(stored, dst.data(), dst.size(), ctx);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Forward on the GPU == forward on the CPU; inverse on the GPU of the CPU's
// streams == the input.
void expect_round_trip(const Pipeline& p, const Bytes& data, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(runs_on_device(p));
  ASSERT_TRUE(inverse_runs_on_device(p));
  const std::vector<Bytes> cpu = cpu_forward(p, data);
  const auto gpu = forward_on_device(p, ByteSpan(data), 0);
  ASSERT_TRUE(gpu.has_value());
  ASSERT_EQ(gpu->size(), cpu.size());
  for (size_t k = 0; k < cpu.size(); ++k) EXPECT_TRUE((*gpu)[k] == cpu[k]) << "stored buffer " << k;
  Bytes out(data.size() + 64, 0xA5);
  const auto length = inverse_on_device(p, spans(cpu), out.data(), out.size(), stream_limit(data.size()), 0);
  ASSERT_TRUE(length.has_value());
  ASSERT_EQ(*length, data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), out.begin()));
}

Bytes noise(size_t n, uint32_t seed, bool smooth) {
  std::mt19937 rng(seed);
  Bytes b(n);
  uint8_t v = 0;
  for (size_t i = 0; i < n; ++i)
    b[i] = smooth ? static_cast<uint8_t>(v += (rng() % 3) - 1) : static_cast<uint8_t>(rng());
  return b;
}

Bytes reversed_words(const Bytes& in, unsigned width) {
  Bytes out = in;
  for (size_t i = 0; i + width <= out.size(); i += width) std::reverse(out.begin() + i, out.begin() + i + width);
  return out;
}

const size_t kElementCounts[] = {0, 1, 7, 16383, 16384, 16385, 786433};

// The lossless preset on big-endian data: byteswap -> diffnb -> bit-shuffle -> RZE.
TEST(StagesOnDevice, BigEndianLosslessChains) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(1);
  const DataType types[] = {DataType::of<int16_t>(), DataType::of<float>(), DataType::of<double>(),
                            DataType::of<uint64_t>()};
  size_t checked = 0;
  for (DataType t : types) {
    t.order = ByteOrder::Big;
    for (size_t n : kElementCounts)
      for (bool smooth : {false, true}) {
        const Bytes data = noise(n * t.size, static_cast<uint32_t>(n + t.size), smooth);
        const Pipeline p = build_pipeline(t, {n}, Options{}, ByteSpan(data), *exec);
        ASSERT_EQ(p.nodes().front().stage->type(), StageType::ByteSwap);
        expect_round_trip(p, data, "big-endian size " + std::to_string(t.size) + " x " + std::to_string(n));
        ++checked;
      }
  }
  // Real fields as a big-endian file would hold them.
  DataType f32 = DataType::of<float>(), f64 = DataType::of<double>();
  f32.order = f64.order = ByteOrder::Big;
  for (const char* name : {"wmag91.float", "999x999.float", "vorticity.512_512"}) {
    const Bytes data = reversed_words(testing::read_field(name), 4);
    expect_round_trip(build_pipeline(f32, {data.size() / 4}, Options{}, ByteSpan(data), *exec), data, name);
    ++checked;
  }
  const Bytes pressure = reversed_words(testing::read_field("pressure.384_384.f64"), 8);
  expect_round_trip(build_pipeline(f64, {384, 384}, Options{}, ByteSpan(pressure), *exec), pressure, "pressure");
  ++checked;
  EXPECT_EQ(checked, 4u * 7u * 2u + 4u);
}

// Records of `size` bytes cut from a real field: neighbouring records share
// structure field by field, as a compound dataset's do.
Bytes records(size_t count, uint32_t size) {
  const Bytes field = testing::read_field("wmag91.float");
  Bytes out(count * size);
  for (size_t i = 0; i < out.size(); ++i) out[i] = field[(i / size * 4 + i % size) % field.size()];
  return out;
}

// The lossless preset on odd-sized elements: bytetranspose -> diffnb1 -> bit-shuffle1 -> RZE1.
TEST(StagesOnDevice, OddSizedElementChains) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(1);
  for (uint32_t size : {3u, 5u, 12u, 16u, 24u, 40u, 1000u})
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4097}, size_t{65537}}) {
      DataType t;
      t.size = size;
      const Bytes data = size % 2 ? noise(n * size, size + static_cast<uint32_t>(n), true) : records(n, size);
      const Pipeline p = build_pipeline(t, {n}, Options{}, ByteSpan(data), *exec);
      ASSERT_EQ(p.nodes().front().stage->type(), StageType::ByteTranspose);
      expect_round_trip(p, data, "element size " + std::to_string(size) + " x " + std::to_string(n));
    }
  // A large element, past the per-thread kernel's range.
  Pipeline wide;
  wide.add(make_diffnb(1), {wide.add(make_bytetranspose(70000), {Pipeline::kChunk})[0]});
  expect_round_trip(wide, records(37, 70000), "element size 70000");
}

// TCMS in front of the coders, every width, also after a byte swap.
TEST(StagesOnDevice, TcmsChains) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes field = testing::read_field("999x999.float");
  for (unsigned w : {1u, 2u, 4u, 8u}) {
    Pipeline p;
    const uint8_t zigzag = p.add(make_tcms(w), {Pipeline::kChunk})[0];
    p.add(make_rze(1), {p.add(make_bitshuffle(w), {zigzag})[0]});
    for (size_t n : {size_t{0}, size_t{5}, size_t{16385}, size_t{100003}})
      expect_round_trip(p, noise(n, static_cast<uint32_t>(n + w), true),
                        "tcms" + std::to_string(w) + " n=" + std::to_string(n));
    expect_round_trip(p, field, "tcms" + std::to_string(w) + " field");
    Pipeline swapped;
    const uint8_t native = swapped.add(make_byteswap(w), {Pipeline::kChunk})[0];
    swapped.add(make_rre(w), {swapped.add(make_tcms(w), {native})[0]});
    expect_round_trip(swapped, field, "byteswap -> tcms -> rre, width " + std::to_string(w));
  }
}

// A bit-shuffle and the RZE of bytes after it run as one device pass (the
// chains above and the presets' frames prove its bytes); no other pair does.
TEST(StagesOnDevice, BitShuffleThenRzeOfBytesIsOneFusedPass) {
  for (unsigned w : {1u, 2u, 4u, 8u})
    EXPECT_NE(stage::find_fused_device_pair(*make_bitshuffle(w), *make_rze(1)), nullptr) << "width " << w;
  EXPECT_EQ(stage::find_fused_device_pair(*make_bitshuffle(4), *make_rze(4)), nullptr);
  EXPECT_EQ(stage::find_fused_device_pair(*make_bitshuffle(1), *make_rre(1)), nullptr);
  EXPECT_EQ(stage::find_fused_device_pair(*make_rze(1), *make_bitshuffle(1)), nullptr);
  EXPECT_EQ(stage::find_fused_device_pair(*make_tcms(1), *make_rze(1)), nullptr);
}

// A field with every element below `threshold` replaced by `fill`.
template <typename T>
Bytes with_fill(const Bytes& field, T fill, T threshold) {
  std::vector<T> v(field.size() / sizeof(T));
  std::memcpy(v.data(), field.data(), v.size() * sizeof(T));
  for (T& e : v)
    if (e < threshold) e = fill;
  Bytes out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <typename T>
uint64_t bits_of(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

struct FillCase {
  std::string what;
  unsigned width;
  uint64_t fill;
  Bytes data;
};

std::vector<FillCase> fill_cases() {
  std::vector<FillCase> out;
  const Bytes wmag = testing::read_field("wmag91.float");
  const Bytes pressure = testing::read_field("pressure.384_384.f64");
  out.push_back({"wmag91, low values -1e34", 4, bits_of(-1e34f), with_fill<float>(wmag, -1e34f, 2.0f)});
  out.push_back({"wmag91, low values NaN", 4, bits_of(std::nanf("")), with_fill<float>(wmag, std::nanf(""), 5.0f)});
  out.push_back({"wmag91, no fill", 4, bits_of(-1e34f), wmag});
  out.push_back({"pressure, negative -1e34", 8, bits_of(-1e34), with_fill<double>(pressure, -1e34, 0.0)});
  out.push_back({"pressure, all fill", 8, bits_of(-1e34), with_fill<double>(pressure, -1e34, 1e9)});
  {
    Bytes edges = with_fill<float>(wmag, -1e34f, 0.0f);  // fill at both ends only
    const float f = -1e34f;
    for (size_t i = 0; i < 1000; ++i) std::memcpy(&edges[4 * i], &f, 4);
    for (size_t i = edges.size() / 4 - 777; i < edges.size() / 4; ++i) std::memcpy(&edges[4 * i], &f, 4);
    out.push_back({"fill at start and end", 4, bits_of(-1e34f), edges});
  }
  out.push_back({"u8 runs", 1, 0xFF, [] {
                   Bytes b = noise(100003, 1, true);
                   for (size_t i = 0; i < b.size(); ++i)
                     if (i % 5000 < 1200) b[i] = 0xFF;
                   return b;
                 }()});
  out.push_back({"u16 runs", 2, 0, [] {
                   Bytes b = noise(2 * 70001, 2, true);
                   for (size_t i = 0; i + 1 < b.size(); i += 2)
                     if ((i / 2) % 3000 < 2000) b[i] = b[i + 1] = 0;
                   return b;
                 }()});
  out.push_back({"empty", 4, bits_of(-1e34f), Bytes{}});
  out.push_back({"one fill element", 8, 0, Bytes(8, 0)});
  return out;
}

// fillmask -> values to diffnb -> bit-shuffle -> RZE, mask to RZE.
TEST(StagesOnDevice, FillMaskChains) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const FillCase& c : fill_cases()) {
    Pipeline p;
    const auto streams = p.add(make_fillmask(c.width, c.fill), {Pipeline::kChunk});
    const uint8_t differences = p.add(make_diffnb(c.width), {streams[0]})[0];
    p.add(make_rze(1), {p.add(make_bitshuffle(c.width), {differences})[0]});
    p.add(make_rze(1), {streams[1]});
    expect_round_trip(p, c.data, c.what);
  }
}

// The lossy presets with a fill value: fillmask -> quantize -> ..., mask to
// RZE, also on big-endian data (byteswap first). Their forward runs on the
// GPU; the inverse too where every stage has one.
TEST(StagesOnDevice, LossyPresetsWithAFillValue) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(1);
  const Bytes wmag = with_fill<float>(testing::read_field("wmag91.float"), -1e34f, 2.0f);
  size_t checked = 0;
  for (bool big : {false, true}) {
    DataType t = DataType::of<float>();
    Bytes data = wmag;
    Options o;
    o.preset = Preset::Pfpl;
    o.mode = ErrorMode::Abs;
    o.bound = 1e-2;
    o.fill_value = Bytes(4);
    const float f = -1e34f;
    std::memcpy(o.fill_value.data(), &f, 4);
    if (big) {
      t.order = ByteOrder::Big;
      data = reversed_words(data, 4);
      o.fill_value = reversed_words(o.fill_value, 4);
    }
    const Pipeline p = build_pipeline(t, {91, 91, 91}, o, ByteSpan(data), *exec);
    bool has_fillmask = false;
    for (const StageNode& node : p.nodes()) has_fillmask |= node.stage->type() == StageType::FillMask;
    ASSERT_TRUE(has_fillmask) << "big=" << big;
    ASSERT_TRUE(runs_on_device(p)) << "big=" << big;
    const auto gpu = forward_on_device(p, ByteSpan(data), 0);
    ASSERT_TRUE(gpu.has_value());
    EXPECT_TRUE(*gpu == cpu_forward(p, data)) << "big=" << big;
    if (inverse_runs_on_device(p)) {
      const std::vector<Bytes> cpu = cpu_forward(p, data);
      Bytes gpu_out(data.size(), 0), cpu_out(data.size(), 0);
      const size_t limit = stream_limit(data.size());
      const auto length = inverse_on_device(p, spans(cpu), gpu_out.data(), gpu_out.size(), limit, 0);
      ASSERT_TRUE(length.has_value());
      EXPECT_EQ(cpu_inverse(p, spans(cpu), cpu_out, limit), length);
      EXPECT_TRUE(gpu_out == cpu_out);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2u);
}

// Pipelines around merge: its stream stored as it is (the header is read from
// the frame's bytes), or coded further (the header is downloaded from the
// device after the GPU inverse of the coder rebuilt the stream).
struct MergePipeline {
  std::string what;
  std::function<Pipeline()> make;
};

std::vector<MergePipeline> merge_pipelines() {
  const uint64_t fill = bits_of(-1e34f);
  return {
      {"fillmask -> merge2 (stored)",
       [fill] {
         Pipeline p;
         const auto s = p.add(make_fillmask(4, fill), {Pipeline::kChunk});
         p.add(make_merge(2), {s[0], s[1]});
         return p;
       }},
      {"fillmask -> merge2 -> RZE",
       [fill] {
         Pipeline p;
         const auto s = p.add(make_fillmask(4, fill), {Pipeline::kChunk});
         p.add(make_rze(1), {p.add(make_merge(2), {s[1], s[0]})[0]});
         return p;
       }},
      {"two fill masks -> merge3 -> bit-shuffle -> RZE",
       [fill] {
         Pipeline p;
         const auto first = p.add(make_fillmask(4, fill), {Pipeline::kChunk});
         const auto second = p.add(make_fillmask(4, 0), {first[0]});
         const uint8_t merged = p.add(make_merge(3), {first[1], second[0], second[1]})[0];
         p.add(make_rze(1), {p.add(make_bitshuffle(1), {merged})[0]});
         return p;
       }},
      {"merge1 -> RRE",
       [] {
         Pipeline p;
         p.add(make_rre(4), {p.add(make_merge(1), {Pipeline::kChunk})[0]});
         return p;
       }},
  };
}

std::vector<Bytes> merge_inputs() {
  const Bytes wmag = testing::read_field("wmag91.float");
  std::vector<Bytes> out = {with_fill<float>(wmag, -1e34f, 3.0f), wmag, with_fill<float>(wmag, -1e34f, 1e9f), Bytes{},
                            Bytes(4, 0), noise(4 * 16385, 5, true)};
  Bytes zeros_and_fill = with_fill<float>(wmag, -1e34f, 2.0f);
  // Zeros are the second fill mask's fill.
  for (size_t i = 0; i < zeros_and_fill.size(); i += 4 * 7) std::memset(&zeros_and_fill[i], 0, 4);
  out.push_back(zeros_and_fill);
  return out;
}

TEST(StagesOnDevice, MergeChains) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const MergePipeline& m : merge_pipelines()) {
    const Pipeline p = m.make();
    for (const Bytes& data : merge_inputs())
      expect_round_trip(p, data, m.what + ", " + std::to_string(data.size()) + " bytes");
  }
}

// The GPU decodes exactly what the CPU decodes, to the same bytes.
struct Verdicts {
  size_t refused = 0, decoded = 0;
};

void expect_same_verdict(const Pipeline& p, const std::vector<Bytes>& stored, size_t capacity, size_t max_stream_bytes,
                         const std::string& what, Verdicts& verdicts) {
  SCOPED_TRACE(what);
  Bytes gpu(capacity, 0), cpu(capacity, 0);
  const auto gpu_length = inverse_on_device(p, spans(stored), gpu.data(), gpu.size(), max_stream_bytes, 0);
  const auto cpu_length = cpu_inverse(p, spans(stored), cpu, max_stream_bytes);
  ASSERT_EQ(gpu_length.has_value(), cpu_length.has_value()) << "the GPU and the CPU disagree on whether it decodes";
  if (!cpu_length) {
    ++verdicts.refused;
    return;
  }
  ++verdicts.decoded;
  EXPECT_EQ(*gpu_length, *cpu_length);
  EXPECT_TRUE(gpu == cpu);
}

// Damaged merge streams (header and payload), read from the frame's bytes or
// from the device: refused on the GPU exactly where the CPU refuses them.
TEST(StagesOnDevice, DamagedMergeStreamsAreRefusedAsOnTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes data = with_fill<float>(testing::read_field("wmag91.float"), -1e34f, 3.0f);
  std::mt19937 rng(17);
  for (const MergePipeline& m : merge_pipelines()) {
    const Pipeline p = m.make();
    const std::vector<Bytes> stored = cpu_forward(p, data);
    Verdicts verdicts;
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<Bytes> damaged = stored;
      Bytes& s = damaged[0];
      if (s.empty()) continue;
      const size_t near_header = std::min<size_t>(s.size(), 64);
      switch (trial % 5) {
        case 0: s[rng() % near_header] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: s[rng() % s.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: s.resize(rng() % s.size()); break;
        case 3: s.push_back(static_cast<uint8_t>(rng())); break;
        default: s[rng() % near_header] = static_cast<uint8_t>(rng()); break;
      }
      expect_same_verdict(p, damaged, data.size() + 64, stream_limit(data.size()),
                          m.what + " trial " + std::to_string(trial), verdicts);
    }
    EXPECT_GT(verdicts.refused, 0u) << m.what;
    EXPECT_GT(verdicts.decoded, 0u) << m.what << ": some damage still decodes (payload bits)";
    // Limits: a frame may allow less than the streams need.
    for (size_t limit : {size_t{0}, data.size() / 2, data.size() - 1, data.size(), data.size() + 20})
      expect_same_verdict(p, stored, data.size() + 64, limit, m.what + " limit " + std::to_string(limit), verdicts);
  }
  EXPECT_FALSE(cuda::DeviceContext::of(0).broken()) << "malformed data is not a CUDA failure";
}

// Both fill-mask streams stored as they are: padding bits, wrong sizes and
// damaged values, refused or decoded as on the CPU.
TEST(StagesOnDevice, DamagedFillMaskStreamsAreRefusedAsOnTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (unsigned width : {1u, 2u, 4u, 8u})
    for (size_t n : {size_t{0}, size_t{5}, size_t{8}, size_t{13}, size_t{100003}}) {
      Pipeline p;
      p.add(make_fillmask(width, 0), {Pipeline::kChunk});
      Bytes data = noise(n * width, static_cast<uint32_t>(n * width), true);
      for (size_t i = 0; i < data.size(); ++i)
        if (i / width % 4 == 1) data[i] = 0;
      const std::string at = "width " + std::to_string(width) + " n=" + std::to_string(n);
      expect_round_trip(p, data, at);
      const std::vector<Bytes> stored = cpu_forward(p, data);  // values, mask
      ASSERT_EQ(stored.size(), 2u);
      const size_t capacity = data.size() + 64, limit = stream_limit(data.size());
      Verdicts verdicts;
      for (unsigned bit = n % 8; n % 8 != 0 && bit < 8; ++bit) {
        std::vector<Bytes> bad = stored;
        bad[1][bad[1].size() - 1] = static_cast<uint8_t>(bad[1][bad[1].size() - 1] | (1u << bit));
        expect_same_verdict(p, bad, capacity, limit, at + " padding bit " + std::to_string(bit), verdicts);
      }
      std::vector<Bytes> bad = stored;
      bad[1].push_back(0);
      expect_same_verdict(p, bad, capacity, limit, at + " long mask", verdicts);
      if (!stored[1].empty()) {
        bad = stored;
        bad[1].pop_back();
        expect_same_verdict(p, bad, capacity, limit, at + " short mask", verdicts);
        bad = stored;
        bad[1][0] ^= 0x01;  // a valid mask still: another element becomes fill
        expect_same_verdict(p, bad, capacity, limit, at + " flipped mask bit", verdicts);
      }
      bad = stored;
      bad[0].push_back(7);
      expect_same_verdict(p, bad, capacity + 8, limit, at + " values not whole elements", verdicts);
      if (!data.empty()) {
        expect_same_verdict(p, stored, capacity, data.size() - 1, at + " over the limit", verdicts);
        bad = stored;
        bad[0][0] ^= 0x80;  // values at fill positions are ignored, elsewhere they are the data
        expect_same_verdict(p, bad, capacity, limit, at + " damaged value", verdicts);
      }
      if (n % 8 != 0) {
        EXPECT_GE(verdicts.refused, 8 - n % 8) << at;  // every padding bit
      }
    }
  EXPECT_FALSE(cuda::DeviceContext::of(0).broken());
}

}  // namespace
}  // namespace fz::engine
