// Huffman on the GPU: the CPU's stream bytes for the Lorenzo codes of the real
// fields (the cusz preset's input) and for synthetic distributions and sizes;
// the CPU's symbols from GPU decodes of CPU streams; hostile streams refused
// (plan_decode's FormatError or a nonzero status) exactly where the CPU
// decoder throws; and a throughput table (printed, not asserted). Skipped
// without a CUDA device.
#include "huffman/huffman_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_format.hpp"
#include "lorenzo/lorenzo.hpp"

namespace fz {
namespace {

using huffman::Config;
using testing::DeviceBuffer;
using testing::guard_intact;
using testing::kGuardBytes;

constexpr Config kCusz{1024, 16, 16384};

using testing::u16_bytes;

Bytes cpu_encode(const Bytes& in, const Config& c) {
  Bytes out;
  huffman::encode(in, c, out);
  return out;
}

// GPU encode of `in` placed at byte `offset` of its device buffer (any
// alignment); false (with a failure recorded) when a call fails or a guard is hit.
bool gpu_encode(const Bytes& in, const Config& c, Bytes& out, size_t offset = 0) {
  const size_t n = in.size() / 2;
  DeviceBuffer d_in(offset + in.size() + 1);
  d_in.upload(in, offset);
  DeviceBuffer counts(sizeof(uint64_t) * c.alphabet);
  DeviceBuffer bad(4);
  EXPECT_TRUE(d_in.ok() && counts.ok() && bad.ok());
  cudaError_t err = huffman::cuda::histogram(d_in.data() + offset, n, c.alphabet, counts.as<uint64_t>(),
                                             bad.as<uint32_t>(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  if (err != cudaSuccess) return false;
  std::vector<uint64_t> hist(c.alphabet);
  EXPECT_EQ(cudaMemcpy(hist.data(), counts.data(), sizeof(uint64_t) * c.alphabet, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(bad.read<uint32_t>(), 0u);
  const huffman::cuda::EncodePlan plan = huffman::cuda::plan_encode(hist.data(), n, c);
  DeviceBuffer d_out(plan.max_encoded_bytes + kGuardBytes);
  DeviceBuffer size(8);
  DeviceBuffer scratch(huffman::cuda::encode_scratch_bytes(plan));
  EXPECT_TRUE(d_out.ok() && size.ok() && scratch.ok());
  err = huffman::cuda::encode(d_in.data() + offset, plan, d_out.data(), size.as<uint64_t>(), scratch.data(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (err != cudaSuccess) return false;
  const uint64_t used = size.read<uint64_t>();
  EXPECT_GE(used, 17u);
  EXPECT_LE(used, plan.max_encoded_bytes);
  if (used > plan.max_encoded_bytes) return false;
  out = d_out.download(used);
  const bool guards = guard_intact(d_out, plan.max_encoded_bytes);
  EXPECT_TRUE(guards) << "write past the end";
  return guards;
}

enum class Verdict { kAccepted, kRefusedByHeader, kRefusedByStatus, kCallFailed };

// GPU decode as the engine does it for a stream that lives only on the device:
// read back its first bytes, then the prefix decode_prefix_bytes asks for,
// plan on the host, decode on the device. The stream sits at byte in_offset
// of its buffer and the symbols go to byte out_offset of theirs.
Verdict gpu_decode(const Bytes& stream, size_t max_out, Bytes& out, size_t in_offset = 0, size_t out_offset = 0) {
  const DeviceBuffer d_in(in_offset + stream.size() + 1);
  d_in.upload(stream, in_offset);
  const uint8_t* device_stream = d_in.data() + in_offset;
  Bytes head = d_in.download(std::min(stream.size(), huffman::cuda::kPrefixProbeBytes), in_offset);
  const size_t need = huffman::cuda::decode_prefix_bytes(head.data(), head.size(), stream.size());
  EXPECT_LE(need, stream.size());
  const Bytes prefix = d_in.download(need, in_offset);
  huffman::cuda::DecodePlan plan;
  try {
    plan = huffman::cuda::plan_decode(prefix.data(), prefix.size(), stream.size(), max_out);
  } catch (const FormatError&) {
    return Verdict::kRefusedByHeader;
  }
  const size_t bytes = 2 * plan.n;
  DeviceBuffer d_out(out_offset + bytes + kGuardBytes);
  DeviceBuffer status(4);
  DeviceBuffer scratch(huffman::cuda::decode_scratch_bytes(plan));
  EXPECT_TRUE(d_in.ok() && d_out.ok() && status.ok() && scratch.ok());
  const cudaError_t err =
      huffman::cuda::decode(device_stream, plan, d_out.data() + out_offset, status.as<uint32_t>(), scratch.data(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (err != cudaSuccess) return Verdict::kCallFailed;
  EXPECT_TRUE(guard_intact(d_out, out_offset + bytes)) << "write past the end";
  const Bytes before = d_out.download(out_offset);
  EXPECT_TRUE(std::all_of(before.begin(), before.end(), [](uint8_t b) { return b == testing::kGuardFill; }))
      << "write before the start";
  out = d_out.download(bytes, out_offset);
  return status.read<uint32_t>() == 0 ? Verdict::kAccepted : Verdict::kRefusedByStatus;
}

// GPU encode == CPU encode; GPU decode of the CPU's stream == the input.
bool check_case(const Bytes& in, const Config& c, const std::string& what, size_t offset = 0) {
  SCOPED_TRACE(what);
  const Bytes cpu = cpu_encode(in, c);
  Bytes gpu;
  if (!gpu_encode(in, c, gpu, offset)) return false;
  const bool same = gpu == cpu;
  EXPECT_TRUE(same) << "stream differs (" << gpu.size() << " vs " << cpu.size() << " bytes)";
  Bytes decoded;
  const Verdict v = gpu_decode(cpu, in.size(), decoded, offset, offset);
  EXPECT_EQ(v, Verdict::kAccepted);
  const bool round_trip = decoded == in;
  EXPECT_TRUE(round_trip) << "decoded symbols differ";
  return same && v == Verdict::kAccepted && round_trip;
}

// ---- real fields: the Lorenzo codes the cusz preset feeds to Huffman --------

using testing::RealField;
using testing::real_fields;

template <typename T>
double finite_range(const Bytes& raw) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (size_t i = 0; i + sizeof(T) <= raw.size(); i += sizeof(T)) {
    const double x = static_cast<double>(load_le<T>(raw.data() + i));
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  }
  return hi > lo ? hi - lo : 1.0;
}

// The codes lorenzo::encode gives the field at `fraction` of its range (radius
// 512, as engine/src/presets/lorenzo.cpp builds cusz), with a working bound of the element type
// rounded toward zero as the engine's.
Bytes lorenzo_codes(const RealField& f, const Bytes& raw, double fraction) {
  const double user = fraction * (f.f64 ? finite_range<double>(raw) : finite_range<float>(raw));
  lorenzo::Config c;
  c.width = f.f64 ? 8 : 4;
  c.radius = 512;
  if (f.f64) {
    c.eb = user;
  } else {
    float eb = static_cast<float>(user);
    if (static_cast<double>(eb) > user) eb = std::nextafter(eb, 0.0f);
    c.eb = eb;
  }
  lorenzo::Streams streams;
  lorenzo::encode(raw, f.dims, c, user, streams);
  return streams.codes;
}

TEST(HuffmanCuda, RealFieldLorenzoCodes) {
  FZ_SKIP_WITHOUT_CUDA();
  size_t checked = 0;
  for (const RealField& f : real_fields()) {
    const Bytes raw = testing::read_field(f.name);
    for (double fraction : {1e-2, 1e-3, 1e-4, 1e-5}) {
      const Bytes codes = lorenzo_codes(f, raw, fraction);
      ASSERT_EQ(codes.size() * (f.f64 ? 4 : 2), raw.size());
      if (!check_case(codes, kCusz, f.name + " at " + std::to_string(fraction) + " of range")) return;
      ++checked;
    }
  }
  EXPECT_EQ(checked, real_fields().size() * 4);
}

// ---- synthetic distributions, sizes and alphabets -------------------------------

std::vector<uint16_t> geometric(size_t n, double p, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<uint32_t> g(p);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = static_cast<uint16_t>(std::min<uint32_t>(g(rng), alphabet - 1));
  return s;
}

std::vector<uint16_t> uniform(size_t n, uint32_t alphabet, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> s(n);
  for (auto& x : s) x = static_cast<uint16_t>(rng() % alphabet);
  return s;
}

// Counts like Fibonacci numbers: the optimal code is as deep as there are
// symbols, so the length limit decides (package-merge).
std::vector<uint16_t> steep(uint32_t symbols, uint64_t cap, uint32_t alphabet) {
  std::vector<uint16_t> s;
  uint64_t a = 1, b = 1;
  for (uint32_t k = 0; k < symbols; ++k) {
    for (uint64_t i = 0; i < a; ++i) s.push_back(static_cast<uint16_t>((k * 37) % alphabet));
    const uint64_t next = std::min(a + b, cap);
    a = b;
    b = next;
  }
  std::shuffle(s.begin(), s.end(), std::mt19937_64(5));
  return s;
}

// i * 7 mod `distinct`: `distinct` symbols, equally often.
std::vector<uint16_t> wide_symbols(size_t n, uint32_t distinct) {
  std::vector<uint16_t> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<uint16_t>((i * 7) % distinct);
  return s;
}

TEST(HuffmanCuda, SyntheticDistributions) {
  FZ_SKIP_WITHOUT_CUDA();
  struct Case {
    std::string what;
    std::vector<uint16_t> symbols;
    Config config;
  };
  std::vector<Case> cases = {
      {"single symbol", std::vector<uint16_t>(100000, 512), kCusz},
      {"single symbol 0", std::vector<uint16_t>(70000, 0), kCusz},
      {"uniform over 1024", uniform(200000, 1024, 1), kCusz},
      {"geometric 0.5", geometric(300000, 0.5, 1024, 2), kCusz},
      {"geometric 0.02", geometric(300000, 0.02, 1024, 3), kCusz},
      {"at the limit 16", steep(40, 200000, 1024), kCusz},
      {"at the limit 5", steep(30, 5000, 32), Config{32, 5, 1000}},
      {"alphabet 1", std::vector<uint16_t>(5000, 0), Config{1, 1, 64}},
      {"alphabet 3, limit 2", uniform(5000, 3, 4), Config{3, 2, 77}},
      {"alphabet 17", geometric(50000, 0.3, 17, 5), Config{17, 8, 4096}},
      {"alphabet 4099", geometric(100000, 0.001, 4099, 6), Config{4099, 13, 16384}},
      {"alphabet 8192 (shared bins)", uniform(100000, 8192, 7), Config{8192, 16, 16384}},
      {"alphabet 8193 (global bins)", uniform(100000, 8193, 8), Config{8193, 16, 16384}},
      {"alphabet 65536, limit 24", geometric(400000, 0.0002, 65536, 9), Config{65536, 24, 16384}},
      {"alphabet 65536, uniform", uniform(300000, 65536, 10), Config{65536, 16, 20000}},
      {"alphabet 65536, limit 24, steep", steep(60, 1 << 20, 65536), Config{65536, 24, 100000}},
  };
  std::vector<uint16_t> two(100000);
  for (size_t i = 0; i < two.size(); ++i) two[i] = (i * 7919) % 5 == 0 ? 3 : 1000;
  cases.push_back({"two symbols", two, kCusz});
  cases.push_back({"20000 symbols of 14-15 bits", wide_symbols(200000, 20000), Config{65536, 16, 16384}});
  for (const Case& c : cases) {
    if (!check_case(u16_bytes(c.symbols), c.config, c.what)) return;
  }
}

TEST(HuffmanCuda, SizesAroundBlocks) {
  FZ_SKIP_WITHOUT_CUDA();
  // 16384 (cusz), blocks of one symbol, odd sizes, 4096 and 4097, and blocks
  // too large to stage in shared memory when decoding.
  for (uint32_t S : {16384u, 1u, 37u, 1000u, 4096u, 4097u, 16385u, 70000u}) {
    std::vector<size_t> sizes = {0, 1, 2, S - 1, S, size_t{S} + 1, 3 * size_t{S}, 3 * size_t{S} + 7};
    if (S == 1) sizes = {0, 1, 2, 3, 1000};
    for (size_t n : sizes) {
      const Config c{1024, 16, S};
      const std::string what = "S " + std::to_string(S) + " n " + std::to_string(n);
      if (!check_case(u16_bytes(geometric(n, 0.2, 1024, n + S)), c, what)) return;
    }
  }
}

TEST(HuffmanCuda, AnyAlignment) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes in = u16_bytes(geometric(50000, 0.1, 1024, 12));
  for (size_t offset : {1u, 2u, 3u, 6u}) {
    if (!check_case(in, Config{1024, 16, 1001}, "offset " + std::to_string(offset), offset)) return;
  }
}

// Small blocks (1 to 4096 symbols), peaked and broad codes (near-uniform
// over 8192 symbols; many codes of 11-16 bits, as the spline preset's coarse
// levels give at tight bounds), both lookup levels and the canonical search,
// ragged sizes, odd offsets.
TEST(HuffmanCuda, SmallBlocksAndBroadCodes) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint32_t S : {1u, 7u, 64u, 1024u, 4096u}) {
    const size_t n = std::max<size_t>(20011, 5 * size_t{S} + S / 2 + 3);  // not a multiple of S (S > 1)
    struct Case {
      std::string what;
      std::vector<uint16_t> symbols;
      uint32_t alphabet;
    };
    const std::vector<Case> cases = {
        {"peaked over 1024", geometric(n, 0.3, 1024, S + 1), 1024},
        {"peaked over 8192", geometric(n, 0.3, 8192, S + 2), 8192},
        {"broad over 1024", uniform(n, 1024, S + 3), 1024},
        {"near-uniform over 8192", uniform(n, 8192, S + 4), 8192},
        {"11-16 bits over 8192", geometric(n, 0.0007, 8192, S + 5), 8192},
        {"second level over 1024", geometric(n, 0.01, 1024, S + 6), 1024},
        {"20000 symbols of 14-15 bits (canonical search)", wide_symbols(n, 20000), 65536},
        {"single symbol", std::vector<uint16_t>(n, 77), 1024},
    };
    for (const Case& c : cases) {
      const std::string what = c.what + ", S " + std::to_string(S) + ", n " + std::to_string(n);
      if (!check_case(u16_bytes(c.symbols), Config{c.alphabet, 16, S}, what)) return;
    }
    // Odd places in memory: symbols (and the stream) at odd and even offsets.
    for (size_t offset : {1u, 2u, 6u}) {
      const std::string what = "offset " + std::to_string(offset) + ", S " + std::to_string(S);
      if (!check_case(u16_bytes(geometric(n - 2, 0.001, 8192, S + offset)), Config{8192, 16, S}, what, offset))
        return;
    }
  }
}

TEST(HuffmanCuda, HistogramAndSymbolsOutsideTheAlphabet) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint32_t alphabet : {1024u, 40000u}) {
    std::vector<uint16_t> symbols = uniform(100003, alphabet, alphabet);
    std::vector<uint64_t> expected(alphabet, 0);
    for (uint16_t s : symbols) ++expected[s];
    for (int bad : {0, 1}) {
      if (bad) symbols[77777] = static_cast<uint16_t>(alphabet);
      const Bytes in = u16_bytes(symbols);
      const DeviceBuffer d_in = testing::to_device(in);
      DeviceBuffer counts(sizeof(uint64_t) * alphabet);
      DeviceBuffer flag(4);
      ASSERT_EQ(huffman::cuda::histogram(d_in.data(), symbols.size(), alphabet, counts.as<uint64_t>(),
                                         flag.as<uint32_t>(), nullptr),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(flag.read<uint32_t>() != 0, bad != 0) << "alphabet " << alphabet;
      if (!bad) {
        std::vector<uint64_t> got(alphabet);
        cudaMemcpy(got.data(), counts.data(), sizeof(uint64_t) * alphabet, cudaMemcpyDeviceToHost);
        EXPECT_EQ(got, expected) << "alphabet " << alphabet;
      }
      Bytes cpu;
      if (bad) {
        EXPECT_THROW(huffman::encode(in, Config{alphabet, 16, 16384}, cpu), UsageError);
      }
    }
  }
}

// ---- hostile streams ------------------------------------------------------------

bool cpu_accepts(const Bytes& stream, size_t max_out, Bytes& out) {
  try {
    huffman::decode(stream, out, max_out);
    return true;
  } catch (const FormatError&) {
    return false;
  }
}

struct Tally {
  size_t accepted = 0, by_header = 0, by_status = 0;
};

// The GPU refuses (plan or status) exactly when the CPU throws; what both
// accept decodes to the same symbols.
bool expect_same_verdict(const Bytes& stream, size_t max_out, const std::string& what, Tally& tally) {
  Bytes cpu_out, gpu_out;
  const bool cpu = cpu_accepts(stream, max_out, cpu_out);
  const Verdict v = gpu_decode(stream, max_out, gpu_out);
  EXPECT_NE(v, Verdict::kCallFailed) << what;
  const bool gpu = v == Verdict::kAccepted;
  EXPECT_EQ(gpu, cpu) << what << (cpu ? ": the GPU refused a stream the CPU accepts"
                                      : ": the GPU accepted a stream the CPU refuses");
  if (cpu && gpu) {
    EXPECT_TRUE(gpu_out == cpu_out) << what << ": decoded symbols differ";
  }
  if (v == Verdict::kAccepted) ++tally.accepted;
  if (v == Verdict::kRefusedByHeader) ++tally.by_header;
  if (v == Verdict::kRefusedByStatus) ++tally.by_status;
  return gpu == cpu;
}

TEST(HuffmanCuda, HostileStreamsRefusedExactlyWhereTheCpuRefuses) {
  FZ_SKIP_WITHOUT_CUDA();
  struct Case {
    std::vector<uint16_t> symbols;
    Config config;
  };
  const std::vector<Case> cases = {
      {geometric(300, 0.4, 16, 1), Config{16, 6, 64}},
      {geometric(200, 0.9, 4, 2), Config{4, 3, 37}},
      {std::vector<uint16_t>(100, 3), Config{8, 3, 33}},  // a single code: the bit 1 is no code
      {geometric(20000, 0.05, 1024, 3), Config{1024, 16, 2000}},
      // Codes past 12 bits: the second lookup level, then (20000 symbols of
      // 14-15 bits, too many for that level) the canonical search.
      {geometric(30000, 0.01, 1024, 4), Config{1024, 16, 4000}},
      {wide_symbols(30000, 20000), Config{65536, 16, 5000}},
      // Blocks up to 4096 symbols are decoded one per thread, larger ones by
      // rounds: both, on small streams (every bit flipped) and broad codes.
      {geometric(300, 0.4, 16, 6), Config{16, 6, 5000}},
      {geometric(150, 0.3, 1024, 7), Config{1024, 16, 1}},
      {geometric(250, 0.2, 1024, 8), Config{1024, 16, 7}},
      {uniform(9000, 8192, 9), Config{8192, 16, 1024}},
      {uniform(9000, 8192, 10), Config{8192, 16, 8192}},
      {geometric(20000, 0.0007, 8192, 11), Config{8192, 16, 4096}},
      {geometric(20000, 0.0007, 8192, 12), Config{8192, 16, 4097}},
      {wide_symbols(30000, 20000), Config{65536, 16, 1024}},
  };
  std::mt19937_64 rng(11);
  Tally tally;
  for (const Case& c : cases) {
    const Bytes in = u16_bytes(c.symbols);
    const Bytes stream = cpu_encode(in, c.config);
    const size_t max_out = in.size();
    const size_t bits = 8 * stream.size();
    // Every bit of small streams, random bits of the large one; then triple flips.
    const bool small = stream.size() < 400;
    for (size_t f = 0; f < (small ? bits : 2500); ++f) {
      Bytes hostile = stream;
      const size_t bit = small ? f : rng() % bits;
      hostile[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      if (!expect_same_verdict(hostile, max_out, "flip of bit " + std::to_string(bit), tally)) return;
    }
    for (int k = 0; k < 200; ++k) {
      Bytes hostile = stream;
      for (int j = 0; j < 3; ++j) {
        const size_t bit = rng() % bits;
        hostile[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      }
      if (!expect_same_verdict(hostile, max_out, "three flips", tally)) return;
    }
    // Truncations in every part: header, code-length table, block table, words.
    for (size_t cut = 0; cut < stream.size(); cut += small ? 1 : 37) {
      const Bytes hostile(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(cut));
      if (!expect_same_verdict(hostile, max_out, "cut at " + std::to_string(cut), tally)) return;
    }
    Bytes longer = stream;
    longer.insert(longer.end(), 4, 0);
    if (!expect_same_verdict(longer, max_out, "a zero word appended", tally)) return;
    // The caller's limit: one symbol short is refused.
    if (!expect_same_verdict(stream, max_out - 2, "limit one symbol short", tally)) return;
    if (!expect_same_verdict(stream, max_out, "the stream itself", tally)) return;
  }
  std::printf("hostile streams: %zu accepted, %zu refused by the header checks, %zu by the device status\n",
              tally.accepted, tally.by_header, tally.by_status);
  EXPECT_GT(tally.by_status, 100u);
  EXPECT_GT(tally.by_header, 100u);
}

// A block whose words outnumber what its codes could take: an unused word the
// count alone proves (checked before decoding, keeping bit positions in 32 bits).
TEST(HuffmanCuda, BlockWithFarTooManyWords) {
  FZ_SKIP_WITHOUT_CUDA();
  const Config c{16, 6, 64};
  const Bytes in = u16_bytes(geometric(256, 0.4, 16, 5));
  const Bytes stream = cpu_encode(in, c);
  const huffman::format::Layout layout = huffman::format::parse(stream.data(), stream.size(), stream.size(), in.size());
  ASSERT_EQ(layout.blocks, 4u);
  // Block 0 gains 1000 zero words: every end moves up by 1000.
  Bytes hostile(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(layout.payload_at));
  for (size_t b = 0; b < layout.blocks; ++b)
    store_le<uint32_t>(hostile.data() + layout.ends_at + 4 * b, static_cast<uint32_t>(layout.start[b + 1] + 1000));
  const size_t block1_at = layout.payload_at + 4 * layout.start[1];
  hostile.insert(hostile.end(), stream.begin() + static_cast<std::ptrdiff_t>(layout.payload_at),
                 stream.begin() + static_cast<std::ptrdiff_t>(block1_at));
  hostile.insert(hostile.end(), 4000, 0);
  hostile.insert(hostile.end(), stream.begin() + static_cast<std::ptrdiff_t>(block1_at), stream.end());
  Tally tally;
  expect_same_verdict(hostile, in.size(), "block 0 with 1000 extra words", tally);
  EXPECT_EQ(tally.by_status, 1u);
}

// One block's end moved by a word or two (its neighbour's start with it): the
// header checks may pass, then the blocks' decode must refuse exactly where
// the CPU does (a block running past its words, an unused word, padding).
TEST(HuffmanCuda, BlockBoundariesMoved) {
  FZ_SKIP_WITHOUT_CUDA();
  Tally tally;
  for (uint32_t S : {1u, 7u, 64u, 1024u, 4096u, 4097u, 16384u}) {
    for (uint32_t alphabet : {1024u, 8192u}) {
      const size_t n = 13 * size_t{S} + S / 3 + 40;  // at least 13 blocks, the last ragged
      const Bytes in = u16_bytes(alphabet == 1024 ? geometric(n, 0.2, 1024, S) : uniform(n, 8192, S));
      const Config c{alphabet, 16, S};
      const Bytes stream = cpu_encode(in, c);
      const huffman::format::Layout layout =
          huffman::format::parse(stream.data(), stream.size(), stream.size(), in.size());
      for (uint64_t b = 0; b + 1 < layout.blocks && b < 12; ++b) {
        for (int d : {-2, -1, 1, 2}) {
          Bytes hostile = stream;
          const size_t at = layout.ends_at + 4 * b;
          store_le<uint32_t>(hostile.data() + at, load_le<uint32_t>(hostile.data() + at) + static_cast<uint32_t>(d));
          const std::string what = "S " + std::to_string(S) + " alphabet " + std::to_string(alphabet) + ": end[" +
                                   std::to_string(b) + "] " + (d > 0 ? "+" : "") + std::to_string(d);
          if (!expect_same_verdict(hostile, in.size(), what, tally)) return;
        }
      }
    }
  }
  std::printf("moved boundaries: %zu accepted, %zu refused by the header checks, %zu by the device status\n",
              tally.accepted, tally.by_header, tally.by_status);
  EXPECT_GT(tally.by_status, 300u);
}

// ---- throughput (printed, not asserted) -------------------------------------------

double elapsed_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

// wmag91's Lorenzo codes tiled to 64 MiB of symbols, device-resident. Encode
// = histogram + (copy back, code lengths on the host) + encode kernels;
// decode = the decode kernels after the host planned from the stream's prefix.
TEST(HuffmanCuda, Throughput) {
  FZ_SKIP_WITHOUT_CUDA();
  const RealField& wmag = real_fields()[0];
  const Bytes raw = testing::read_field(wmag.name);
  constexpr size_t kSymbols = size_t{32} << 20;  // 64 MiB
  std::printf("\nHuffman on the GPU, wmag91 Lorenzo codes (R 512) tiled to %zu MiB of u16 symbols, device-resident\n",
              2 * kSymbols >> 20);
  std::printf("%-9s %8s %10s %10s %10s %11s %10s %11s\n", "bound", "ratio", "hist ms", "plan ms", "encode ms",
              "enc GB/s", "decode ms", "dec GB/s");
  for (double fraction : {1e-2, 1e-3, 1e-4, 1e-5}) {
    const Bytes codes = lorenzo_codes(wmag, raw, fraction);
    Bytes in(2 * kSymbols);
    for (size_t at = 0; at < in.size(); at += codes.size())
      std::memcpy(in.data() + at, codes.data(), std::min(codes.size(), in.size() - at));
    const DeviceBuffer d_in = testing::to_device(in);
    DeviceBuffer counts(sizeof(uint64_t) * kCusz.alphabet), bad(4), size(8), status(4);
    cudaEvent_t e[4];
    for (auto& x : e) cudaEventCreate(&x);
    std::vector<uint64_t> hist(kCusz.alphabet);
    double best_hist = 1e30, best_plan = 1e30, best_encode = 1e30, best_decode = 1e30;
    Bytes gpu_stream;
    for (int rep = 0; rep < 5; ++rep) {
      cudaEventRecord(e[0]);
      ASSERT_EQ(huffman::cuda::histogram(d_in.data(), kSymbols, kCusz.alphabet, counts.as<uint64_t>(),
                                         bad.as<uint32_t>(), nullptr),
                cudaSuccess);
      cudaEventRecord(e[1]);
      cudaMemcpy(hist.data(), counts.data(), sizeof(uint64_t) * kCusz.alphabet, cudaMemcpyDeviceToHost);
      const auto t0 = std::chrono::steady_clock::now();
      const huffman::cuda::EncodePlan plan = huffman::cuda::plan_encode(hist.data(), kSymbols, kCusz);
      const auto t1 = std::chrono::steady_clock::now();
      DeviceBuffer d_out(plan.max_encoded_bytes), scratch(huffman::cuda::encode_scratch_bytes(plan));
      cudaEventRecord(e[2]);
      ASSERT_EQ(huffman::cuda::encode(d_in.data(), plan, d_out.data(), size.as<uint64_t>(), scratch.data(), nullptr),
                cudaSuccess);
      cudaEventRecord(e[3]);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      best_hist = std::min(best_hist, elapsed_ms(e[0], e[1]));
      best_plan = std::min(best_plan, std::chrono::duration<double, std::milli>(t1 - t0).count());
      best_encode = std::min(best_encode, elapsed_ms(e[2], e[3]));
      if (rep == 0) gpu_stream = d_out.download(size.read<uint64_t>());
    }
    ASSERT_TRUE(gpu_stream == cpu_encode(in, kCusz)) << fraction << ": the GPU stream differs from the CPU's";
    const DeviceBuffer d_stream = testing::to_device(gpu_stream);
    const huffman::cuda::DecodePlan plan =
        huffman::cuda::plan_decode(gpu_stream.data(), gpu_stream.size(), gpu_stream.size(), in.size());
    DeviceBuffer d_out(in.size()), scratch(huffman::cuda::decode_scratch_bytes(plan));
    for (int rep = 0; rep < 5; ++rep) {
      cudaEventRecord(e[0]);
      ASSERT_EQ(huffman::cuda::decode(d_stream.data(), plan, d_out.data(), status.as<uint32_t>(), scratch.data(),
                                      nullptr),
                cudaSuccess);
      cudaEventRecord(e[1]);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      best_decode = std::min(best_decode, elapsed_ms(e[0], e[1]));
    }
    EXPECT_EQ(status.read<uint32_t>(), 0u);
    EXPECT_TRUE(d_out.download(in.size()) == in) << fraction << ": decoded symbols differ";
    const double gb = static_cast<double>(in.size()) / 1e9;
    std::printf("%-9g %8.2f %10.3f %10.3f %10.3f %11.1f %10.3f %11.1f\n", fraction,
                static_cast<double>(in.size()) / static_cast<double>(gpu_stream.size()), best_hist, best_plan,
                best_encode, gb / ((best_hist + best_encode) / 1e3), best_decode, gb / (best_decode / 1e3));
    for (auto& x : e) cudaEventDestroy(x);
  }
  std::printf("enc GB/s: symbol bytes over histogram + encode kernels (the host's plan and the copy of the\n"
              "histogram between them are not counted; plan ms is the host's code-length work).\n");
}

}  // namespace
}  // namespace fz
