// ANS on the GPU: the CPU's stream bytes (fz::ans::encode) for the spline
// codes of the real fields (cuszhi-cr's input) at NOA 1e-2/1e-3/1e-4 and for
// synthetic edge cases; the CPU's symbols from GPU decodes of CPU streams;
// hostile streams refused (plan_decode's FormatError or a nonzero status)
// exactly where the CPU decoder throws; and a throughput line (printed, not
// asserted). Skipped without a CUDA device.
#include "ans/ans_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ans/ans_format.hpp"
#include "ans/testing/spline_codes.hpp"
#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "spline/spline.hpp"

namespace fz {
namespace {

using ans::Config;
using testing::DeviceBuffer;
using testing::guard_intact;
using testing::kGuardBytes;

constexpr size_t kNoLimit = size_t{1} << 40;
constexpr Config kPreset{8192, 14, 8192};  // cuszhi-cr's (engine/src/presets/cuszhi.cpp)

using testing::u16_bytes;

Bytes cpu_encode(const Bytes& in, const Config& c) {
  Bytes out;
  ans::encode(in, c, out);
  return out;
}

// The first index where a and b differ, for failure messages.
std::string first_difference(const Bytes& a, const Bytes& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return "sizes " + std::to_string(a.size()) + " / " + std::to_string(b.size()) + ", first difference at byte " +
         std::to_string(i);
}

// The whole GPU forward as the stage runs it, the input at byte `offset` of
// its buffer (any alignment). False (with a failure recorded) when a call
// fails or a guard is hit.
bool gpu_encode(const Bytes& in, const Config& c, Bytes& out, size_t offset = 0, float* ms = nullptr) {
  const size_t n = in.size() / 2;
  DeviceBuffer d_in(offset + in.size() + 1);
  d_in.upload(in, offset);
  const uint8_t* symbols = d_in.data() + offset;
  ans::cuda::TokenPlan tokens = ans::cuda::plan_tokens(nullptr, 0, c);
  std::vector<uint64_t> runs(ans::kRunTokens, 0);
  DeviceBuffer counts(8 * c.alphabet), bad(4), mask(std::max<size_t>(1, ans::cuda::mask_bytes(n, c))),
      run_counts(8 * ans::kRunTokens);
  EXPECT_TRUE(d_in.ok() && counts.ok() && bad.ok() && mask.ok() && run_counts.ok());
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  if (n > 0) {
    cudaError_t err = ans::cuda::symbol_histogram(symbols, n, c.alphabet, counts.as<uint64_t>(), bad.as<uint32_t>(), nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    std::vector<uint64_t> hist(c.alphabet);
    cudaMemcpy(hist.data(), counts.data(), 8 * c.alphabet, cudaMemcpyDeviceToHost);
    EXPECT_EQ(bad.read<uint32_t>(), 0u);
    tokens = ans::cuda::plan_tokens(hist.data(), n, c);
    err = ans::cuda::count_run_tokens(symbols, tokens, c, mask.as<uint32_t>(), run_counts.as<uint64_t>(), nullptr);
    EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
    if (err != cudaSuccess) return false;
    cudaMemcpy(runs.data(), run_counts.data(), 8 * ans::kRunTokens, cudaMemcpyDeviceToHost);
  }
  const ans::cuda::EncodePlan plan = ans::cuda::plan_encode(tokens, runs.data(), c);
  DeviceBuffer d_out(plan.max_encoded_bytes + kGuardBytes);
  DeviceBuffer size(8);
  DeviceBuffer scratch(ans::cuda::encode_scratch_bytes(plan));
  EXPECT_TRUE(d_out.ok() && size.ok() && scratch.ok());
  const cudaError_t err =
      ans::cuda::encode(symbols, mask.as<uint32_t>(), plan, d_out.data(), size.as<uint64_t>(), scratch.data(), nullptr);
  cudaEventRecord(stop);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (ms) cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
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
// read back, a second when plan_decode asks, the lanes on the device.
Verdict gpu_decode(const Bytes& stream, const Config& c, size_t max_out, Bytes& out, size_t in_offset = 0,
                   float* ms = nullptr) {
  const DeviceBuffer d_in(in_offset + stream.size() + 1);
  d_in.upload(stream, in_offset);
  ans::cuda::DecodePlan plan;
  try {
    Bytes prefix = d_in.download(std::min(stream.size(), ans::cuda::kFirstPrefixBytes), in_offset);
    plan = ans::cuda::plan_decode(prefix.data(), prefix.size(), stream.size(), c, max_out);
    if (plan.needed != 0) {
      prefix = d_in.download(plan.needed, in_offset);
      plan = ans::cuda::plan_decode(prefix.data(), prefix.size(), stream.size(), c, max_out);
      EXPECT_EQ(plan.needed, 0u) << "asked twice";
    }
  } catch (const FormatError&) {
    return Verdict::kRefusedByHead;
  }
  const size_t bytes = 2 * plan.n;
  DeviceBuffer d_out(bytes + kGuardBytes);
  DeviceBuffer status(4, 0);
  DeviceBuffer scratch(ans::cuda::decode_scratch_bytes(plan));
  EXPECT_TRUE(d_in.ok() && d_out.ok() && status.ok() && scratch.ok());
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  const cudaError_t err =
      ans::cuda::decode(d_in.data() + in_offset, plan, d_out.data(), status.as<uint32_t>(), scratch.data(), nullptr);
  cudaEventRecord(stop);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (ms) cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (err != cudaSuccess) return Verdict::kCallFailed;
  EXPECT_TRUE(guard_intact(d_out, bytes)) << "write past the end";
  if (status.read<uint32_t>() != 0) return Verdict::kRefusedByStatus;
  out = d_out.download(bytes);
  return Verdict::kAccepted;
}

// GPU bytes equal the CPU's, the GPU decodes them back, and the CPU decodes
// the GPU's stream (the same bytes).
void expect_same_both_ways(const Bytes& symbols, const Config& c, const std::string& what, size_t offset = 0) {
  SCOPED_TRACE(what + " (A " + std::to_string(c.alphabet) + ", M " + std::to_string(c.prob_bits) + ", S " +
               std::to_string(c.lane_symbols) + ", n " + std::to_string(symbols.size() / 2) + ")");
  const Bytes cpu = cpu_encode(symbols, c);
  Bytes gpu;
  ASSERT_TRUE(gpu_encode(symbols, c, gpu, offset));
  EXPECT_TRUE(gpu == cpu) << "GPU stream differs from the CPU's: " << first_difference(gpu, cpu);
  Bytes back;
  const Verdict v = gpu_decode(cpu, c, symbols.size(), back, offset);
  EXPECT_EQ(v, Verdict::kAccepted) << name(v);
  EXPECT_TRUE(back == symbols) << "GPU decode of the CPU stream: " << first_difference(back, symbols);
  Bytes cpu_back;
  EXPECT_NO_THROW(ans::decode(gpu, c, cpu_back, symbols.size()));
  EXPECT_TRUE(cpu_back == symbols) << "CPU decode of the GPU stream";
}

std::vector<uint16_t> mostly(size_t n, uint16_t common, uint32_t alphabet, unsigned every, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = rng() % every == 0 ? static_cast<uint16_t>(rng() % alphabet) : common;
  return s;
}

// ---- the spline's codes of the real fields ----

TEST(AnsCuda, SplineCodesOfRealFieldsGiveTheCpuBytesBothWays) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& field : testing::real_fields())
    for (const double noa : {1e-2, 1e-3, 1e-4}) {
      const spline::Streams st = testing::spline_codes(field, noa);
      for (unsigned g = 0; g < spline::kCodeGroups; ++g)
        expect_same_both_ways(st.codes[g], kPreset,
                              field.name + " NOA " + std::to_string(noa) + " group " + std::to_string(g));
    }
}

// ---- synthetic edge cases ----

TEST(AnsCuda, EdgeCasesGiveTheCpuBytesBothWays) {
  FZ_SKIP_WITHOUT_CUDA();
  expect_same_both_ways({}, kPreset, "empty");
  expect_same_both_ways(u16_bytes({7}), kPreset, "one symbol");
  expect_same_both_ways(u16_bytes(std::vector<uint16_t>(100000, 4096)), kPreset, "all equal");
  {
    std::vector<uint16_t> distinct(8000);
    for (size_t i = 0; i < distinct.size(); ++i) distinct[i] = static_cast<uint16_t>(i);
    expect_same_both_ways(u16_bytes(distinct), kPreset, "no two equal");
    std::vector<uint16_t> alternating(50000);
    for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = static_cast<uint16_t>(i % 2 ? 5 : 9);
    expect_same_both_ways(u16_bytes(alternating), kPreset, "no runs");
  }
  // Runs of 61..127 ending exactly at lane ends, starting lanes, around the cap of 63.
  for (const uint32_t S : {63u, 64u, 126u, 127u, 1000u}) {
    std::vector<uint16_t> s;
    for (uint32_t L = 0; L < 130; ++L) {
      s.insert(s.end(), L, 3);
      s.push_back(static_cast<uint16_t>(L % 7 == 0 ? 3 : 1 + L % 5));
    }
    expect_same_both_ways(u16_bytes(s), Config{16, 6, S}, "runs around 63, S " + std::to_string(S));
  }
  expect_same_both_ways(u16_bytes(mostly(20000, 3, 16, 3, 1)), Config{16, 6, 1}, "S = 1");
  expect_same_both_ways(u16_bytes(mostly(200000, 3, 16, 4, 2)), Config{16, 6, ans::kMaxLaneSymbols}, "S = 32767");
  expect_same_both_ways(u16_bytes(mostly(300000, 100, 200, 4, 3)), Config{200, 8, 999}, "M = 8, ragged lanes");
  expect_same_both_ways(u16_bytes(mostly(300000, 10, 64, 3, 4)), Config{64, 6, 4096}, "M = 6");
  expect_same_both_ways(u16_bytes(mostly(300000, 30000, 65536, 2, 5)), Config{65536, 16, 8192}, "A = 65536, M = 16");
  expect_same_both_ways(u16_bytes(mostly(300000, 4096, 8192, 3, 6)), Config{8192, 16, 8192}, "M = 16");
  expect_same_both_ways(u16_bytes(mostly(300000, 4096, 8192, 3, 7)), Config{8192, 15, 2048}, "M = 15");
  {
    std::mt19937_64 rng(8);
    std::vector<uint16_t> noise(200000);
    for (auto& x : noise) x = static_cast<uint16_t>(rng());
    const Bytes b = u16_bytes(noise);
    expect_same_both_ways(b, Config{65536, 16, 8192}, "random: stored");
    expect_same_both_ways(b, Config{65536, 16, 8192}, "random: stored, odd input offset", 1);
  }
  // Half m, half 64 common symbols, and one lane of 16-bit noise: each
  // noise symbol has f = 1 at M = 16, so that lane takes more words than
  // symbols (8674 for 8192) and passes its scratch: the second pass codes it
  // in place.
  {
    std::vector<uint16_t> s(400000);
    std::mt19937_64 rng(12);
    for (auto& x : s) x = rng() % 2 == 0 ? static_cast<uint16_t>(30000 + rng() % 64) : 30000;
    for (size_t i = 3 * 8192; i < 4 * 8192; ++i) s[i] = static_cast<uint16_t>(rng());
    const Config c{65536, 16, 8192};
    const Bytes b = u16_bytes(s);
    const Bytes cpu = cpu_encode(b, c);
    const ans::format::Layout l = ans::format::parse(cpu.data(), cpu.size(), cpu.size(), c, kNoLimit);
    ASSERT_EQ(l.method, ans::kMethodCoded);
    ASSERT_GT(l.word_start[4] - l.word_start[3], 8192u) << "the lane no longer passes its scratch";
    expect_same_both_ways(b, c, "a lane whose words pass its scratch");
    expect_same_both_ways(b, c, "a lane whose words pass its scratch, odd input offset", 3);
  }
  // Many lanes (the cub scan), a tiny head (stored decided on the host).
  expect_same_both_ways(u16_bytes(mostly(3000000, 7, 16, 5, 11)), Config{16, 8, 300}, "10000 lanes");
  expect_same_both_ways(u16_bytes({1, 1}), Config{4, 6, 1}, "two one-symbol lanes");
}

TEST(AnsCuda, SymbolsOutsideTheAlphabetAreFlagged) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in = u16_bytes({1, 2, 16, 3});
  DeviceBuffer d_in = testing::to_device(in), counts(8 * 16), bad(4);
  FZ_CUDA_OK(ans::cuda::symbol_histogram(d_in.data(), 4, 16, counts.as<uint64_t>(), bad.as<uint32_t>(), nullptr));
  EXPECT_NE(bad.read<uint32_t>(), 0u);
}

// ---- hostile streams: the GPU refuses exactly what the CPU refuses ----

void expect_same_verdict(const Bytes& stream, const Config& c, size_t max_out, const std::string& what) {
  bool cpu_ok = true;
  Bytes cpu;
  try {
    ans::decode(stream, c, cpu, max_out);
  } catch (const FormatError&) {
    cpu_ok = false;
  }
  Bytes gpu;
  const Verdict v = gpu_decode(stream, c, max_out, gpu);
  EXPECT_EQ(v == Verdict::kAccepted, cpu_ok) << what << ": CPU " << (cpu_ok ? "accepts" : "refuses") << ", GPU "
                                             << name(v);
  if (cpu_ok && v == Verdict::kAccepted) {
    EXPECT_TRUE(gpu == cpu) << what << ": " << first_difference(gpu, cpu);
  }
}

TEST(AnsCuda, MalformedStreamsAreRefusedAsByTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Config c{2, 6, 131};
  std::vector<uint16_t> example(131, 0);
  example[130] = 1;
  const Bytes ok = cpu_encode(u16_bytes(example), c);
  std::vector<Bytes> cases = {{}, {0x80}, {0x00, 0x00}, {0x01, 0x02, 0x00, 0x00}, {0x01, 0x00, 0x02, 0x00},
                              {0x01, 0x00, 0x01}, {0x01, 0x00, 0x01, 0x00, 0x00}};
  {
    Bytes b = ok;
    store_le<uint32_t>(b.data() + 16, 442415);
    cases.push_back(b);
    store_le<uint32_t>(b.data() + 16, 0xFFFFFFFF);
    cases.push_back(b);
  }
  for (size_t i = 0; i < cases.size(); ++i) expect_same_verdict(cases[i], c, kNoLimit, "case " + std::to_string(i));
  expect_same_verdict(ok, c, 261, "over max_out");

  // A small multi-lane stream: every truncation, every byte flipped three ways,
  // lanes' word counts shifted.
  const Config small{16, 6, 500};
  const Bytes symbols = u16_bytes(mostly(2000, 3, 16, 3, 9));
  const Bytes coded = cpu_encode(symbols, small);
  const ans::format::Layout l = ans::format::parse(coded.data(), coded.size(), coded.size(), small, kNoLimit);
  ASSERT_EQ(l.method, ans::kMethodCoded);
  for (size_t size = 0; size < coded.size(); size += 7)
    expect_same_verdict(Bytes(coded.begin(), coded.begin() + size), small, kNoLimit, "cut to " + std::to_string(size));
  for (size_t at = 0; at < coded.size(); ++at)
    for (const uint8_t flip : {0x01, 0x80, 0xFF}) {
      Bytes b = coded;
      b[at] ^= flip;
      expect_same_verdict(b, small, symbols.size(), "byte " + std::to_string(at) + " ^ " + std::to_string(flip));
    }
  for (size_t k = 0; k + 1 < l.lanes; ++k) {
    Bytes b = coded;
    const uint16_t w0 = load_le<uint16_t>(b.data() + l.words_at + 2 * k);
    const uint16_t w1 = load_le<uint16_t>(b.data() + l.words_at + 2 * k + 2);
    store_le<uint16_t>(b.data() + l.words_at + 2 * k, static_cast<uint16_t>(w0 - 1));
    store_le<uint16_t>(b.data() + l.words_at + 2 * k + 2, static_cast<uint16_t>(w1 + 1));
    expect_same_verdict(b, small, kNoLimit, "lane " + std::to_string(k) + " one word short");
  }
  // An all-m stream (empty symbol table) whose run tokens are damaged.
  const Bytes flat = cpu_encode(u16_bytes(std::vector<uint16_t>(5000, 2)), small);
  for (size_t at = 0; at < flat.size(); ++at) {
    Bytes b = flat;
    b[at] ^= 0x10;
    expect_same_verdict(b, small, kNoLimit, "all-m stream, byte " + std::to_string(at));
  }
}

// ---- throughput (printed, not asserted) ----

TEST(AnsCuda, PrintsThroughput) {
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
    std::printf("ans GPU, %zu Mi symbols, 1 in %u not m: %.3f ratio, encode %.3f ms (%.1f GB/s, with both read backs), "
                "decode %.3f ms (%.1f GB/s, lanes only)\n",
                n >> 20, every, double(in.size()) / double(coded.size()), enc_ms, double(in.size()) / enc_ms / 1e6,
                dec_ms, double(in.size()) / dec_ms / 1e6);
  }
}

}  // namespace
}  // namespace fz
