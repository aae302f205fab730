// QUANTIZE on the GPU: encode gives the CPU's three streams byte for byte
// (real fields as float32 and float64, adversarial data with specials, fill
// values, huge values and ties, ABS bounds from huge down to a few smallest
// normals and below, REL bounds, the edge sizes); decode of the CPU's streams
// (ABS, NOA, REL, CONSTANT, LOSSLESS) gives the CPU's bytes; hostile streams
// get a nonzero status exactly where the CPU throws FormatError, and nothing is
// written past the output. Skipped without a CUDA device.
#include "quantize/quantize_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "quantize/quantize.hpp"

namespace fz {
namespace {

using quantize::Config;
using quantize::Method;
using quantize::Mode;
using quantize::Params;
using quantize::Streams;
using testing::DeviceBuffer;
using testing::kGuardBytes;
using testing::kGuardFill;

template <typename T>
using UintOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
UintOf<T> bits_of(T v) {
  UintOf<T> u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <typename T>
T from_bits(UintOf<T> u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <typename T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> as_values(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// "" when equal, else where they first differ.
std::string difference(const Bytes& gpu, const Bytes& cpu) {
  if (gpu.size() != cpu.size())
    return "sizes differ: gpu " + std::to_string(gpu.size()) + " cpu " + std::to_string(cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i)
    if (gpu[i] != cpu[i]) return "first difference at byte " + std::to_string(i);
  return "";
}

std::string describe(const Config& c, size_t bytes) {
  const char* mode = c.mode == Mode::kAbs ? "ABS" : c.mode == Mode::kNoa ? "NOA" : "REL";
  char buf[160];
  std::snprintf(buf, sizeof buf, "width %u %s bound %.17g fill %s bytes %zu", c.width, mode, c.bound,
                c.fill ? "yes" : "no", bytes);
  return buf;
}

Streams gpu_encode(const Bytes& in, const Config& config) {
  Streams s;
  const DeviceBuffer d_in = testing::to_device(in);
  const DeviceBuffer codes(in.size() + kGuardBytes, kGuardFill);
  const DeviceBuffer outliers(in.size() + kGuardBytes, kGuardFill);
  const DeviceBuffer params(quantize::kParamsBytes + kGuardBytes, kGuardFill);
  const DeviceBuffer sizes(2 * sizeof(uint64_t));
  const DeviceBuffer scratch(quantize::cuda::encode_scratch_bytes(in.size(), config.width));
  EXPECT_TRUE(d_in.ok() && codes.ok() && outliers.ok() && params.ok() && sizes.ok() && scratch.ok());
  EXPECT_EQ(quantize::cuda::encode(d_in.data(), in.size(), config, codes.data(), outliers.data(), params.data(),
                                   sizes.as<uint64_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const uint64_t codes_size = sizes.read<uint64_t>(0);
  const uint64_t outliers_size = sizes.read<uint64_t>(8);
  EXPECT_LE(codes_size, in.size());
  EXPECT_LE(outliers_size, in.size());
  if (codes_size > in.size() || outliers_size > in.size()) return s;
  EXPECT_TRUE(testing::guard_intact(codes, codes_size)) << "codes written past their length";
  EXPECT_TRUE(testing::guard_intact(outliers, outliers_size)) << "outliers written past their length";
  EXPECT_TRUE(testing::guard_intact(params, quantize::kParamsBytes)) << "params written past 40 bytes";
  s.codes = codes.download(codes_size);
  s.outliers = outliers.download(outliers_size);
  s.params = params.download(quantize::kParamsBytes);
  // The method announced up front is the one chosen.
  EXPECT_EQ(static_cast<unsigned>(quantize::cuda::encode_method(config)), s.params[3]);
  return s;
}

struct GpuDecoded {
  Bytes out;
  uint32_t status = 0;
};

GpuDecoded gpu_decode(const Bytes& codes, const Bytes& outliers, const Params& params) {
  GpuDecoded r;
  const size_t bytes = static_cast<size_t>(params.count) * params.width;
  // Each stream alone in its allocation, so that an over-read is likely to fault.
  const DeviceBuffer d_codes = testing::to_device(codes);
  const DeviceBuffer d_outliers = testing::to_device(outliers);
  const DeviceBuffer out(bytes + kGuardBytes, kGuardFill);
  const DeviceBuffer status(sizeof(uint32_t), 0xEE);
  const DeviceBuffer scratch(quantize::cuda::decode_scratch_bytes(params));
  EXPECT_EQ(quantize::cuda::decode(d_codes.data(), codes.size(), d_outliers.data(), outliers.size(), params,
                                   out.data(), status.as<uint32_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(testing::guard_intact(out, bytes)) << "wrote past the decoded size";
  r.status = status.read<uint32_t>();
  r.out = out.download(bytes);
  return r;
}

// The GPU's verdict on (codes, outliers, params) equals the CPU decoder's.
void expect_same_decode(const Bytes& codes, const Bytes& outliers, const Bytes& params_bytes,
                        const std::string& what) {
  SCOPED_TRACE(what);
  const Params params = quantize::read_params(params_bytes);
  bool cpu_refused = false;
  Bytes cpu_out;
  try {
    quantize::decode(codes, outliers, params_bytes, cpu_out, SIZE_MAX);
  } catch (const FormatError&) {
    cpu_refused = true;
  }
  const GpuDecoded gpu = gpu_decode(codes, outliers, params);
  if (cpu_refused) {
    EXPECT_NE(gpu.status, 0u) << "the CPU refuses these streams";
  } else {
    ASSERT_EQ(gpu.status, 0u) << "the CPU accepts these streams";
    EXPECT_EQ(difference(gpu.out, cpu_out), "") << "decode";
  }
}

// GPU encode == CPU encode, and GPU decode of the CPU streams == CPU decode.
void expect_matches_cpu(const Bytes& in, const Config& config, const std::string& what) {
  SCOPED_TRACE(what + " " + describe(config, in.size()));
  Streams cpu;
  quantize::encode(in, config, cpu);
  const Streams gpu = gpu_encode(in, config);
  ASSERT_EQ(difference(gpu.params, cpu.params), "") << "params";
  ASSERT_EQ(difference(gpu.codes, cpu.codes), "") << "codes";
  ASSERT_EQ(difference(gpu.outliers, cpu.outliers), "") << "outliers";
  expect_same_decode(cpu.codes, cpu.outliers, cpu.params, "decode of the CPU streams");
}

// NOA is the CPU's (the GPU encoder refuses it); its streams, CONSTANT and
// LOSSLESS included, must still decode on the GPU.
void expect_noa_decodes(const Bytes& in, unsigned width, double eb, std::optional<uint64_t> fill,
                        const std::string& what) {
  Config c;
  c.width = width;
  c.mode = Mode::kNoa;
  c.bound = eb;
  c.fill = fill;
  Streams cpu;
  quantize::encode(in, c, cpu);
  expect_same_decode(cpu.codes, cpu.outliers, cpu.params, what + " " + describe(c, in.size()));
}

template <typename T>
std::pair<double, double> finite_range(const Bytes& in) {
  double lo = 0, hi = 0;
  bool any = false;
  for (T x : as_values<T>(in)) {
    if (!std::isfinite(x)) continue;
    lo = any ? std::min<double>(lo, x) : x;
    hi = any ? std::max<double>(hi, x) : x;
    any = true;
  }
  return {lo, hi};
}

template <typename T>
void field_sweep(const Bytes& in, const std::string& name) {
  const auto [lo, hi] = finite_range<T>(in);
  const double range = hi - lo > 0 ? hi - lo : 1.0;
  Config c;
  c.width = sizeof(T);
  c.mode = Mode::kAbs;
  for (double rel : {1e-1, 1e-3, 1e-5, 1e-7}) {
    c.bound = rel * range;
    expect_matches_cpu(in, c, name);
  }
  c.mode = Mode::kRel;
  for (double eb : {1e-2, 1e-4, 1e-6}) {
    c.bound = eb;
    expect_matches_cpu(in, c, name);
  }
  expect_noa_decodes(in, sizeof(T), 1e-3, std::nullopt, name);
}

const std::vector<std::string> kFloatFields = {"vorticity.128_128_41", "vorticity.512_512", "wmag91.float",
                                               "999x999.float", "const32x32x59.float"};

Bytes float_field_as_double(const Bytes& f32) {
  const auto v = as_values<float>(f32);
  return as_bytes(std::vector<double>(v.begin(), v.end()));
}

TEST(QuantizeCuda, RealFloatFieldsMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& name : kFloatFields) field_sweep<float>(testing::read_field(name), name);
}

// Outlier counts of up to 4096 blocks (64 MiB) are scanned by one block in one
// launch, longer ones by cub's device-wide scan: both sides of that line.
TEST(QuantizeCuda, OneBlockAndDeviceWideOutlierScansMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes field = testing::read_field("wmag91.float");
  const auto values = as_values<float>(field);
  for (size_t blocks : {size_t{4096}, size_t{4097}}) {
    std::vector<float> v(blocks * (kBlockBytes / sizeof(float)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = values[i % values.size()];
    Config c;
    c.width = 4;
    c.mode = Mode::kAbs;
    c.bound = 1e-3;  // a tight bound: outliers in many blocks
    expect_matches_cpu(as_bytes(v), c, std::to_string(blocks) + " blocks");
  }
}

TEST(QuantizeCuda, RealFieldsAsDoubleMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  field_sweep<double>(testing::read_field("pressure.384_384.f64"), "pressure");
  for (const auto& name : kFloatFields) field_sweep<double>(float_field_as_double(testing::read_field(name)), name);
}

// Spikes, steps, noise, specials, extremes, exact ties of power-of-two bounds.
template <typename T>
std::vector<T> adversarial(size_t n, uint64_t seed, T fill) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  const T big = std::numeric_limits<T>::max();
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = (i / 97) % 11;
    T x;
    switch (kind) {
      case 0: x = static_cast<T>(std::sin(i * 0.01) * 10); break;
      case 1: x = static_cast<T>(normal(rng)); break;
      case 2: x = static_cast<T>((i / 13) % 2 ? 1000.0 : -3.5); break;
      case 3: x = i % 17 == 0 ? static_cast<T>(1e30) : T(0.5); break;
      case 4: x = static_cast<T>(big * (1 - 1e-3 * (rng() % 100) / 100.0)) * ((i & 1) ? 1 : -1); break;
      case 5: x = from_bits<T>(static_cast<UintOf<T>>(rng())); break;
      case 6: x = static_cast<T>(normal(rng) * std::numeric_limits<T>::min() * 8); break;
      case 7: x = static_cast<T>(std::ldexp(normal(rng), static_cast<int>(rng() % 200) - 100)); break;
      case 8: x = static_cast<T>((static_cast<double>(i % 1000) + 0.5) * 0.125) * ((i & 1) ? 1 : -1); break;
      case 9: x = std::nextafter(static_cast<T>(i % 64) * T(0.25), static_cast<T>(rng() % 2 ? 1e9 : -1e9)); break;
      default: x = static_cast<T>(i * 0.25); break;
    }
    v[i] = x;
  }
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::min() / 3, T(-0.0), T(0.0), big, -big,
                        from_bits<T>(static_cast<UintOf<T>>(~UintOf<T>{0})),
                        std::numeric_limits<T>::min(), -std::numeric_limits<T>::min(), fill};
  for (size_t i = 0; i < n; i += 29) v[i] = specials[(i / 29) % (sizeof specials / sizeof specials[0])];
  return v;
}

template <typename T>
void adversarial_sweep() {
  const T fill = T(-1e10);
  const auto fill_bits = static_cast<uint64_t>(bits_of(fill));
  const double tiny = std::numeric_limits<T>::min();
  const std::vector<double> abs_bounds = {1e300, 1e30, 1e3, 1.0, 0.25, 0.125, 1e-3, 1e-20,
                                          1e3 * tiny, 4 * tiny, 2 * tiny, tiny, tiny / 2, 1e-310};
  const std::vector<double> rel_bounds = {3.0, 1.0, 0.5, 1e-1, 1e-3, 1e-6, 1e-9, 1e-17, 1e-300};
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4095}, size_t{4097}, size_t{100003}}) {
    const Bytes in = as_bytes(adversarial<T>(n, n + 11, fill));
    for (std::optional<uint64_t> f : {std::optional<uint64_t>{}, std::optional<uint64_t>{fill_bits}}) {
      Config c;
      c.width = sizeof(T);
      c.fill = f;
      c.mode = Mode::kAbs;
      for (double b : abs_bounds) {
        c.bound = b;
        expect_matches_cpu(in, c, "adversarial");
      }
      c.mode = Mode::kRel;
      for (double b : rel_bounds) {
        c.bound = b;
        expect_matches_cpu(in, c, "adversarial");
      }
      expect_noa_decodes(in, sizeof(T), 1e-3, f, "adversarial");
    }
  }
  // Uniform arrays: specials only, -0, constants (NOA's CONSTANT and LOSSLESS).
  const size_t n = 20000;
  const std::vector<std::vector<T>> uniform = {
      std::vector<T>(n, T(3.25)), std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()),
      std::vector<T>(n, -std::numeric_limits<T>::infinity()), std::vector<T>(n, T(-0.0)), std::vector<T>(n, fill)};
  for (const auto& v : uniform) {
    const Bytes in = as_bytes(v);
    for (std::optional<uint64_t> f : {std::optional<uint64_t>{}, std::optional<uint64_t>{fill_bits}}) {
      Config c;
      c.width = sizeof(T);
      c.fill = f;
      for (Mode m : {Mode::kAbs, Mode::kRel}) {
        c.mode = m;
        c.bound = 1e-2;
        expect_matches_cpu(in, c, "uniform");
      }
      expect_noa_decodes(in, sizeof(T), 1e-2, f, "uniform");
    }
  }
}

TEST(QuantizeCuda, AdversarialFloatMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  adversarial_sweep<float>();
}

TEST(QuantizeCuda, AdversarialDoubleMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  adversarial_sweep<double>();
}

// Exact ties |x - x'| == bound for power-of-two bounds, and values just past
// bin edges (the neighbouring-bin retry), at every magnitude of the codes.
template <typename T>
void ties_and_edges() {
  std::mt19937_64 rng(99);
  for (int e : {-20, -3, 0, 5}) {
    const T eb = static_cast<T>(std::ldexp(1.0, e));
    std::vector<T> v(50000);
    for (size_t i = 0; i < v.size(); ++i) {
      const double k = static_cast<double>(static_cast<int64_t>(rng() % (uint64_t{1} << (i % 40))) -
                                           static_cast<int64_t>(rng() % 1000));
      T x = static_cast<T>((2 * k + 1) * static_cast<double>(eb));  // a bin edge: exactly a tie
      if (i % 3 == 1) x = std::nextafter(x, std::numeric_limits<T>::infinity());
      if (i % 3 == 2) x = std::nextafter(x, -std::numeric_limits<T>::infinity());
      v[i] = x;
    }
    Config c;
    c.width = sizeof(T);
    c.mode = Mode::kAbs;
    c.bound = static_cast<double>(eb);
    expect_matches_cpu(as_bytes(v), c, "ties");
    c.bound = std::nextafter(static_cast<double>(eb), 0.0);  // a bound just below the tie
    expect_matches_cpu(as_bytes(v), c, "ties, bound below");
  }
}

TEST(QuantizeCuda, TiesAndBinEdgesMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  ties_and_edges<float>();
  ties_and_edges<double>();
}

TEST(QuantizeCuda, RefusesWhatTheCpuRefusesAndNoa) {
  FZ_SKIP_WITHOUT_CUDA();
  const DeviceBuffer buf(4096);
  const DeviceBuffer sizes(16);
  const DeviceBuffer scratch(quantize::cuda::encode_scratch_bytes(4096, 4));
  auto refused = [&](const Config& c, size_t size) {
    return quantize::cuda::encode(buf.data(), size, c, buf.data(), buf.data(), buf.data(), sizes.as<uint64_t>(),
                                  scratch.data(), nullptr) == cudaErrorInvalidValue;
  };
  Config good;
  good.bound = 1e-3;
  Config c = good;
  c.width = 3;
  EXPECT_TRUE(refused(c, 12));
  c = good;
  c.mode = Mode::kNoa;
  EXPECT_TRUE(refused(c, 16));
  for (double b : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    c = good;
    c.bound = b;
    EXPECT_TRUE(refused(c, 16));
  }
  EXPECT_TRUE(refused(good, 6));
  c = good;
  c.fill = uint64_t{1} << 40;
  EXPECT_TRUE(refused(c, 16));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Streams damaged in every way the format allows checks for: the GPU says so
// (status != 0) exactly where the CPU throws, and decodes the CPU's bytes
// where it does not.
template <typename T>
void hostile_streams() {
  using U = UintOf<T>;
  std::mt19937_64 rng(7);
  std::vector<T> v(3 * 16384 / sizeof(T) + 123);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(std::sin(i * 0.001) * 100);
  for (size_t i = 0; i < v.size(); i += 777) v[i] = std::numeric_limits<T>::quiet_NaN();
  const Bytes in = as_bytes(v);
  for (Mode mode : {Mode::kAbs, Mode::kRel, Mode::kNoa}) {
    Config c;
    c.width = sizeof(T);
    c.mode = mode;
    c.bound = 1e-3;
    Streams s;
    quantize::encode(in, c, s);
    const std::string m = describe(c, in.size());
    expect_same_decode(s.codes, s.outliers, s.params, m + " intact");
    const size_t count = s.codes.size() / sizeof(T);
    // Codes out of range, first / middle / last element.
    const uint64_t max_zigzag = (uint64_t{1} << (8 * sizeof(T) - (mode == Mode::kRel ? 3 : 2))) - 1;
    for (size_t at : {size_t{0}, count / 2, count - 1}) {
      for (uint64_t code : {max_zigzag + 1, max_zigzag + 2, max_zigzag + 5, uint64_t{std::numeric_limits<U>::max()},
                            uint64_t{0x1234567}}) {
        Bytes codes = s.codes;
        store_le<U>(codes.data() + at * sizeof(T), static_cast<U>(code));
        // A zero code turned nonzero leaves one outlier too many: also try with it removed.
        expect_same_decode(codes, s.outliers, s.params, m + " code " + std::to_string(code) + " at " + std::to_string(at));
      }
    }
    // REL: codes whose Pw leaves the exponent range (large |b| within the code limit).
    if (mode == Mode::kRel) {
      for (uint64_t z : {uint64_t{1} << 20, uint64_t{1} << 24, max_zigzag, max_zigzag - 1}) {
        Bytes codes = s.codes;
        store_le<U>(codes.data() + 5 * sizeof(T), static_cast<U>(3 + (z << 1)));
        expect_same_decode(codes, s.outliers, s.params, m + " REL z " + std::to_string(z));
      }
    }
    // Outlier streams of the wrong length.
    if (s.outliers.size() >= sizeof(T)) {
      expect_same_decode(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - sizeof(T)), s.params, m + " one outlier short");
      expect_same_decode(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - 1), s.params, m + " outliers ragged");
    }
    {
      Bytes more = s.outliers;
      more.insert(more.end(), sizeof(T), 0x5A);
      expect_same_decode(s.codes, more, s.params, m + " one outlier too many");
    }
    expect_same_decode(Bytes(s.codes.begin(), s.codes.end() - sizeof(T)), s.outliers, s.params, m + " codes short");
    // A zero code where there was none: one outlier too few.
    {
      Bytes codes = s.codes;
      store_le<U>(codes.data() + 1 * sizeof(T), 0);
      expect_same_decode(codes, s.outliers, s.params, m + " extra zero code");
    }
    // Random codes (mostly small), with as many outliers as zeros or one off.
    for (int trial = 0; trial < 6; ++trial) {
      Bytes codes = s.codes;
      size_t zeros = 0;
      for (size_t i = 0; i < count; ++i) {
        U code = static_cast<U>(rng() % 64);
        if (trial >= 3 && rng() % 1000 == 0) code = static_cast<U>(rng());
        store_le<U>(codes.data() + i * sizeof(T), code);
        zeros += code == 0;
      }
      Bytes outliers((zeros + (trial % 3 == 2 ? 1 : 0)) * sizeof(T));
      for (auto& b : outliers) b = static_cast<uint8_t>(rng());
      expect_same_decode(codes, outliers, s.params, m + " random codes " + std::to_string(trial));
    }
  }
  // LOSSLESS streams with codes present or a short outlier stream.
  {
    Config c;
    c.width = sizeof(T);
    c.mode = Mode::kAbs;
    c.bound = 1e-320;
    Streams s;
    quantize::encode(in, c, s);
    ASSERT_EQ(s.params[3], static_cast<uint8_t>(Method::kLossless));
    expect_same_decode(s.codes, s.outliers, s.params, "lossless intact");
    expect_same_decode(Bytes(sizeof(T), 1), s.outliers, s.params, "lossless with codes");
    expect_same_decode(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - sizeof(T)), s.params, "lossless short");
  }
}

TEST(QuantizeCuda, HostileStreamsJudgedLikeTheCpuFloat) {
  FZ_SKIP_WITHOUT_CUDA();
  hostile_streams<float>();
}

TEST(QuantizeCuda, HostileStreamsJudgedLikeTheCpuDouble) {
  FZ_SKIP_WITHOUT_CUDA();
  hostile_streams<double>();
}

}  // namespace
}  // namespace fz
