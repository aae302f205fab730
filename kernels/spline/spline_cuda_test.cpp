// SPLINE on the GPU: the CPU's streams, byte for byte (codes and side stream,
// both tunings), for real fields, ragged shapes and special values; the CPU's
// decoded bytes from CPU streams; hostile streams give a nonzero status
// exactly where the CPU throws FormatError, and never a write past the
// output (skipped without a CUDA device).
#include "spline/spline_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>

#include "common/error.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/testing/spline_inputs.hpp"

namespace fz {
namespace {

using namespace spline::test_inputs;
using testing::DeviceBuffer;
using testing::guard_intact;
using testing::kGuardBytes;

const testing::ThreadExecutor& cpu_threads() {
  static const testing::ThreadExecutor exec(8);  // the CPU's bytes do not depend on it
  return exec;
}

spline::Config config_for(unsigned width, spline::Tuning tuning, unsigned code_bytes, uint32_t radius) {
  spline::Config c;
  c.width = width;
  c.code_bytes = code_bytes;
  c.radius = radius;
  c.tuning = tuning;
  return c;
}

std::string describe(const Dims& dims, const spline::Config& c, double eb) {
  std::string s = "dims";
  for (size_t d : dims) s += " " + std::to_string(d);
  return s + ", width " + std::to_string(c.width) + ", code bytes " + std::to_string(c.code_bytes) + ", radius " +
         std::to_string(c.radius) + ", tuning " + std::to_string(static_cast<int>(c.tuning)) + ", eb " +
         std::to_string(eb);
}

// The GPU encoder's streams; guard bytes after both outputs must survive.
spline::Streams gpu_encode(const Bytes& in, const Dims& dims, const spline::Config& config, double eb) {
  spline::Streams streams;
  const size_t n = element_count(dims);
  const DeviceBuffer d_in = testing::to_device(in);
  const DeviceBuffer codes(n * config.code_bytes + kGuardBytes);
  const size_t side_capacity = spline::cuda::max_side_bytes(dims, config.width);
  const DeviceBuffer side(side_capacity + kGuardBytes);
  const DeviceBuffer side_size(sizeof(uint64_t));
  const DeviceBuffer scratch(spline::cuda::encode_scratch_bytes(dims, config.width));
  EXPECT_TRUE(d_in.ok() && codes.ok() && side.ok() && side_size.ok() && scratch.ok());
  EXPECT_EQ(spline::cuda::encode(d_in.data(), dims, config, eb, codes.data(), side.data(), side_size.as<uint64_t>(),
                                 scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const uint64_t size = side_size.read<uint64_t>();
  EXPECT_LE(size, side_capacity);
  if (size > side_capacity) return streams;
  streams.codes = codes.download(n * config.code_bytes);
  streams.side = side.download(size);
  EXPECT_TRUE(guard_intact(codes, n * config.code_bytes));
  EXPECT_TRUE(guard_intact(side, side_capacity));
  return streams;
}

struct GpuDecoded {
  uint32_t status = 0;
  Bytes out;
};

GpuDecoded gpu_decode(const Bytes& codes, const Bytes& side, const Dims& dims, unsigned width, unsigned code_bytes) {
  GpuDecoded result;
  const size_t bytes = element_count(dims) * width;
  const DeviceBuffer d_codes = testing::to_device(codes);
  const DeviceBuffer d_side = testing::to_device(side);
  const DeviceBuffer out(bytes + kGuardBytes);
  const DeviceBuffer status(sizeof(uint32_t), 0);
  const DeviceBuffer scratch(spline::cuda::decode_scratch_bytes(dims, width));
  EXPECT_EQ(spline::cuda::decode(d_codes.data(), d_side.data(), side.size(), dims, width, code_bytes, out.data(),
                                 status.as<uint32_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  result.status = status.read<uint32_t>();
  result.out = out.download(bytes);
  EXPECT_TRUE(guard_intact(out, bytes));
  return result;
}

std::optional<Bytes> cpu_decode(const Bytes& codes, const Bytes& side, const Dims& dims, unsigned width,
                                unsigned code_bytes) {
  Bytes out;
  try {
    spline::decode(codes, side, dims, width, code_bytes, out, cpu_threads());
  } catch (const FormatError&) {
    return std::nullopt;
  }
  return out;
}

// GPU encode == CPU encode, and the GPU decode of the CPU's streams == the CPU's decode.
void check_case(const Bytes& in, const Dims& dims, const spline::Config& config, double eb) {
  SCOPED_TRACE(describe(dims, config, eb));
  spline::Streams cpu;
  spline::encode(in, dims, config, eb, cpu, cpu_threads());
  const spline::Streams gpu = gpu_encode(in, dims, config, eb);
  EXPECT_TRUE(gpu.codes == cpu.codes) << "codes differ";
  EXPECT_TRUE(gpu.side == cpu.side) << "side streams differ: " << gpu.side.size() << " vs " << cpu.side.size()
                                    << " bytes";
  const std::optional<Bytes> expected = cpu_decode(cpu.codes, cpu.side, dims, config.width, config.code_bytes);
  ASSERT_TRUE(expected.has_value());
  const GpuDecoded decoded = gpu_decode(cpu.codes, cpu.side, dims, config.width, config.code_bytes);
  EXPECT_EQ(decoded.status, 0u);
  EXPECT_TRUE(decoded.out == *expected) << "decoded bytes differ";
}

template <typename T>
double value_range(const std::vector<T>& values) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (T v : values)
    if (std::isfinite(v)) lo = std::min(lo, static_cast<double>(v)), hi = std::max(hi, static_cast<double>(v));
  return hi > lo ? hi - lo : 1;
}

const spline::Tuning kTunings[] = {spline::Tuning::kOff, spline::Tuning::kRatioFirst};

template <typename T>
void check_real_field(const testing::RealField& field) {
  const std::vector<T> values = testing::field_values<T>(field);
  const Bytes in = to_bytes(values);
  const double range = value_range(values);
  for (double relative : {1e-2, 1e-3, 1e-4, 1e-5})
    for (spline::Tuning tuning : kTunings) {
      SCOPED_TRACE(field.name);
      check_case(in, field.dims, config_for(sizeof(T), tuning, 2, 512), relative * range);
      check_case(in, field.dims, config_for(sizeof(T), tuning, 1, 128), relative * range);
    }
}

TEST(SplineCuda, RealFieldsMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& field : testing::real_fields()) {
    if (field.f64) check_real_field<double>(field);
    else check_real_field<float>(field);
  }
}

TEST(SplineCuda, RealFloat32FieldsAsFloat64MatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& field : testing::real_fields())
    if (!field.f64) check_real_field<double>(field);
}

template <typename T>
void check_shapes() {
  const std::vector<Dims> shapes = ragged_shapes();
  for (const Dims& dims : shapes) {
    const Bytes in = to_bytes(smooth_field<T>(element_count(dims), dims.size()));
    for (spline::Tuning tuning : kTunings)
      for (double eb : {1e-1, 1e-3, 1e-5}) {
        check_case(in, dims, config_for(sizeof(T), tuning, 2, 512), eb);
        check_case(in, dims, config_for(sizeof(T), tuning, 1, 128), eb);
        check_case(in, dims, config_for(sizeof(T), tuning, 1, 1), eb);
      }
  }
}

TEST(SplineCuda, RaggedAndTinyShapesFloat32) {
  FZ_SKIP_WITHOUT_CUDA();
  check_shapes<float>();
}
TEST(SplineCuda, RaggedAndTinyShapesFloat64) {
  FZ_SKIP_WITHOUT_CUDA();
  check_shapes<double>();
}

template <typename T>
void check_specials() {
  const std::vector<T> specials = special_values<T>();
  for (const FieldWithSpecials<T>& field : fields_with_specials<T>()) {
    const Dims& dims = field.dims;
    const std::vector<T>& values = field.values;
    for (spline::Tuning tuning : kTunings)
      for (double eb : {1e-2, 1e-6}) {
        check_case(to_bytes(values), dims, config_for(sizeof(T), tuning, 2, 512), eb);
        check_case(to_bytes(values), dims, config_for(sizeof(T), tuning, 1, 64), eb);
      }
    std::vector<T> all(values.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = specials[i % specials.size()];
    for (spline::Tuning tuning : kTunings) check_case(to_bytes(all), dims, config_for(sizeof(T), tuning, 2, 512), 1e-3);
  }
  // Denormals as ordinary values at a denormal-sized bound; bounds far out.
  std::vector<T> tiny(3000);
  for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = std::numeric_limits<T>::denorm_min() * static_cast<T>(i % 97);
  for (spline::Tuning tuning : kTunings)
    check_case(to_bytes(tiny), Dims{60, 50}, config_for(sizeof(T), tuning, 2, 512),
               static_cast<double>(std::numeric_limits<T>::denorm_min()) * 3);
  const Bytes smooth = to_bytes(smooth_field<T>(4000, 3));
  for (double eb : {1e300, 1e-310}) check_case(smooth, Dims{4000}, config_for(sizeof(T), spline::Tuning::kRatioFirst, 2, 512), eb);
}

TEST(SplineCuda, SpecialValuesFloat32) {
  FZ_SKIP_WITHOUT_CUDA();
  check_specials<float>();
}
TEST(SplineCuda, SpecialValuesFloat64) {
  FZ_SKIP_WITHOUT_CUDA();
  check_specials<double>();
}

TEST(SplineCuda, AlphaBetaAndMisalignedBuffers) {
  FZ_SKIP_WITHOUT_CUDA();
  // Unaligned input and stream buffers: every word goes through byte loads.
  const Dims dims{33, 40, 21};
  const std::vector<float> values = smooth_field<float>(element_count(dims), 5);
  Bytes shifted(1 + values.size() * 4);
  std::memcpy(shifted.data() + 1, values.data(), values.size() * 4);
  spline::Config config = config_for(4, spline::Tuning::kRatioFirst, 2, 300);
  config.alpha = 1.75;
  config.beta = 3;
  spline::Streams cpu;
  spline::encode(to_bytes(values), dims, config, 1e-3, cpu);
  const size_t n = element_count(dims);
  const DeviceBuffer in = testing::to_device(shifted);
  const DeviceBuffer codes(1 + 2 * n), side(1 + spline::cuda::max_side_bytes(dims, 4)), size(8);
  const DeviceBuffer scratch(spline::cuda::encode_scratch_bytes(dims, 4));
  ASSERT_EQ(spline::cuda::encode(in.data() + 1, dims, config, 1e-3, codes.data() + 1, side.data() + 1,
                                 size.as<uint64_t>(), scratch.data(), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(codes.download(2 * n, 1) == cpu.codes);
  EXPECT_TRUE(side.download(size.read<uint64_t>(), 1) == cpu.side);
}

// Equal bytes, except that a NaN may stand for a NaN of other bits: a hostile
// stream the CPU accepts can make x' = p + q * step overflow into inf - inf,
// and the NaN that arithmetic makes differs between x86 (sign set, the first
// operand's payload) and CUDA (one canonical NaN). Streams from the encoder
// never do (every accepted x' is within the bound of a finite x).
bool same_up_to_nan_bits(const Bytes& a, const Bytes& b, unsigned width) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i += width) {
    if (std::memcmp(a.data() + i, b.data() + i, width) == 0) continue;
    const bool both_nan = width == 4 ? std::isnan(load_le<float>(a.data() + i)) && std::isnan(load_le<float>(b.data() + i))
                                     : std::isnan(load_le<double>(a.data() + i)) && std::isnan(load_le<double>(b.data() + i));
    if (!both_nan) return false;
  }
  return true;
}

// The hostile streams: every one either decodes on both to the same bytes
// (up to NaN bits, above), or makes the CPU throw and the GPU set its status.
void expect_same_verdict(const Bytes& codes, const Bytes& side, const Dims& dims, unsigned width,
                         unsigned code_bytes, const std::string& what) {
  SCOPED_TRACE(what);
  const std::optional<Bytes> cpu = cpu_decode(codes, side, dims, width, code_bytes);
  const GpuDecoded gpu = gpu_decode(codes, side, dims, width, code_bytes);
  EXPECT_EQ(gpu.status != 0, !cpu.has_value()) << "status " << gpu.status;
  if (cpu.has_value() && gpu.status == 0) {
    EXPECT_TRUE(same_up_to_nan_bits(gpu.out, *cpu, width));
  }
}

struct HostileSample {
  Dims dims;
  unsigned width;
  unsigned code_bytes;
  spline::Streams streams;
  size_t indices_at;
  size_t outliers;
};

HostileSample hostile_sample(const Dims& dims, unsigned width, unsigned code_bytes) {
  HostileSample s{dims, width, code_bytes, {}, 0, 0};
  const size_t n = element_count(dims);
  Bytes in(n * width);
  for (size_t i = 0; i < n; ++i) {
    double v = std::sin(0.01 * i) + 0.001 * static_cast<double>(i % 7);
    if (i % 97 == 5) v = std::numeric_limits<double>::quiet_NaN();
    if (width == 4) store_le<float>(in.data() + 4 * i, static_cast<float>(v));
    else store_le<double>(in.data() + 8 * i, v);
  }
  spline::encode(in, dims, config_for(width, spline::Tuning::kRatioFirst, code_bytes, code_bytes == 1 ? 64 : 512),
                 1e-3, s.streams);
  spline::rules::Grid grid;
  spline::rules::grid_of(dims, grid);
  const auto layout = spline::rules::side_layout(grid.rank, width, grid.tile_count);
  s.indices_at = layout.indices_at;
  s.outliers = load_le<uint64_t>(s.streams.side.data() + layout.count_at);
  return s;
}

TEST(SplineCuda, HostileStreamsSetTheStatusWhereTheCpuThrows) {
  FZ_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(7);
  for (const Dims& dims : std::vector<Dims>{{20, 19, 33}, {70, 65}, {1000}}) {
    for (unsigned width : {4u, 8u}) {
      const HostileSample s = hostile_sample(dims, width, width == 4 ? 2 : 1);
      const Bytes& codes = s.streams.codes;
      const Bytes& side = s.streams.side;
      ASSERT_GT(s.outliers, 1u);
      auto verdict = [&](const Bytes& c, const Bytes& sd, const std::string& what) {
        expect_same_verdict(c, sd, dims, width, s.code_bytes, what);
      };
      verdict(codes, side, "the stream itself");
      // Truncations (every length up to the outliers, then a few), one byte more.
      for (size_t length = 0; length < side.size(); length += length < s.indices_at + 16 ? 1 : 7)
        verdict(codes, Bytes(side.begin(), side.begin() + length), "side truncated to " + std::to_string(length));
      Bytes longer = side;
      longer.push_back(0);
      verdict(codes, longer, "side one byte longer");
      // Every header byte set to a few values.
      for (size_t at = 0; at < s.indices_at && at < 64; ++at)
        for (uint8_t value : {uint8_t{0}, uint8_t{1}, uint8_t{0x80}, uint8_t{0xFF}}) {
          Bytes changed = side;
          changed[at] = value;
          verdict(codes, changed, "side byte " + std::to_string(at) + " = " + std::to_string(value));
        }
      // The outlier list: swapped, repeated, out of range, moved onto an anchor (index 0).
      auto set_index = [&](Bytes& sd, size_t k, uint32_t value) { store_le<uint32_t>(sd.data() + s.indices_at + 4 * k, value); };
      auto index = [&](size_t k) { return load_le<uint32_t>(side.data() + s.indices_at + 4 * k); };
      for (uint32_t value : {index(1), index(0) + 1, uint32_t(element_count(dims)), 0u, 0xFFFFFFFFu}) {
        Bytes changed = side;
        set_index(changed, 0, value);
        verdict(codes, changed, "first index = " + std::to_string(value));
      }
      {
        Bytes changed = side;
        store_le<uint64_t>(changed.data() + s.indices_at - 8, s.outliers - 1);
        verdict(codes, changed, "K one less");
      }
      // Codes: an outlier's code nonzero, an anchor's nonzero, a code 0 or 2R.
      for (uint32_t value : {0u, 1u, 2u * (s.code_bytes == 1 ? 64u : 512u) - 1, 2u * (s.code_bytes == 1 ? 64u : 512u), 255u}) {
        for (size_t g : {size_t{0}, size_t{index(0)}, size_t{1}, element_count(dims) - 1}) {
          Bytes changed = codes;
          if (s.code_bytes == 1) changed[g] = static_cast<uint8_t>(value);
          else store_le<uint16_t>(changed.data() + 2 * g, static_cast<uint16_t>(value));
          verdict(changed, side, "code at " + std::to_string(g) + " = " + std::to_string(value));
        }
      }
      // Random bit flips in either stream.
      for (int trial = 0; trial < 300; ++trial) {
        Bytes c = codes, sd = side;
        Bytes& target = trial % 3 == 0 ? c : sd;
        const size_t flips = 1 + rng() % 3;
        for (size_t f = 0; f < flips; ++f) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        verdict(c, sd, "bit flips, trial " + std::to_string(trial));
      }
    }
  }
}

}  // namespace
}  // namespace fz
