// Lorenzo on the GPU: the CPU's streams, byte for byte, for real fields and odd
// shapes with specials; the CPU's decoded bytes from CPU streams; hostile
// streams give a nonzero status exactly where the CPU throws FormatError
// (skipped without a CUDA device).
#include "lorenzo/lorenzo_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "lorenzo/lorenzo.hpp"

namespace fz {
namespace {

using Dims = std::vector<size_t>;
using testing::DeviceBuffer;
using testing::guard_intact;
using testing::kGuardBytes;

template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
BitsOf<T> bits_of(T x) {
  BitsOf<T> b;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}
template <typename T>
T from_bits(BitsOf<T> b) {
  T x;
  std::memcpy(&x, &b, sizeof(T));
  return x;
}
template <typename T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
size_t product(const Dims& d) {
  size_t n = 1;
  for (size_t e : d) n *= e;
  return n;
}

template <typename T>
double working_bound(double user) {
  T eb = static_cast<T>(user);
  if (static_cast<double>(eb) > user) eb = std::nextafter(eb, T(0));
  return static_cast<double>(eb);
}

template <typename T>
lorenzo::Config make_config(double user_bound, uint32_t radius, bool has_fill = false, BitsOf<T> fill = 0) {
  lorenzo::Config c;
  c.width = sizeof(T);
  c.eb = working_bound<T>(user_bound);
  c.radius = radius;
  c.has_fill = has_fill;
  c.fill_bits = fill;
  return c;
}

// GPU encode; false (with a failure recorded) when a call fails or a guard is hit.
// in_offset and codes_offset place the input and the codes that many bytes
// past an allocation's start (misaligned for vectors, or for words).
bool gpu_encode(const Bytes& in, const Dims& dims, const lorenzo::Config& c, double bound, lorenzo::Streams& out,
                size_t in_offset = 0, size_t codes_offset = 0) {
  const size_t n = product(dims);
  Bytes placed(in_offset, 0x5A);
  placed.insert(placed.end(), in.begin(), in.end());
  const DeviceBuffer d_in = testing::to_device(placed);
  const DeviceBuffer codes(codes_offset + 2 * n + kGuardBytes);
  const size_t max_out = lorenzo::cuda::max_outliers_bytes(dims, c.width);
  const DeviceBuffer outliers(max_out + kGuardBytes);
  const DeviceBuffer size(8);
  const DeviceBuffer scratch(lorenzo::cuda::encode_scratch_bytes(dims, c.width));
  EXPECT_TRUE(d_in.ok() && codes.ok() && outliers.ok() && size.ok() && scratch.ok());
  const cudaError_t err = lorenzo::cuda::encode(d_in.data() + in_offset, dims, c, bound, codes.data() + codes_offset,
                                                outliers.data(), size.as<uint64_t>(), scratch.data(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (err != cudaSuccess) return false;
  const uint64_t used = size.read<uint64_t>();
  EXPECT_LE(used, max_out);
  if (used > max_out) return false;
  out.codes = codes.download(codes_offset + 2 * n);
  out.codes.erase(out.codes.begin(), out.codes.begin() + static_cast<std::ptrdiff_t>(codes_offset));
  out.outliers = outliers.download(used);
  const bool guards = guard_intact(codes, codes_offset + 2 * n) && guard_intact(outliers, max_out);
  EXPECT_TRUE(guards) << "write past the end";
  return guards;
}

// GPU decode; returns the status word (~0 when a call failed). codes_offset
// and out_offset place the codes and the output that many bytes past an
// allocation's start.
uint32_t gpu_decode(const Bytes& codes, const Bytes& outliers, const Dims& dims, const lorenzo::Config& c,
                    Bytes& out, size_t codes_offset = 0, size_t out_offset = 0) {
  const size_t n = product(dims);
  Bytes placed(codes_offset, 0xA5);
  placed.insert(placed.end(), codes.begin(), codes.end());
  const DeviceBuffer d_codes = testing::to_device(placed);
  const DeviceBuffer d_outliers = testing::to_device(outliers);
  const DeviceBuffer d_out(out_offset + n * c.width + kGuardBytes);
  const DeviceBuffer status(4);
  const DeviceBuffer scratch(lorenzo::cuda::decode_scratch_bytes(dims, c.width, outliers.size()));
  EXPECT_TRUE(d_codes.ok() && d_outliers.ok() && d_out.ok() && status.ok() && scratch.ok());
  const cudaError_t err =
      lorenzo::cuda::decode(d_codes.data() + codes_offset, d_outliers.data(), outliers.size(), dims, c,
                            d_out.data() + out_offset, status.as<uint32_t>(), scratch.data(), nullptr);
  EXPECT_EQ(err, cudaSuccess) << cudaGetErrorString(err);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (err != cudaSuccess) return ~0u;
  EXPECT_TRUE(guard_intact(d_out, out_offset + n * c.width)) << "write past the end";
  out = d_out.download(out_offset + n * c.width);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(out_offset));
  return status.read<uint32_t>();
}

// GPU streams == CPU streams; GPU decode of them == CPU decode. Returns false on a mismatch.
bool check_case(const Bytes& in, const Dims& dims, const lorenzo::Config& c, double bound, const std::string& what) {
  lorenzo::Streams cpu, gpu;
  lorenzo::encode(in, dims, c, bound, cpu);
  if (!gpu_encode(in, dims, c, bound, gpu)) return false;
  const bool same_codes = gpu.codes == cpu.codes;
  const bool same_outliers = gpu.outliers == cpu.outliers;
  EXPECT_TRUE(same_codes) << what << ": codes differ";
  EXPECT_TRUE(same_outliers) << what << ": outliers differ (" << gpu.outliers.size() << " vs "
                             << cpu.outliers.size() << " bytes)";
  Bytes expected, got;
  lorenzo::decode(cpu.codes, cpu.outliers, dims, c, expected);
  const uint32_t status = gpu_decode(cpu.codes, cpu.outliers, dims, c, got);
  EXPECT_EQ(status, 0u) << what;
  EXPECT_TRUE(got == expected) << what << ": decoded bytes differ";
  return same_codes && same_outliers && status == 0 && got == expected;
}

// ---- real fields -------------------------------------------------------------

using testing::RealField;
using testing::real_fields;

template <typename T>
void sweep_fields() {
  for (const RealField& f : real_fields()) {
    if (f.f64 && sizeof(T) == 4) continue;
    const std::vector<T> v = testing::field_values<T>(f);
    ASSERT_EQ(v.size(), product(f.dims)) << f.name;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (T x : v)
      if (std::isfinite(x)) {
        lo = std::min(lo, static_cast<double>(x));
        hi = std::max(hi, static_cast<double>(x));
      }
    const double range = hi > lo ? hi - lo : 1;
    const Bytes in = to_bytes(v);
    for (double noa : {1e-2, 1e-4, 1e-6}) {
      for (uint32_t radius : {32768u, 512u, 8u, 1u}) {
        const double bound = noa * range;
        const std::string what = f.name + " noa " + std::to_string(noa) + " R " + std::to_string(radius);
        if (!check_case(in, f.dims, make_config<T>(bound, radius), bound, what)) return;
      }
    }
    const double bound = 1e-3 * range;
    if (!check_case(in, {v.size()}, make_config<T>(bound, 512), bound, f.name + " as 1-D")) return;
    if (f.dims.size() == 3 &&
        !check_case(in, {f.dims[0] * f.dims[1], f.dims[2]}, make_config<T>(bound, 512), bound, f.name + " as 2-D"))
      return;
  }
}

TEST(LorenzoCuda, RealFieldsFloat32SameStreamsAndDecode) {
  FZ_SKIP_WITHOUT_CUDA();
  sweep_fields<float>();
}
TEST(LorenzoCuda, RealFieldsFloat64SameStreamsAndDecode) {
  FZ_SKIP_WITHOUT_CUDA();
  sweep_fields<double>();
}

// ---- odd shapes and specials -------------------------------------------------

// Smooth runs with NaN, +-Inf, +-0, denormals, the first normals, the fill value,
// ties, huge values and spikes.
template <typename T>
std::vector<T> adversarial(size_t n, T eb2, T fill, std::mt19937_64& rng, unsigned odds) {
  using U = BitsOf<T>;
  constexpr int kDigits = std::numeric_limits<T>::digits;
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<T> v(n);
  const double base = unit(rng) * 1e3, slope = unit(rng) * 10;
  for (size_t i = 0; i < n; ++i) {
    const double smooth = (base + slope * std::sin(static_cast<double>(i) * 0.05)) * static_cast<double>(eb2);
    v[i] = static_cast<T>(smooth);
    if (rng() % odds != 0) continue;
    const double k = std::ldexp(1.0, static_cast<int>(rng() % (kDigits + 2)));
    const double sign = rng() % 2 ? 1.0 : -1.0;
    switch (rng() % 13) {
      case 0: v[i] = std::numeric_limits<T>::quiet_NaN(); break;
      case 1: v[i] = from_bits<T>(static_cast<U>(rng())); break;
      case 2: v[i] = static_cast<T>(sign * std::numeric_limits<T>::infinity()); break;
      case 3: v[i] = rng() % 2 ? T(0) : T(-0.0); break;
      case 4: v[i] = static_cast<T>(sign) * std::numeric_limits<T>::denorm_min() * static_cast<T>(rng() % 1000 + 1); break;
      case 5: v[i] = static_cast<T>(sign) * std::numeric_limits<T>::min() * static_cast<T>(rng() % 4 + 1); break;
      case 6: v[i] = fill; break;
      case 7: v[i] = static_cast<T>(sign * (std::floor(k * (unit(rng) + 1)) + 0.5)) * eb2; break;
      case 8: v[i] = std::nextafter(static_cast<T>(sign * k) * eb2, static_cast<T>(rng() % 2 ? 0 : 1e30)); break;
      case 9: v[i] = static_cast<T>(sign * unit(rng)) * std::numeric_limits<T>::max(); break;
      case 10: v[i] = static_cast<T>(smooth + sign * k * static_cast<double>(eb2)); break;
      case 11: v[i] = from_bits<T>(bits_of(v[i]) ^ static_cast<U>(1 + rng() % 3)); break;
      default: v[i] = static_cast<T>(unit(rng) * std::pow(10.0, static_cast<double>(rng() % 40) - 20)); break;
    }
  }
  return v;
}

template <typename T>
void sweep_shapes(uint64_t seed) {
  const std::vector<Dims> shapes = {{1},         {1, 1, 1},     {3, 1, 70000}, {2, 40000}, {40000, 2},
                                    {9, 90, 91}, {70001},       {5, 7, 11},    {2, 3},     {1, 300, 1},
                                    {0},         {3, 0, 5},     {64, 1, 200},  {2, 2, 2},  {200, 3, 17}};
  std::mt19937_64 rng(seed);
  for (const Dims& dims : shapes) {
    for (int run = 0; run < 4; ++run) {
      const double user_bound = std::pow(10.0, -static_cast<double>(rng() % (sizeof(T) == 4 ? 8 : 16)));
      const uint32_t radii[] = {1, 2, 4, 512, 32768};
      lorenzo::Config c = make_config<T>(user_bound, radii[rng() % 5]);
      const T eb2 = static_cast<T>(c.eb) * 2;
      const T fill = rng() % 2 ? static_cast<T>(-1e34) : from_bits<T>(static_cast<BitsOf<T>>(rng()));
      c.has_fill = run % 2 == 1;
      c.fill_bits = c.has_fill ? bits_of(fill) : 0;
      const unsigned odds = run == 0 ? 2 : run == 1 ? 16 : 300;
      const Bytes in = to_bytes(adversarial<T>(product(dims), eb2, fill, rng, odds));
      std::string what = "dims";
      for (size_t e : dims) what += " " + std::to_string(e);
      what += " eb " + std::to_string(c.eb) + " R " + std::to_string(c.radius) + " fill " +
              std::to_string(c.has_fill) + " run " + std::to_string(run);
      if (!check_case(in, dims, c, user_bound, what)) return;
    }
  }
}

// Per-tile counts of up to 4096 tiles (8 Mi elements) are scanned by one block
// in one launch, more by cub's device-wide scan: both sides of that line, with
// the CPU's streams and decode.
TEST(LorenzoCuda, OneBlockAndDeviceWideTileScansMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes field = testing::read_field("wmag91.float");
  const size_t plane = 256 * 256;
  for (size_t nz : {size_t{128}, size_t{130}}) {  // 4096 and 4160 tiles of 2048 elements
    std::vector<float> v(nz * plane);
    for (size_t i = 0; i < v.size(); ++i) std::memcpy(&v[i], field.data() + 4 * (i % (field.size() / 4)), 4);
    const double bound = 1e-3;
    EXPECT_TRUE(check_case(to_bytes(v), {nz, 256, 256}, make_config<float>(bound, 512), bound,
                           std::to_string(nz) + " planes"));
  }
}

// Rows of 32 to 512 float (256 double) elements are coded by the one-pass
// front (fused_codes): every row length class (one to sixteen elements a lane,
// rows that end inside a lane and inside a 16-byte vector), blocks of rows
// that end past the last row, many plane segments, rows just outside the
// range (the two-pass path), and inputs and codes misaligned for vectors and
// for words, with records of every kind dense enough to share bitmap words
// and tiles, against the CPU's streams.
template <typename T>
void sweep_one_pass_front(const std::vector<Dims>& shapes) {
  std::mt19937_64 rng(sizeof(T) * 7);
  const size_t offsets[3][2] = {{0, 0}, {sizeof(T), 2}, {1, 1}};
  for (const Dims& dims : shapes)
    for (unsigned odds : {3u, 40u}) {
      for (const auto& offset : offsets) {
        lorenzo::Config c = make_config<T>(1e-3, odds == 3 ? 4 : 512, true, bits_of(static_cast<T>(-1e34)));
        const Bytes in =
            to_bytes(adversarial<T>(product(dims), static_cast<T>(c.eb) * 2, static_cast<T>(-1e34), rng, odds));
        std::string what = "dims";
        for (size_t e : dims) what += " " + std::to_string(e);
        what += " odds " + std::to_string(odds) + " offsets " + std::to_string(offset[0]) + "/" +
                std::to_string(offset[1]);
        lorenzo::Streams cpu, gpu;
        lorenzo::encode(in, dims, c, 1e-3, cpu);
        ASSERT_TRUE(gpu_encode(in, dims, c, 1e-3, gpu, offset[0], offset[1])) << what;
        ASSERT_TRUE(gpu.codes == cpu.codes) << what << ": codes differ";
        ASSERT_TRUE(gpu.outliers == cpu.outliers) << what << ": outliers differ (" << gpu.outliers.size() << " vs "
                                                  << cpu.outliers.size() << " bytes)";
        // And back: in the output, beside it (output misaligned), from codes
        // misaligned for vectors (offset 2) and for words (offset 1: the
        // general path).
        Bytes expected, got;
        lorenzo::decode(cpu.codes, cpu.outliers, dims, c, expected);
        ASSERT_EQ(gpu_decode(cpu.codes, cpu.outliers, dims, c, got, offset[1], offset[0]), 0u) << what;
        ASSERT_TRUE(got == expected) << what << ": decoded bytes differ";
      }
    }
}

TEST(LorenzoCuda, OnePassFrontMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  sweep_one_pass_front<float>({{3, 20, 512}, {2, 9, 500}, {40, 17, 96}, {70, 33, 32}, {6, 3, 33}, {1, 1, 64},
                               {1, 17, 512}, {300, 9, 64}, {2, 5, 484}, {9, 8, 511}, {4, 3, 513}, {5, 4, 31}});
  sweep_one_pass_front<double>({{5, 3, 256}, {5, 3, 257}, {4, 20, 200}, {40, 9, 64}, {3, 7, 33}, {2, 2, 250}});
}

// Chunks of at most 4096 elements decode in one launch (decode_small; up to
// 1024 elements with 4 per thread, above with 16), larger ones on the general
// path: both sides of each line, in shapes whose long axis
// is x, y or z (the one-launch path scans every axis as a block), with many
// outliers of every kind, against the CPU's bytes.
template <typename T>
void sweep_small_decode_line() {
  const std::vector<Dims> shapes = {{4096},      {4097},    {1, 4096}, {4096, 1}, {16, 16, 16}, {17, 241},
                                    {1, 4096, 1}, {4096, 1, 1}, {2, 2048}, {64, 64},  {3, 1365},    {1, 1, 4097},
                                    {4, 1024, 1}, {1025, 4},  {1024},   {1025},    {8, 128},  {1025, 1},
                                    {4, 16, 16},  {5, 205},   {1, 1024, 1}};
  std::mt19937_64 rng(sizeof(T));
  for (const Dims& dims : shapes)
    for (unsigned odds : {3u, 40u}) {
      lorenzo::Config c = make_config<T>(1e-3, odds == 3 ? 4 : 512, true, bits_of(static_cast<T>(-1e34)));
      const Bytes in = to_bytes(adversarial<T>(product(dims), static_cast<T>(c.eb) * 2, static_cast<T>(-1e34), rng, odds));
      std::string what = "dims";
      for (size_t e : dims) what += " " + std::to_string(e);
      if (!check_case(in, dims, c, 1e-3, what + " odds " + std::to_string(odds))) return;
    }
}

TEST(LorenzoCuda, OneLaunchSmallDecodeAndGeneralPathMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  sweep_small_decode_line<float>();
  sweep_small_decode_line<double>();
}

// Rows of at most 1024 elements decode by tiles of 16 rows by depth
// segments (decode_rows_kernels_cuda.cuh): one strip and one segment; several
// strips, one segment; one strip, several segments; both, with partial last
// strips and segments; every row-length class (1 to 32 words a lane, the
// longest with double spilling and its shared memory opted in above 48 KiB);
// deltas stored in the outlier stream (radius 4) or none; the output beside
// the codes (misaligned) or in place. Against the CPU's bytes.
TEST(LorenzoCuda, TiledDecodeMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const std::vector<Dims> shapes = {{16, 64, 64},  {33, 64, 64},   {1024, 8, 8},  {1000, 16, 16}, {4099, 2, 3},
                                    {200, 3, 17},  {257, 32, 1024}, {20, 16, 64}, {20, 100, 33},  {600, 10, 40},
                                    {300, 70, 129}, {5000, 3, 1},   {40, 20, 1000}, {70, 41, 512}, {3, 700, 250}};
  std::mt19937_64 rng(11);
  for (const Dims& dims : shapes)
    for (int width : {4, 8})
      for (uint32_t radius : {4u, 32768u}) {
        std::string what = "dims";
        for (size_t e : dims) what += " " + std::to_string(e);
        what += " width " + std::to_string(width) + " R " + std::to_string(radius);
        Bytes in;
        lorenzo::Config c;
        if (width == 4) {
          c = make_config<float>(1e-3, radius, true, bits_of(-1e34f));
          in = to_bytes(adversarial<float>(product(dims), static_cast<float>(c.eb) * 2, -1e34f, rng, 50));
        } else {
          c = make_config<double>(1e-6, radius, true, bits_of(-1e34));
          in = to_bytes(adversarial<double>(product(dims), c.eb * 2, -1e34, rng, 50));
        }
        if (!check_case(in, dims, c, width == 4 ? 1e-3 : 1e-6, what)) return;
        lorenzo::Streams cpu;
        lorenzo::encode(in, dims, c, width == 4 ? 1e-3 : 1e-6, cpu);
        Bytes expected, got;
        lorenzo::decode(cpu.codes, cpu.outliers, dims, c, expected);
        ASSERT_EQ(gpu_decode(cpu.codes, cpu.outliers, dims, c, got, 0, 4), 0u) << what << " output misaligned";
        ASSERT_TRUE(got == expected) << what << " output misaligned: decoded bytes differ";
      }
}

TEST(LorenzoCuda, OddShapesAndSpecialsFloat32) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint64_t seed : {1u, 2u}) sweep_shapes<float>(seed);
}
TEST(LorenzoCuda, OddShapesAndSpecialsFloat64) {
  FZ_SKIP_WITHOUT_CUDA();
  for (uint64_t seed : {1u, 2u}) sweep_shapes<double>(seed);
}

TEST(LorenzoCuda, DeltasWrapAndPrefixSumsAreExact) {
  FZ_SKIP_WITHOUT_CUDA();
  // Values near +-PMAX side by side: deltas up to 8 * PMAX, all outliers.
  for (const Dims& dims : std::vector<Dims>{{4000}, {60, 70}, {9, 20, 30}}) {
    const size_t n = product(dims);
    std::vector<float> f(n);
    std::vector<double> d(n);
    for (size_t i = 0; i < n; ++i) {
      const double s = (i * 2654435761u) % 3 == 0 ? 1 : -1;
      f[i] = static_cast<float>(s * 16777000.0);
      d[i] = s * 9.007199254740000e15;
    }
    EXPECT_TRUE(check_case(to_bytes(f), dims, make_config<float>(0.5, 1), 0.5, "float wrap"));
    EXPECT_TRUE(check_case(to_bytes(d), dims, make_config<double>(0.5, 32768), 0.5, "double wrap"));
  }
}

// ---- hostile streams -----------------------------------------------------------

bool cpu_rejects(const Bytes& codes, const Bytes& outliers, const Dims& dims, const lorenzo::Config& c,
                 Bytes& out) {
  try {
    lorenzo::decode(codes, outliers, dims, c, out);
    return false;
  } catch (const FormatError&) {
    return true;
  }
}

// The GPU's status is nonzero exactly where the CPU throws; accepted streams
// decode to the CPU's bytes.
void expect_same_verdict(const Bytes& codes, const Bytes& outliers, const Dims& dims, const lorenzo::Config& c,
                         const std::string& what) {
  if (codes.size() != 2 * product(dims)) return;  // the caller (engine) checks the code stream's size
  Bytes expected, got;
  const bool rejected = cpu_rejects(codes, outliers, dims, c, expected);
  const uint32_t status = gpu_decode(codes, outliers, dims, c, got);
  EXPECT_EQ(status != 0, rejected) << what << " status " << status;
  if (!rejected && status == 0) {
    EXPECT_TRUE(got == expected) << what;
  }
}

struct Sample {
  Dims dims;
  lorenzo::Config config;
  lorenzo::Streams streams;
};

Sample small_sample() {
  Sample s;
  s.dims = {4, 5};
  s.config.width = 4;
  s.config.eb = 0.5;
  s.config.radius = 4;
  s.config.has_fill = true;
  s.config.fill_bits = bits_of(-1e34f);
  const std::vector<float> x = {0,      1,   2,   3,  1000, -1e34f, 5, 6, 7, 8, std::numeric_limits<float>::infinity(),
                                -0.0f, 12,  13,  14, 15,    16,     17, 18, 500};
  lorenzo::encode(to_bytes(x), s.dims, s.config, 0.5, s.streams);
  return s;
}

TEST(LorenzoCuda, HostileStreamsGiveANonzeroStatus) {
  FZ_SKIP_WITHOUT_CUDA();
  const Sample s = small_sample();
  const Bytes& codes = s.streams.codes;
  const Bytes& outl = s.streams.outliers;
  {
    Bytes out;
    EXPECT_EQ(gpu_decode(codes, outl, s.dims, s.config, out), 0u);
  }
  const uint64_t n = load_le<uint64_t>(outl.data());
  ASSERT_GE(n, 4u);
  const size_t kinds = 24 + 4 * n;
  for (size_t cut = 0; cut < outl.size(); ++cut)
    expect_same_verdict(codes, Bytes(outl.begin(), outl.begin() + cut), s.dims, s.config, "truncated");
  {
    Bytes longer = outl;
    longer.push_back(0);
    expect_same_verdict(codes, longer, s.dims, s.config, "too long");
  }
  auto mutated = [&](auto&& change, const char* what, const lorenzo::Config& c) {
    Bytes cc = codes, o = outl;
    change(cc, o);
    Bytes ignored;
    EXPECT_TRUE(cpu_rejects(cc, o, s.dims, c, ignored)) << what;
    expect_same_verdict(cc, o, s.dims, c, what);
  };
  const lorenzo::Config& c = s.config;
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data(), load_le<uint64_t>(o.data()) + 1); }, "count", c);
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data() + 8, 0); }, "delta count", c);
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data() + 16, 99); }, "raw count", c);
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data(), ~uint64_t{0}); }, "huge count", c);
  mutated([](Bytes&, Bytes& o) { store_le<uint32_t>(o.data() + 24, 20); }, "index out of range", c);
  mutated([](Bytes&, Bytes& o) { store_le<uint32_t>(o.data() + 28, load_le<uint32_t>(o.data() + 24)); },
          "index repeated", c);
  mutated([&](Bytes&, Bytes& o) { o[kinds] = 0; }, "kind 0", c);
  mutated([&](Bytes&, Bytes& o) { o[kinds] = 8; }, "kind 8", c);
  mutated([&](Bytes&, Bytes& o) { o[kinds] ^= 4; }, "delta flag dropped", c);
  mutated([](Bytes& cc, Bytes&) { store_le<uint16_t>(cc.data(), 8); }, "code above 2R-1", c);
  {
    const uint32_t first = load_le<uint32_t>(outl.data() + 24);
    for (uint16_t code : {1, 7})
      mutated([&](Bytes& cc, Bytes&) { store_le<uint16_t>(cc.data() + 2 * first, code); }, "nonzero code at outlier",
              c);
  }
  mutated([](Bytes& cc, Bytes&) { store_le<uint16_t>(cc.data(), 7); }, "special moved off 0", c);
  const size_t delta_at = kinds + n;
  for (int32_t d : {0, 1, 3, -4})
    mutated([&](Bytes&, Bytes& o) { store_le<int32_t>(o.data() + delta_at, d); }, "non-canonical delta", c);
  mutated([&](Bytes&, Bytes& o) { store_le<int32_t>(o.data() + delta_at, 1 << 26); }, "out of range", c);
  {
    lorenzo::Config no_fill = c;
    no_fill.has_fill = false;
    no_fill.fill_bits = 0;
    mutated([](Bytes&, Bytes&) {}, "fill record without fill value", no_fill);
  }
}

TEST(LorenzoCuda, RandomDamageSameVerdictAsTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(7);
  // The small sample and a larger 3-D stream with many records (float64).
  const Sample small = small_sample();
  Sample large;
  large.dims = {5, 30, 41};
  large.config = make_config<double>(1e-3, 8, true, bits_of(-1e34));
  {
    const std::vector<double> v = adversarial<double>(product(large.dims), 2e-3, -1e34, rng, 8);
    lorenzo::encode(to_bytes(v), large.dims, large.config, 1e-3, large.streams);
  }
  // ... and a 3-D one of 4080 elements: the one-launch decode's size.
  Sample medium;
  medium.dims = {6, 20, 34};
  medium.config = make_config<float>(1e-3, 8, true, bits_of(-1e34f));
  {
    const std::vector<float> v = adversarial<float>(product(medium.dims), 2e-3f, -1e34f, rng, 8);
    lorenzo::encode(to_bytes(v), medium.dims, medium.config, 1e-3, medium.streams);
  }
  for (const Sample* s : std::vector<const Sample*>{&small, &medium, &large}) {
    for (int trial = 0; trial < 600; ++trial) {
      Bytes cc = s->streams.codes, o = s->streams.outliers;
      Bytes& target = trial % 2 ? cc : o;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < flips; ++k) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      if (trial % 7 == 0 && o.size() > 24) o.resize(24 + rng() % (o.size() - 24));
      expect_same_verdict(cc, o, s->dims, s->config, "trial " + std::to_string(trial));
      if (HasFailure()) return;
    }
  }
}

TEST(LorenzoCuda, RefusesBadArguments) {
  FZ_SKIP_WITHOUT_CUDA();
  lorenzo::Config c = make_config<float>(1e-3, 512);
  const DeviceBuffer buf(1 << 16);
  uint8_t* p = buf.data();
  auto* size = buf.as<uint64_t>();
  EXPECT_EQ(lorenzo::cuda::encode(p, {}, c, 1e-3, p, p, size, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(lorenzo::cuda::encode(p, {1, 2, 3, 4}, c, 1e-3, p, p, size, p, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(lorenzo::cuda::encode(p, {10}, c, 0, p, p, size, p, nullptr), cudaErrorInvalidValue);
  lorenzo::Config bad = c;
  bad.width = 2;
  EXPECT_EQ(lorenzo::cuda::encode(p, {10}, bad, 1e-3, p, p, size, p, nullptr), cudaErrorInvalidValue);
  bad = c;
  bad.radius = 0;
  EXPECT_EQ(lorenzo::cuda::decode(p, p, 24, {10}, bad, p, buf.as<uint32_t>(), p, nullptr), cudaErrorInvalidValue);
  bad = c;
  bad.eb = 0.1;  // not a float
  EXPECT_EQ(lorenzo::cuda::decode(p, p, 24, {10}, bad, p, buf.as<uint32_t>(), p, nullptr), cudaErrorInvalidValue);
  cudaGetLastError();
}

// Indication only (no threshold): device time of encode and decode on a smooth
// 3-D float32 field of 256^3 elements, buffers allocated once.
TEST(LorenzoCuda, ThroughputIndication) {
  FZ_SKIP_WITHOUT_CUDA();
  const Dims dims = {256, 256, 256};
  const size_t n = product(dims);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i % 256), y = static_cast<double>((i / 256) % 256),
                 z = static_cast<double>(i / 65536);
    v[i] = static_cast<float>(std::sin(x * 0.05) * std::cos(y * 0.03) + 0.01 * z);
  }
  const lorenzo::Config c = make_config<float>(1e-4, 512);
  const DeviceBuffer in = testing::to_device(to_bytes(v));
  const DeviceBuffer codes(2 * n), outliers(lorenzo::cuda::max_outliers_bytes(dims, 4)), size(8), status(4);
  const DeviceBuffer out(4 * n);
  const DeviceBuffer escratch(lorenzo::cuda::encode_scratch_bytes(dims, 4));
  ASSERT_TRUE(in.ok() && codes.ok() && outliers.ok() && out.ok() && escratch.ok());
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  float encode_ms = 1e30f, decode_ms = 1e30f;
  for (int rep = 0; rep < 3; ++rep) {
    cudaEventRecord(start);
    FZ_CUDA_OK(lorenzo::cuda::encode(in.data(), dims, c, 1e-4, codes.data(), outliers.data(), size.as<uint64_t>(),
                                     escratch.data(), nullptr));
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    encode_ms = std::min(encode_ms, ms);
  }
  const uint64_t used = size.read<uint64_t>();
  const DeviceBuffer dscratch(lorenzo::cuda::decode_scratch_bytes(dims, 4, used));
  ASSERT_TRUE(dscratch.ok());
  for (int rep = 0; rep < 3; ++rep) {
    cudaEventRecord(start);
    FZ_CUDA_OK(lorenzo::cuda::decode(codes.data(), outliers.data(), used, dims, c, out.data(),
                                     status.as<uint32_t>(), dscratch.data(), nullptr));
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    decode_ms = std::min(decode_ms, ms);
  }
  EXPECT_EQ(status.read<uint32_t>(), 0u);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double gb = 4.0 * static_cast<double>(n) / 1e9;
  std::printf("lorenzo cuda 256^3 f32: %llu records; encode %.3f ms (%.1f GB/s), decode %.3f ms (%.1f GB/s)\n",
              static_cast<unsigned long long>(load_le<uint64_t>(outliers.download(8).data())), encode_ms,
              gb / (encode_ms * 1e-3), decode_ms, gb / (decode_ms * 1e-3));
}

}  // namespace
}  // namespace fz
