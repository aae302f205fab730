// ANS, interleaved (stage type 15) on the GPU: the CPU's stream bytes
// (fz::ans::encode_interleaved) for the spline codes of the real fields
// (cuszhi-cr's input) at NOA 1e-2/1e-3/1e-4, alone and concatenated (many
// lanes), and for crafted inputs (W < 32, one lane, many lanes, both caps,
// all m, sizes around tile and lane edges, A = 65535 / M = 16, odd input
// offsets, stored); the CPU's symbols from GPU decodes of CPU streams;
// hostile streams (truncations, flipped records and payload) refused
// (plan_decode's FormatError or a nonzero status) exactly where the CPU
// decoder throws, never a crash, a hang or a write past the output; and a
// throughput line (printed, not asserted). The stage's own device path is
// tested by tests/engine/stage_contract_gpu_test (sample "ansi*"). Skipped
// without a CUDA device.
#include "ans/interleaved_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ans/ans_cuda.hpp"
#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/testing/spline_codes.hpp"
#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "spline/spline.hpp"

namespace fz {
namespace {

using ans::InterleavedConfig;
using testing::DeviceBuffer;
using testing::guard_intact;
using testing::kGuardBytes;
using testing::u16_bytes;
namespace icuda = ans::interleaved_cuda;
namespace ifmt = ans::interleaved_format;

constexpr size_t kNoLimit = size_t{1} << 40;
constexpr InterleavedConfig kPreset{8192, 14};

Bytes cpu_encode(const Bytes& in, const InterleavedConfig& c) {
  Bytes out;
  ans::encode_interleaved(in, c, out);
  return out;
}

std::string first_difference(const Bytes& a, const Bytes& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "sizes " + std::to_string(a.size()) + " / " + std::to_string(b.size()) + ", first difference at byte " +
         std::to_string(i);
}

struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
  }
  float ms() {
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    return t;
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// The whole GPU forward as the stage runs it (two read backs), the input at
// byte `offset` of its buffer. False (with a failure recorded) when a call
// fails or a guard is hit.
bool gpu_encode(const Bytes& in, const InterleavedConfig& c, Bytes& out, size_t offset = 0, float* ms = nullptr) {
  const size_t n = in.size() / 2;
  DeviceBuffer d_in(offset + in.size() + 1);
  d_in.upload(in, offset);
  const uint8_t* symbols = d_in.data() + offset;
  icuda::TilePlan tiles = icuda::plan_tiles(nullptr, 0, c);
  ifmt::TileHistograms histograms;
  DeviceBuffer counts(8 * c.alphabet), bad(4);
  std::unique_ptr<DeviceBuffer> tile_counts;
  EXPECT_TRUE(d_in.ok() && counts.ok() && bad.ok());
  cudaDeviceSynchronize();
  Timer timer;
  if (n > 0) {
    cudaError_t err = ans::cuda::symbol_histogram(symbols, n, c.alphabet, counts.as<uint64_t>(), bad.as<uint32_t>(),
                                                  nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    std::vector<uint64_t> hist(c.alphabet);
    cudaMemcpy(hist.data(), counts.data(), 8 * c.alphabet, cudaMemcpyDeviceToHost);
    EXPECT_EQ(bad.read<uint32_t>(), 0u);
    tiles = icuda::plan_tiles(hist.data(), n, c);
    tile_counts = std::make_unique<DeviceBuffer>(icuda::tile_counts_bytes(tiles));
    EXPECT_TRUE(tile_counts->ok());
    err = icuda::count_tiles(symbols, tiles, tile_counts->data(), nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    if (err != cudaSuccess) return false;
    cudaMemcpy(&histograms, tile_counts->data(), icuda::kHistogramBytes, cudaMemcpyDeviceToHost);
  }
  const icuda::EncodePlan plan = icuda::plan_encode(tiles, histograms, c);
  DeviceBuffer d_out(plan.max_encoded_bytes + kGuardBytes);
  DeviceBuffer size(8);
  DeviceBuffer scratch(icuda::encode_scratch_bytes(plan));
  EXPECT_TRUE(d_out.ok() && size.ok() && scratch.ok());
  const cudaError_t err = icuda::encode(symbols, tile_counts ? tile_counts->data() : nullptr, plan, d_out.data(), size.as<uint64_t>(),
                                        scratch.data(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  const float t = timer.ms();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (ms) *ms = t;
  if (err != cudaSuccess) return false;
  const uint64_t used = size.read<uint64_t>();
  EXPECT_LE(used, plan.max_encoded_bytes);
  if (used > plan.max_encoded_bytes) return false;
  out = d_out.download(used);
  const bool guards = guard_intact(d_out, plan.max_encoded_bytes);
  EXPECT_TRUE(guards) << "write past the end";
  return guards;
}

enum class Verdict { kAccepted, kRefusedByHead, kRefusedByStatus, kCallFailed };

const char* name(Verdict v) {
  switch (v) {
    case Verdict::kAccepted: return "accepted";
    case Verdict::kRefusedByHead: return "refused by plan_decode";
    case Verdict::kRefusedByStatus: return "refused by the device";
    default: return "call failed";
  }
}

// GPU decode as the stage does it for a stream on the device only: a first
// read back, more when plan_decode asks (twice at most), the lanes on the
// device.
Verdict gpu_decode(const Bytes& stream, const InterleavedConfig& c, size_t max_out, Bytes& out, size_t in_offset = 0,
                   float* ms = nullptr) {
  const DeviceBuffer d_in(in_offset + stream.size() + 1);
  d_in.upload(stream, in_offset);
  icuda::DecodePlan plan;
  try {
    Bytes prefix = d_in.download(std::min(stream.size(), icuda::kFirstPrefixBytes), in_offset);
    plan = icuda::plan_decode(prefix.data(), prefix.size(), stream.size(), c, max_out);
    for (int again = 0; again < 2 && plan.needed != 0; ++again) {
      prefix = d_in.download(plan.needed, in_offset);
      plan = icuda::plan_decode(prefix.data(), prefix.size(), stream.size(), c, max_out);
    }
    EXPECT_EQ(plan.needed, 0u) << "asked three times";
  } catch (const FormatError&) {
    return Verdict::kRefusedByHead;
  }
  const size_t bytes = 2 * plan.n;
  DeviceBuffer d_out(bytes + kGuardBytes);
  DeviceBuffer status(4, 0);
  DeviceBuffer scratch(icuda::decode_scratch_bytes(plan));
  EXPECT_TRUE(d_in.ok() && d_out.ok() && status.ok() && scratch.ok());
  cudaDeviceSynchronize();
  Timer timer;
  const cudaError_t err =
      icuda::decode(d_in.data() + in_offset, plan, d_out.data(), status.as<uint32_t>(), scratch.data(), nullptr);
  const float t = timer.ms();
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (ms) *ms = t;
  if (err != cudaSuccess) return Verdict::kCallFailed;
  EXPECT_TRUE(guard_intact(d_out, bytes)) << "write past the end";
  if (status.read<uint32_t>() != 0) return Verdict::kRefusedByStatus;
  out = d_out.download(bytes);
  return Verdict::kAccepted;
}

// GPU bytes equal the CPU's, the GPU decodes them back, and the CPU decodes
// the GPU's stream. Returns the CPU's stream.
Bytes expect_same_both_ways(const Bytes& symbols, const InterleavedConfig& c, const std::string& what,
                            size_t offset = 0) {
  SCOPED_TRACE(what + " (A " + std::to_string(c.alphabet) + ", M " + std::to_string(c.prob_bits) + ", n " +
               std::to_string(symbols.size() / 2) + ")");
  const Bytes cpu = cpu_encode(symbols, c);
  Bytes gpu;
  EXPECT_TRUE(gpu_encode(symbols, c, gpu, offset));
  EXPECT_TRUE(gpu == cpu) << "GPU stream differs from the CPU's: " << first_difference(gpu, cpu);
  Bytes back;
  const Verdict v = gpu_decode(cpu, c, symbols.size(), back, offset);
  EXPECT_EQ(v, Verdict::kAccepted) << name(v);
  EXPECT_TRUE(back == symbols) << "GPU decode of the CPU stream: " << first_difference(back, symbols);
  if (gpu != cpu) {
    Bytes cpu_back;
    EXPECT_NO_THROW(ans::decode_interleaved(gpu, c, cpu_back, symbols.size()));
    EXPECT_TRUE(cpu_back == symbols) << "CPU decode of the GPU stream";
  }
  return cpu;
}

std::vector<uint16_t> mostly(size_t n, uint16_t common, uint32_t alphabet, unsigned every, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = rng() % every == 0 ? static_cast<uint16_t>(rng() % alphabet) : common;
  return s;
}

ifmt::Layout layout_of(const Bytes& stream, const InterleavedConfig& c) {
  return ifmt::parse(stream.data(), stream.size(), stream.size(), c, kNoLimit);
}

// ---- the spline's codes of the real fields ----

TEST(AnsInterleavedCuda, SplineCodesOfRealFieldsGiveTheCpuBytesBothWays) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const double noa : {1e-2, 1e-3, 1e-4}) {
    Bytes all;  // every field's groups at this bound: a stream of many lanes
    for (const auto& field : testing::real_fields()) {
      const spline::Streams st = testing::spline_codes(field, noa);
      for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
        expect_same_both_ways(st.codes[g], kPreset,
                              field.name + " NOA " + std::to_string(noa) + " group " + std::to_string(g));
        all.insert(all.end(), st.codes[g].begin(), st.codes[g].end());
      }
    }
    const Bytes coded = expect_same_both_ways(all, kPreset, "all fields, NOA " + std::to_string(noa));
    const ifmt::Layout l = layout_of(coded, kPreset);
    EXPECT_EQ(l.method, ans::kMethodCoded);
    std::printf("all fields at NOA %g: %zu codes, W %u, %llu lanes\n", noa, all.size() / 2, l.states,
                static_cast<unsigned long long>(l.lanes));
  }
}

// ---- crafted inputs ----

TEST(AnsInterleavedCuda, GeometriesCapsAndEdgesGiveTheCpuBytesBothWays) {
  FZ_SKIP_WITHOUT_CUDA();
  const InterleavedConfig c{256, 12};
  expect_same_both_ways({}, kPreset, "empty");
  expect_same_both_ways(u16_bytes({7}), kPreset, "one symbol");
  {
    const Bytes coded = expect_same_both_ways(u16_bytes(mostly(10000, 0, 100, 1, 1)), c, "one lane, W < 32");
    const ifmt::Layout l = layout_of(coded, c);
    EXPECT_EQ(l.lanes, 1u);
    EXPECT_GT(l.states, 1u);
    EXPECT_LT(l.states, 32u);
  }
  {
    const Bytes coded = expect_same_both_ways(u16_bytes(mostly(1000000, 0, 256, 1, 2)), c, "many lanes");
    EXPECT_GT(layout_of(coded, c).lanes, 32u);
    expect_same_both_ways(u16_bytes(mostly(3000000, 7, 256, 4, 3)), c, "many lanes, 1 in 4 not m");
    expect_same_both_ways(u16_bytes(mostly(5 * 4096 + 17, 0, 256, 1, 9)), c, "two lanes, ragged end");
  }
  {  // Long runs of one length: cap 255; 100 runs of many lengths from 63: cap 63
     // (interleaved_test's inputs; with many more such runs the longer run table pays and 255 wins).
    const InterleavedConfig rc{64, 12};
    std::vector<uint16_t> long_runs, varied;
    for (int i = 0; i < 3000; ++i) {
      long_runs.insert(long_runs.end(), 200, 0);
      long_runs.push_back(static_cast<uint16_t>(1 + i % 5));
    }
    std::mt19937_64 rng(1);
    for (int i = 0; i < 100; ++i) {
      varied.insert(varied.end(), 63 + rng() % 192, 0);
      varied.push_back(static_cast<uint16_t>(1 + i % 7));
    }
    EXPECT_EQ(layout_of(expect_same_both_ways(u16_bytes(long_runs), rc, "long runs"), rc).cap, 255u);
    EXPECT_EQ(layout_of(expect_same_both_ways(u16_bytes(varied), rc, "varied long runs"), rc).cap, 63u);
  }
  // All m: pairs (C, ESC) only; a constant field of many tiles.
  expect_same_both_ways(u16_bytes(std::vector<uint16_t>(100000, 4096)), kPreset, "all m");
  expect_same_both_ways(u16_bytes(std::vector<uint16_t>(4096 * 200, 9)), c, "all m, 200 tiles");
  // Sizes around tiles and lanes, dense and with runs, at odd input offsets.
  for (const size_t n : {2, 100, 4095, 4096, 4097, 8191, 8192, 8193, 3 * 4096 - 1, 3 * 4096 + 1, 40 * 4096 - 1,
                         40 * 4096 + 1, 300 * 4096 + 5}) {
    expect_same_both_ways(u16_bytes(mostly(n, 7, 256, 2, n)), c, "n " + std::to_string(n));
    expect_same_both_ways(u16_bytes(mostly(n, 7, 256, 100, n)), c, "n " + std::to_string(n) + " runs", 1);
    expect_same_both_ways(u16_bytes(mostly(n, 7, 256, 1000, n)), c, "n " + std::to_string(n) + " long runs", 6);
  }
  // Alphabets and probability bits at their limits.
  expect_same_both_ways(u16_bytes(mostly(300000, 40000, 65535, 3, 8)), InterleavedConfig{65535, 16}, "A 65535 M 16");
  {
    std::vector<uint16_t> top = mostly(100000, 65534, 65535, 2, 11);
    expect_same_both_ways(u16_bytes(top), InterleavedConfig{65535, 16}, "m = A - 1");
  }
  expect_same_both_ways(u16_bytes(mostly(50000, 1, 2, 3, 7)), InterleavedConfig{2, 8}, "A 2 M 8");
  expect_same_both_ways(u16_bytes(mostly(50000, 1, 2, 3, 7)), InterleavedConfig{2, 16}, "A 2 M 16");
  expect_same_both_ways(u16_bytes(mostly(400000, 4096, 8192, 3, 12)), InterleavedConfig{8192, 15}, "M 15");
  expect_same_both_ways(u16_bytes(mostly(200000, 255, 256, 2, 10)), InterleavedConfig{256, 9}, "A 256 M 9");
  {  // Noise: stored, the input at odd offsets.
    std::mt19937_64 rng(8);
    std::vector<uint16_t> noise(200000);
    for (auto& x : noise) x = static_cast<uint16_t>(rng() % 65535);
    const Bytes b = u16_bytes(noise);
    const InterleavedConfig wide{65535, 16};
    EXPECT_EQ(layout_of(expect_same_both_ways(b, wide, "random: stored"), wide).method, ans::kMethodStored);
    expect_same_both_ways(b, wide, "random: stored, odd input offset", 1);
  }
}

TEST(AnsInterleavedCuda, SymbolsOutsideTheAlphabetAreFlagged) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in = u16_bytes({1, 2, 16, 3});
  DeviceBuffer d_in = testing::to_device(in), counts(8 * 16), bad(4);
  FZ_CUDA_OK(ans::cuda::symbol_histogram(d_in.data(), 4, 16, counts.as<uint64_t>(), bad.as<uint32_t>(), nullptr));
  EXPECT_NE(bad.read<uint32_t>(), 0u);
}

// ---- hostile streams: the GPU refuses exactly what the CPU refuses ----

void expect_same_verdict(const Bytes& stream, const InterleavedConfig& c, size_t max_out, const std::string& what) {
  bool cpu_ok = true;
  Bytes cpu;
  try {
    ans::decode_interleaved(stream, c, cpu, max_out);
  } catch (const FormatError&) {
    cpu_ok = false;
  }
  Bytes gpu;
  const Verdict v = gpu_decode(stream, c, max_out, gpu, what.size() % 2);  // odd and even stream addresses
  EXPECT_EQ(v == Verdict::kAccepted, cpu_ok) << what << ": CPU " << (cpu_ok ? "accepts" : "refuses") << ", GPU "
                                             << name(v);
  if (cpu_ok && v == Verdict::kAccepted) {
    EXPECT_TRUE(gpu == cpu) << what << ": " << first_difference(gpu, cpu);
  }
}

TEST(AnsInterleavedCuda, MalformedStreamsAreRefusedAsByTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const std::vector<Bytes> small_cases = {{}, {0x80}, {0x00, 0x00}, {0x01, 0x02, 0x00, 0x00}, {0x01, 0x00, 0x02, 0x00},
                                          {0x01, 0x00, 0x01}, {0x01, 0x00, 0x01, 0x00, 0x00}};
  for (size_t i = 0; i < small_cases.size(); ++i)
    expect_same_verdict(small_cases[i], kPreset, kNoLimit, "case " + std::to_string(i));

  // One lane with W < 32, several lanes of W = 32, an all-m stream: every
  // truncation, bytes of the records and payload flipped, words moved
  // between lanes.
  const InterleavedConfig c{16, 8};
  std::vector<Bytes> inputs = {u16_bytes(mostly(3000, 3, 16, 3, 9)), u16_bytes(mostly(200000, 3, 16, 1, 10)),
                               u16_bytes(std::vector<uint16_t>(30000, 2))};
  for (size_t which = 0; which < inputs.size(); ++which) {
    const std::string tag = "input " + std::to_string(which) + ", ";
    const Bytes coded = cpu_encode(inputs[which], c);
    const ifmt::Layout l = layout_of(coded, c);
    ASSERT_EQ(l.method, ans::kMethodCoded) << tag;
    expect_same_verdict(coded, c, inputs[which].size(), tag + "intact");
    expect_same_verdict(coded, c, inputs[which].size() - 2, tag + "over max_out");
    const size_t step = std::max<size_t>(1, coded.size() / 300);
    for (size_t size = 0; size < coded.size(); size += step)
      expect_same_verdict(Bytes(coded.begin(), coded.begin() + size), c, kNoLimit, tag + "cut to " + std::to_string(size));
    for (size_t at = l.records_at; at < coded.size(); at += (at < l.payload_at ? 1 : step))
      for (const uint8_t flip : {0x01, 0x80, 0xFF}) {
        Bytes b = coded;
        b[at] ^= flip;
        expect_same_verdict(b, c, inputs[which].size(), tag + "byte " + std::to_string(at) + " ^ " + std::to_string(flip));
      }
    for (size_t at = 0; at < l.records_at; ++at) {
      Bytes b = coded;
      b[at] ^= 0x10;
      expect_same_verdict(b, c, 4 * inputs[which].size(), tag + "head byte " + std::to_string(at));
    }
    for (uint64_t k = 0; k + 1 < l.lanes; ++k) {  // lane k one word short, lane k + 1 one word long
      Bytes b = coded;
      uint8_t* q0 = b.data() + l.records_at + k * l.record_bytes + 4;
      uint8_t* q1 = q0 + l.record_bytes;
      store_le<uint32_t>(q0, load_le<uint32_t>(q0) - 1);
      store_le<uint32_t>(q1, load_le<uint32_t>(q1) + 1);
      expect_same_verdict(b, c, kNoLimit, tag + "lane " + std::to_string(k) + " one word short");
    }
  }
}

// ---- throughput (printed, not asserted; fz_ans_device_bench times real codes) ----

TEST(AnsInterleavedCuda, PrintsThroughput) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const unsigned every : {4u, 100u, 1u}) {  // 3 in 4 codes m (NOA 1e-2 like), nearly all m, no m to speak of
    const size_t n = size_t{64} << 20;
    std::vector<uint16_t> s(n);
    std::mt19937_64 rng(every);
    for (auto& x : s) {
      const uint64_t r = rng();
      x = r % every == 0 ? static_cast<uint16_t>(4096 + static_cast<int>((r >> 8) % 33) - 16) : 4096;
    }
    const Bytes in = u16_bytes(s);
    Bytes coded;
    float enc_ms = 0, dec_ms = 0;
    gpu_encode(in, kPreset, coded, 0, &enc_ms);  // warm-up
    ASSERT_TRUE(gpu_encode(in, kPreset, coded, 0, &enc_ms));
    Bytes back;
    ASSERT_EQ(gpu_decode(coded, kPreset, in.size(), back, 0, &dec_ms), Verdict::kAccepted);
    ASSERT_TRUE(back == in);
    const ifmt::Layout l = layout_of(coded, kPreset);
    std::printf("ansi GPU, %zu Mi symbols, 1 in %u not m: %.3f ratio, C %u, W %u, %llu lanes; encode %.3f ms "
                "(%.1f GB/s, with both read backs), decode %.3f ms (%.1f GB/s, lanes only)\n",
                n >> 20, every, double(in.size()) / double(coded.size()), l.cap, l.states,
                static_cast<unsigned long long>(l.lanes), enc_ms, double(in.size()) / enc_ms / 1e6, dec_ms,
                double(in.size()) / dec_ms / 1e6);
  }
}

}  // namespace
}  // namespace fz
