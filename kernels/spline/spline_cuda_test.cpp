// SPLINE on the GPU: the CPU's streams, byte for byte (the three code groups
// and the side stream, both tunings, both code forms), for real fields,
// ragged shapes and special values; the CPU's decoded bytes from CPU
// streams; hostile streams are refused (a nonzero status, or
// cudaErrorInvalidValue for code streams of the wrong sizes) exactly where
// the CPU throws FormatError, and never a write past the output (skipped
// without a CUDA device). With coarse levels (spline.hpp) the same: the
// GPU's bytes the CPU's, each decoding the other's streams, hostile streams
// refused alike.
#include "spline/spline_cuda.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

spline::Config config_for(unsigned width, spline::Tuning tuning, unsigned code_bytes, uint32_t radius,
                          spline::CodeForm form = spline::CodeForm::kOffset) {
  spline::Config c;
  c.width = width;
  c.code_bytes = code_bytes;
  c.radius = radius;
  c.tuning = tuning;
  c.code_form = form;
  return c;
}

std::string describe(const Dims& dims, const spline::Config& c, double eb) {
  std::string s = "dims";
  for (size_t d : dims) s += " " + std::to_string(d);
  return s + ", width " + std::to_string(c.width) + ", code bytes " + std::to_string(c.code_bytes) + ", radius " +
         std::to_string(c.radius) + ", tuning " + std::to_string(static_cast<int>(c.tuning)) + ", code form " +
         std::to_string(static_cast<int>(c.code_form)) + ", eb " + std::to_string(eb);
}

// The GPU encoder's streams; guard bytes after every output must survive.
spline::Streams gpu_encode(const Bytes& in, const Dims& dims, const spline::Config& config, double eb,
                           const Bytes& fill_mask = {}) {
  spline::Streams streams;
  const auto group_bytes = spline::cuda::code_group_bytes(dims, config.code_bytes);
  const DeviceBuffer d_in = testing::to_device(in);
  const DeviceBuffer d_fill = testing::to_device(fill_mask);
  const DeviceBuffer codes0(group_bytes[0] + kGuardBytes), codes1(group_bytes[1] + kGuardBytes),
      codes2(group_bytes[2] + kGuardBytes);
  const DeviceBuffer* codes[spline::kCodeGroups] = {&codes0, &codes1, &codes2};
  const size_t side_capacity = spline::cuda::max_side_bytes(dims, config.width, config.coarse_levels);
  const DeviceBuffer side(side_capacity + kGuardBytes);
  const DeviceBuffer side_size(sizeof(uint64_t));
  const DeviceBuffer scratch(spline::cuda::encode_scratch_bytes(dims, config));
  EXPECT_TRUE(d_in.ok() && codes0.ok() && codes1.ok() && codes2.ok() && side.ok() && side_size.ok() && scratch.ok());
  const spline::cuda::CodeStreams code_streams = {{codes0.data(), codes1.data(), codes2.data()}};
  EXPECT_EQ(spline::cuda::encode(d_in.data(), fill_mask.empty() ? nullptr : d_fill.data(), dims, config, eb,
                                 code_streams, side.data(), side_size.as<uint64_t>(), scratch.data(), nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const uint64_t size = side_size.read<uint64_t>();
  EXPECT_LE(size, side_capacity);
  if (size > side_capacity) return streams;
  for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
    streams.codes[k] = codes[k]->download(group_bytes[k]);
    EXPECT_TRUE(guard_intact(*codes[k], group_bytes[k])) << "code group " << k;
  }
  streams.side = side.download(size);
  EXPECT_TRUE(guard_intact(side, side_capacity));
  return streams;
}

struct GpuDecoded {
  cudaError_t launch = cudaSuccess;  // cudaErrorInvalidValue for code streams of the wrong sizes
  uint32_t status = 0;
  Bytes out;
  bool refused() const { return launch != cudaSuccess || status != 0; }
};

// The GPU decode. Code streams of other sizes than code_group_bytes must be
// refused at the call (cudaErrorInvalidValue), as the CPU refuses them
// (FormatError); any other stream is launched and judged by the status.
GpuDecoded gpu_decode(const spline::Streams& streams, const Dims& dims, const spline::CodeFormat& format) {
  GpuDecoded result;
  const size_t bytes = element_count(dims) * format.width;
  const DeviceBuffer codes0 = testing::to_device(streams.codes[0]), codes1 = testing::to_device(streams.codes[1]),
                     codes2 = testing::to_device(streams.codes[2]);
  const DeviceBuffer d_side = testing::to_device(streams.side);
  const DeviceBuffer out(bytes + kGuardBytes);
  const DeviceBuffer status(sizeof(uint32_t), 0);
  const DeviceBuffer scratch(spline::cuda::decode_scratch_bytes(dims, format));
  EXPECT_TRUE(codes0.ok() && codes1.ok() && codes2.ok() && d_side.ok() && out.ok() && status.ok() && scratch.ok());
  const spline::cuda::ConstCodeStreams code_streams = {{codes0.data(), codes1.data(), codes2.data()}};
  const std::array<size_t, spline::kCodeGroups> sizes = {streams.codes[0].size(), streams.codes[1].size(),
                                                         streams.codes[2].size()};
  const bool sizes_match = sizes == spline::cuda::code_group_bytes(dims, format.code_bytes);
  result.launch = spline::cuda::decode(code_streams, sizes, d_side.data(), streams.side.size(), dims, format,
                                       out.data(), status.as<uint32_t>(), scratch.data(), nullptr);
  EXPECT_EQ(result.launch, sizes_match ? cudaSuccess : cudaErrorInvalidValue);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  result.status = status.read<uint32_t>();
  if (result.launch != cudaSuccess) {
    EXPECT_EQ(result.status, 0u) << "nothing launched, nothing reported";
  }
  result.out = out.download(bytes);
  EXPECT_TRUE(guard_intact(out, bytes));
  return result;
}

std::optional<Bytes> cpu_decode(const spline::Streams& streams, const Dims& dims, const spline::CodeFormat& format) {
  Bytes out;
  try {
    spline::decode(streams, dims, format, out, cpu_threads());
  } catch (const FormatError&) {
    return std::nullopt;
  }
  return out;
}

// GPU encode == CPU encode (every code group and the side stream; the code
// groups of the sizes the slow way gives), and the GPU decode of the CPU's
// streams == the CPU's decode.
void check_case(const Bytes& in, const Dims& dims, const spline::Config& config, double eb,
                const Bytes& fill_mask = {}) {
  SCOPED_TRACE(describe(dims, config, eb) + (fill_mask.empty() ? "" : ", fill mask"));
  spline::Streams cpu;
  spline::encode(in, fill_mask, dims, config, eb, cpu, cpu_threads());
  const CodePlaces places = code_places(dims);
  const auto group_bytes = spline::cuda::code_group_bytes(dims, config.code_bytes);
  for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
    EXPECT_EQ(group_bytes[k], places.size[k] * config.code_bytes) << "code group " << k;
    EXPECT_EQ(cpu.codes[k].size(), group_bytes[k]) << "code group " << k;
  }
  const spline::Streams gpu = gpu_encode(in, dims, config, eb, fill_mask);
  for (unsigned k = 0; k < spline::kCodeGroups; ++k) EXPECT_TRUE(gpu.codes[k] == cpu.codes[k]) << "code group " << k << " differs";
  EXPECT_TRUE(gpu.side == cpu.side) << "side streams differ: " << gpu.side.size() << " vs " << cpu.side.size()
                                    << " bytes";
  const spline::CodeFormat format = spline::format_of(config);
  const std::optional<Bytes> expected = cpu_decode(cpu, dims, format);
  ASSERT_TRUE(expected.has_value());
  EXPECT_EQ(expected->size(), in.size());
  const GpuDecoded decoded = gpu_decode(cpu, dims, format);
  EXPECT_EQ(decoded.launch, cudaSuccess);
  EXPECT_EQ(decoded.status, 0u);
  EXPECT_TRUE(decoded.out == *expected) << "decoded bytes differ";
  // And the CPU decodes the GPU's streams (the same bytes, unless they differ above).
  const std::optional<Bytes> from_gpu = cpu_decode(gpu, dims, format);
  ASSERT_TRUE(from_gpu.has_value()) << "the CPU refuses the GPU's streams";
  EXPECT_TRUE(*from_gpu == *expected) << "the CPU's decode of the GPU's streams differs";
}

// The same configs with coarse levels (spline.hpp, "Coarse levels").
spline::Config with_coarse(spline::Config c) {
  c.coarse_levels = true;
  c.compact_config = true;
  return c;
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
      check_case(in, field.dims, config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kSigned), relative * range);
      check_case(in, field.dims, config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kZigzag), relative * range);
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

// Fill masks (spline.hpp): land where a smooth function of the element
// index is high, and every 7th element besides, its values left at -1e10:
// the GPU codes the fill elements as the CPU does, tuning included.
template <typename T>
void check_fill_masks(const testing::RealField& field) {
  std::vector<T> values = testing::field_values<T>(field);
  const double range = value_range(values);
  Bytes mask((values.size() + 7) / 8, 0);
  for (size_t g = 0; g < values.size(); ++g)
    if (std::sin(double(g % 997) / 50.0) > 0.4 || g % 7 == 3) {
      mask[g / 8] = static_cast<uint8_t>(mask[g / 8] | (1u << (g % 8)));
      values[g] = T(-1e10);
    }
  const Bytes in = to_bytes(values);
  for (double relative : {1e-2, 1e-4})
    for (spline::Tuning tuning : kTunings) {
      SCOPED_TRACE(field.name);
      check_case(in, field.dims, config_for(sizeof(T), tuning, 2, 4096), relative * range, mask);
      check_case(in, field.dims, config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kSigned),
                 relative * range, mask);
    }
}

TEST(SplineCuda, FillMasksMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& field : testing::real_fields()) {
    if (field.f64) check_fill_masks<double>(field);
    else check_fill_masks<float>(field);
  }
  const Dims ragged = {3, 37, 70};
  const std::vector<float> smooth = smooth_field<float>(element_count(ragged), 3);
  Bytes mask((smooth.size() + 7) / 8, 0x5A);
  mask.back() &= static_cast<uint8_t>((1u << (smooth.size() % 8 == 0 ? 8 : smooth.size() % 8)) - 1);
  check_case(to_bytes(smooth), ragged, config_for(4, spline::Tuning::kRatioFirst, 2, 512), 1e-3, mask);
}

// More than 4096 tiles: the tuning's sample is capped at 256 tiles
// (spline_side_rules.hpp, sample_count) on both sides.
TEST(SplineCuda, CappedTuningSampleMatchesTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  const Dims dims = {3000000};
  ASSERT_EQ(spline::rules::sample_count(dims[0] / 256 + 1), spline::rules::kMaxSampleTiles);
  const Bytes in = to_bytes(smooth_field<float>(dims[0], 1));
  check_case(in, dims, config_for(4, spline::Tuning::kRatioFirst, 2, 4096), 1e-3);
  check_case(in, dims, config_for(4, spline::Tuning::kRatioFirst, 2, 32768, spline::CodeForm::kSigned), 1e-5);
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
        check_case(in, dims, config_for(sizeof(T), tuning, 1, 128, spline::CodeForm::kSigned), eb);
        check_case(in, dims, config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kSigned), eb);
        check_case(in, dims, config_for(sizeof(T), tuning, 1, 100, spline::CodeForm::kZigzag), eb);
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
        check_case(to_bytes(values), dims, config_for(sizeof(T), tuning, 2, 512, spline::CodeForm::kSigned), eb);
      }
    std::vector<T> all(values.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = specials[i % specials.size()];
    for (spline::Tuning tuning : kTunings) {
      check_case(to_bytes(all), dims, config_for(sizeof(T), tuning, 2, 512), 1e-3);
      check_case(to_bytes(all), dims, config_for(sizeof(T), tuning, 1, 128, spline::CodeForm::kSigned), 1e-3);
    }
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

// Coarse levels: real fields (as stored, and float32 ones as float64),
// ragged and tiny shapes, special values (at anchors too) and fill masks,
// both tunings, every code form.
template <typename T>
void check_coarse_field(const testing::RealField& field) {
  const std::vector<T> values = testing::field_values<T>(field);
  const Bytes in = to_bytes(values);
  const double range = value_range(values);
  for (double relative : {1e-2, 1e-3, 1e-4})
    for (spline::Tuning tuning : kTunings) {
      SCOPED_TRACE(field.name + ", coarse levels");
      check_case(in, field.dims, with_coarse(config_for(sizeof(T), tuning, 2, 4096)), relative * range);
      check_case(in, field.dims, with_coarse(config_for(sizeof(T), tuning, 1, 128)), relative * range);
      check_case(in, field.dims, with_coarse(config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kZigzag)),
                 relative * range);
    }
}

TEST(SplineCuda, CoarseLevelsRealFieldsMatchTheCpu) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const auto& field : testing::real_fields()) {
    if (field.f64) {
      check_coarse_field<double>(field);
    } else {
      check_coarse_field<float>(field);
      check_coarse_field<double>(field);
    }
  }
}

template <typename T>
void check_coarse_shapes() {
  for (const Dims& dims : ragged_shapes()) {
    const Bytes in = to_bytes(smooth_field<T>(element_count(dims), dims.size()));
    for (spline::Tuning tuning : kTunings)
      for (double eb : {1e-1, 1e-3, 1e-5}) {
        check_case(in, dims, with_coarse(config_for(sizeof(T), tuning, 2, 512)), eb);
        check_case(in, dims, with_coarse(config_for(sizeof(T), tuning, 1, 1)), eb);
        check_case(in, dims, with_coarse(config_for(sizeof(T), tuning, 1, 128, spline::CodeForm::kSigned)), eb);
      }
  }
  // Long 1-D chunks: anchor grids of 11719 points (14 coarse levels, all in
  // one block) and 39063 (16 levels; the finest two's passes wider than
  // kCoarseBlockPoints run as launches of their own, coarse_cuda.cuh).
  for (size_t n : {size_t{3000000}, size_t{10000000}}) {
    const Bytes in = to_bytes(smooth_field<T>(n, 1));
    check_case(in, Dims{n}, with_coarse(config_for(sizeof(T), spline::Tuning::kRatioFirst, 2, 4096)), 1e-3);
  }
}

TEST(SplineCuda, CoarseLevelsShapesFloat32) {
  FZ_SKIP_WITHOUT_CUDA();
  check_coarse_shapes<float>();
}
TEST(SplineCuda, CoarseLevelsShapesFloat64) {
  FZ_SKIP_WITHOUT_CUDA();
  check_coarse_shapes<double>();
}

template <typename T>
void check_coarse_specials() {
  const std::vector<T> specials = special_values<T>();
  for (const FieldWithSpecials<T>& field : fields_with_specials<T>()) {
    std::vector<T> values = field.values;
    for (spline::Tuning tuning : kTunings)
      for (double eb : {1e-2, 1e-6})
        check_case(to_bytes(values), field.dims, with_coarse(config_for(sizeof(T), tuning, 2, 512)), eb);
    // A special value at every anchor.
    const size_t tile = spline::rules::tile_size(static_cast<unsigned>(field.dims.size()));
    for (size_t g = 0, k = 0; g < values.size(); ++g) {
      size_t rest = g;
      bool anchor = true;
      for (size_t a = field.dims.size(); a-- > 0; rest /= field.dims[a]) anchor = anchor && (rest % field.dims[a]) % tile == 0;
      if (anchor) values[g] = specials[k++ % specials.size()];
    }
    check_case(to_bytes(values), field.dims, with_coarse(config_for(sizeof(T), spline::Tuning::kRatioFirst, 2, 512)),
               1e-3);
  }
}

TEST(SplineCuda, CoarseLevelsSpecialValues) {
  FZ_SKIP_WITHOUT_CUDA();
  check_coarse_specials<float>();
  check_coarse_specials<double>();
}

TEST(SplineCuda, CoarseLevelsFillMasks) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const Dims& dims : std::vector<Dims>{{60, 40, 70}, {300, 200}, {70000}}) {
    std::vector<float> values = smooth_field<float>(element_count(dims), 2);
    Bytes mask((values.size() + 7) / 8, 0);
    for (size_t g = 0; g < values.size(); ++g)
      if (g < values.size() / 3 || g % 7 == 3) {
        mask[g / 8] = static_cast<uint8_t>(mask[g / 8] | (1u << (g % 8)));
        values[g] = -1e10f;
      }
    for (spline::Tuning tuning : kTunings)
      check_case(to_bytes(values), dims, with_coarse(config_for(4, tuning, 2, 4096)), 1e-3, mask);
  }
}

TEST(SplineCuda, AlphaBetaAndMisalignedBuffers) {
  FZ_SKIP_WITHOUT_CUDA();
  // Unaligned input and stream buffers: every word goes through byte loads.
  const Dims dims{33, 40, 21};
  const std::vector<float> values = smooth_field<float>(element_count(dims), 5);
  Bytes shifted(1 + values.size() * 4);
  std::memcpy(shifted.data() + 1, values.data(), values.size() * 4);
  for (spline::CodeForm form : {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag}) {
    SCOPED_TRACE("code form " + std::to_string(static_cast<int>(form)));
    spline::Config config = config_for(4, spline::Tuning::kRatioFirst, 2, 300, form);
    config.alpha = 1.75;
    config.beta = 3;
    spline::Streams cpu;
    spline::encode(to_bytes(values), dims, config, 1e-3, cpu);
    const auto group_bytes = spline::cuda::code_group_bytes(dims, 2);
    const DeviceBuffer in = testing::to_device(shifted);
    const DeviceBuffer codes0(1 + group_bytes[0]), codes1(1 + group_bytes[1]), codes2(1 + group_bytes[2]);
    const DeviceBuffer side(1 + spline::cuda::max_side_bytes(dims, 4)), size(8);
    const DeviceBuffer scratch(spline::cuda::encode_scratch_bytes(dims, config));
    const spline::cuda::CodeStreams codes = {{codes0.data() + 1, codes1.data() + 1, codes2.data() + 1}};
    ASSERT_EQ(spline::cuda::encode(in.data() + 1, dims, config, 1e-3, codes, side.data() + 1, size.as<uint64_t>(),
                                   scratch.data(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(codes0.download(group_bytes[0], 1) == cpu.codes[0]);
    EXPECT_TRUE(codes1.download(group_bytes[1], 1) == cpu.codes[1]);
    EXPECT_TRUE(codes2.download(group_bytes[2], 1) == cpu.codes[2]);
    const uint64_t side_size = size.read<uint64_t>();
    EXPECT_TRUE(side.download(side_size, 1) == cpu.side);
    // And the decode from unaligned streams into an unaligned output.
    const spline::CodeFormat format = spline::format_of(config);
    const DeviceBuffer out(1 + values.size() * 4), status(sizeof(uint32_t), 0);
    const DeviceBuffer decode_scratch(spline::cuda::decode_scratch_bytes(dims, format));
    const spline::cuda::ConstCodeStreams const_codes = {{codes0.data() + 1, codes1.data() + 1, codes2.data() + 1}};
    const std::array<size_t, spline::kCodeGroups> sizes = {group_bytes[0], group_bytes[1], group_bytes[2]};
    ASSERT_EQ(spline::cuda::decode(const_codes, sizes, side.data() + 1, side_size, dims, format, out.data() + 1,
                                   status.as<uint32_t>(), decode_scratch.data(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(status.read<uint32_t>(), 0u);
    Bytes expected;
    spline::decode(cpu, dims, format, expected);
    EXPECT_TRUE(out.download(values.size() * 4, 1) == expected);
  }
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
// (up to NaN bits, above), or makes the CPU throw and the GPU refuse (a
// status bit, or cudaErrorInvalidValue for code streams of the wrong sizes).
void expect_same_verdict(const spline::Streams& streams, const Dims& dims, const spline::CodeFormat& format,
                         const std::string& what) {
  SCOPED_TRACE(what);
  const std::optional<Bytes> cpu = cpu_decode(streams, dims, format);
  const GpuDecoded gpu = gpu_decode(streams, dims, format);
  EXPECT_EQ(gpu.refused(), !cpu.has_value()) << "status " << gpu.status << ", launch " << gpu.launch;
  if (cpu.has_value() && !gpu.refused()) {
    EXPECT_TRUE(same_up_to_nan_bits(gpu.out, *cpu, format.width));
  }
}

struct HostileSample {
  Dims dims;
  spline::CodeFormat format;
  uint32_t radius;
  CodePlaces places;
  spline::Streams streams;
  size_t indices_at;
  size_t outliers;
};

HostileSample hostile_sample(const Dims& dims, unsigned width, unsigned code_bytes, spline::CodeForm form,
                             bool coarse) {
  HostileSample s{dims, {width, code_bytes, form, coarse}, code_bytes == 1 ? 64u : 512u, code_places(dims), {}, 0, 0};
  const size_t n = element_count(dims);
  Bytes in(n * width);
  for (size_t i = 0; i < n; ++i) {
    double v = std::sin(0.01 * i) + 0.001 * static_cast<double>(i % 7);
    if (i % 97 == 5) v = std::numeric_limits<double>::quiet_NaN();
    if (width == 4) store_le<float>(in.data() + 4 * i, static_cast<float>(v));
    else store_le<double>(in.data() + 8 * i, v);
  }
  spline::Config config = config_for(width, spline::Tuning::kRatioFirst, code_bytes, s.radius, form);
  if (coarse) config = with_coarse(config);
  spline::encode(in, dims, config, 1e-3, s.streams);
  spline::rules::Grid grid;
  spline::rules::grid_of(dims, grid);
  const auto layout = spline::rules::side_layout(grid.rank, width, spline::rules::stored_anchor_count(grid, coarse),
                                                 coarse ? spline::rules::coarse_level_count(grid) : 0);
  s.indices_at = layout.indices_at;
  s.outliers = load_le<uint64_t>(s.streams.side.data() + layout.count_at);
  return s;
}

TEST(SplineCuda, HostileStreamsSetTheStatusWhereTheCpuThrows) {
  FZ_SKIP_WITHOUT_CUDA();
  std::mt19937_64 rng(7);
  for (const Dims& dims : std::vector<Dims>{{20, 19, 33}, {70, 65}, {1000}})
    for (const bool coarse : {false, true})
    for (unsigned width : {4u, 8u})
      for (spline::CodeForm form : {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag}) {
        SCOPED_TRACE("width " + std::to_string(width) + ", code form " + std::to_string(static_cast<int>(form)) +
                     (coarse ? ", coarse levels" : ""));
        const HostileSample s = hostile_sample(dims, width, width == 4 ? 2 : 1, form, coarse);
        const spline::Streams& streams = s.streams;
        const Bytes& side = streams.side;
        const unsigned code_bytes = s.format.code_bytes;
        ASSERT_GT(s.outliers, 1u);
        auto verdict = [&](const spline::Streams& t, const std::string& what) {
          expect_same_verdict(t, dims, s.format, what);
        };
        auto with_side = [&](Bytes sd) {
          spline::Streams t = streams;
          t.side = std::move(sd);
          return t;
        };
        verdict(streams, "the stream itself");
        // Truncations (every length up to the outliers, then a few), one byte more.
        for (size_t length = 0; length < side.size(); length += length < s.indices_at + 16 ? 1 : 7)
          verdict(with_side(Bytes(side.begin(), side.begin() + length)), "side truncated to " + std::to_string(length));
        Bytes longer = side;
        longer.push_back(0);
        verdict(with_side(longer), "side one byte longer");
        // Each code stream a byte or a code shorter or longer, empty; a code
        // moved from one group to the next (the sum of the sizes right).
        for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
          for (size_t cut : {size_t{1}, size_t{code_bytes}, streams.codes[k].size()}) {
            spline::Streams t = streams;
            t.codes[k].resize(t.codes[k].size() - cut);
            verdict(t, "code group " + std::to_string(k) + " " + std::to_string(cut) + " bytes shorter");
          }
          spline::Streams t = streams;
          t.codes[k].push_back(0);
          verdict(t, "code group " + std::to_string(k) + " one byte longer");
          t = streams;
          const unsigned next = (k + 1) % spline::kCodeGroups;
          t.codes[next].insert(t.codes[next].end(), t.codes[k].end() - code_bytes, t.codes[k].end());
          t.codes[k].resize(t.codes[k].size() - code_bytes);
          verdict(t, "a code moved from group " + std::to_string(k) + " to " + std::to_string(next));
        }
        // Every header byte set to a few values.
        for (size_t at = 0; at < s.indices_at && at < 64; ++at)
          for (uint8_t value : {uint8_t{0}, uint8_t{1}, uint8_t{0x80}, uint8_t{0xFF}}) {
            Bytes changed = side;
            changed[at] = value;
            verdict(with_side(changed), "side byte " + std::to_string(at) + " = " + std::to_string(value));
          }
        // The outlier list: swapped, repeated, out of range, moved onto an anchor (index 0).
        auto set_index = [&](Bytes& sd, size_t k, uint32_t value) { store_le<uint32_t>(sd.data() + s.indices_at + 4 * k, value); };
        auto index = [&](size_t k) { return load_le<uint32_t>(side.data() + s.indices_at + 4 * k); };
        for (uint32_t value : {index(1), index(0) + 1, uint32_t(element_count(dims)), 0u, 0xFFFFFFFFu}) {
          Bytes changed = side;
          set_index(changed, 0, value);
          verdict(with_side(changed), "first index = " + std::to_string(value));
        }
        {
          Bytes changed = side;
          store_le<uint64_t>(changed.data() + s.indices_at - 8, s.outliers - 1);
          verdict(with_side(changed), "K one less");
        }
        // Codes (set in the offset form through the slow places): an
        // outlier's code nonzero, an anchor's nonzero, a code 0, 2R - 1, 2R,
        // 255, at points of every group.
        std::vector<size_t> points = {0, index(0), 1, element_count(dims) - 1};
        for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
          size_t g = 0;
          while (g < element_count(dims) && (s.places.group[g] != k || g == 0)) ++g;
          if (g < element_count(dims)) points.push_back(g);
        }
        const uint32_t two_r = 2 * s.radius;
        for (uint32_t value : {0u, 1u, s.radius, two_r - 1, two_r, 255u, 0xFFFFu}) {
          for (size_t g : points) {
            spline::Streams t = streams;
            set_code(t, s.places, s.format, s.radius, g, value);
            verdict(t, "code at " + std::to_string(g) + " = " + std::to_string(value));
          }
        }
        // Stored words as they are, whatever code they mean in this form.
        for (uint32_t word : {0u, 1u, s.radius - 1, s.radius, s.radius + 1, 0x80u, 0xC0u, 0xFE00u, 0xFFFFu}) {
          for (size_t g : points) {
            spline::Streams t = streams;
            set_stored(t.codes, s.places, code_bytes, g, word);
            verdict(t, "stored word at " + std::to_string(g) + " = " + std::to_string(word));
          }
        }
        // The other code form: refused by both (the anchors' words).
        {
          spline::CodeFormat other = s.format;
          other.code_form = form == spline::CodeForm::kSigned ? spline::CodeForm::kOffset : spline::CodeForm::kSigned;
          const std::optional<Bytes> cpu = cpu_decode(streams, dims, other);
          const GpuDecoded gpu = gpu_decode(streams, dims, other);
          EXPECT_FALSE(cpu.has_value()) << "decoded in the other code form";
          EXPECT_TRUE(gpu.refused()) << "decoded in the other code form";
        }
        // Random bit flips in any stream.
        for (int trial = 0; trial < 300; ++trial) {
          spline::Streams t = streams;
          const unsigned which = trial % 6;  // half the trials in a code stream, half in the side stream
          Bytes& target = which < spline::kCodeGroups ? t.codes[which] : t.side;
          const size_t flips = 1 + rng() % 3;
          for (size_t f = 0; f < flips; ++f) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          verdict(t, "bit flips, trial " + std::to_string(trial));
        }
      }
}

}  // namespace
}  // namespace fz
