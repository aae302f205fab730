// filter/frame_check: the filter's and the batch readers' one check that a
// frame is a chunk of the dataset its stored cd_values describe (issue 28
// items 5 and 9): element type, preset, mode and bound agree, or an Error
// naming both; NOA's bound checked against the decoded values' range, with
// no false alarm on values near 0, fill values, float64 or big-endian data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cd_values.hpp"
#include "frame_check.hpp"
#include "fz/fz.hpp"

namespace fz::filter {
namespace {

std::vector<unsigned> stored_for(const Options& options, const DataType& dtype, uint32_t elements,
                                 const Bytes& fill = {}) {
  StoredParams p;
  p.user = from_options(options);
  p.dataset.dtype = dtype;
  p.dataset.hdf5_class = dtype.element_class == ElementClass::Float ? 1 : 0;
  p.dataset.hdf5_sign = dtype.element_class == ElementClass::Signed ? 1 : 0;
  if (dtype.element_class == ElementClass::Float) p.dataset.float_fields = ieee_fields(dtype.size);
  p.dataset.chunk_dims = {elements};
  p.dataset.first_filter = true;
  p.dataset.fill_value = fill;
  return encode_stored(p);
}

Options lossy(Preset preset, ErrorMode mode, double bound) {
  Options o;
  o.preset = preset;
  o.mode = mode;
  o.bound = bound;
  o.device = "cpu";
  return o;
}

std::vector<float> field(size_t n, float offset = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + 50.0f * std::sin(0.01f * static_cast<float>(i)) + 0.001f * (i % 97);
  return v;
}

// Decodes `frame` as the filter does: header check, decode, range check.
void read_as_filter(const std::vector<unsigned>& cd, const Bytes& frame, size_t bytes) {
  const FrameInfo info = inspect_header(frame.data(), frame.size());
  check_frame(cd.data(), cd.size(), info);
  Bytes out(bytes);
  Options cpu;
  cpu.device = "cpu";
  const size_t n = decompress_into(frame.data(), frame.size(), out.data(), out.size(), cpu);
  check_decoded(cd.data(), cd.size(), info, out.data(), n);
}

const Preset kLossy[] = {Preset::Pfpl, Preset::Fzgpu, Preset::Cusz, Preset::CuszHiTp, Preset::CuszHiCr};

TEST(FrameCheck, AgreementPassesEveryLossyPresetAndMode) {
  const std::vector<float> v = field(4096, 10);
  for (Preset preset : kLossy) {
    for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa}) {
      const Options o = lossy(preset, mode, mode == ErrorMode::Abs ? 0.05 : 1e-3);
      const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {v.size()}, o);
      EXPECT_NO_THROW(read_as_filter(stored_for(o, DataType::of<float>(), 4096), frame, v.size() * 4))
          << preset_name(preset) << " " << mode_name(mode);
    }
  }
  const Options rel = lossy(Preset::Pfpl, ErrorMode::Rel, 1e-3);
  const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {v.size()}, rel);
  EXPECT_NO_THROW(read_as_filter(stored_for(rel, DataType::of<float>(), 4096), frame, v.size() * 4));
}

TEST(FrameCheck, OtherElementTypeOfTheSameBytesIsRefused) {
  std::vector<int16_t> ints(200);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int16_t>(i);
  const Options lossless;
  const Bytes frame = compress(ints.data(), 400, DataType::of<int16_t>(), {200}, lossless);
  const std::vector<unsigned> cd = stored_for(lossless, DataType::of<float>(), 100);
  try {
    read_as_filter(cd, frame, 400);
    FAIL() << "an int16 frame was accepted for a float32 chunk";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frame holds 2-byte elements but the dataset's are 4 bytes"),
              std::string::npos) << e.what();
  }
  // Same size, other class: int32 in a float32 chunk.
  std::vector<int32_t> wide(100, 7);
  const Bytes wide_frame = compress(wide.data(), 400, DataType::of<int32_t>(), {100}, lossless);
  EXPECT_THROW(read_as_filter(cd, wide_frame, 400), Error);
}

std::string refusal(const std::vector<unsigned>& cd, const Bytes& frame, size_t bytes) {
  try {
    read_as_filter(cd, frame, bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FrameCheck, OtherParametersAreRefusedNamingBoth) {
  const std::vector<float> v = field(8192);
  const size_t bytes = v.size() * 4;
  const DataType f32 = DataType::of<float>();
  struct Case {
    Options written, stored;
  };
  std::vector<Case> cases = {
      {lossy(Preset::Fzgpu, ErrorMode::Abs, 0.1), lossy(Preset::Fzgpu, ErrorMode::Abs, 0.01)},
      {lossy(Preset::Pfpl, ErrorMode::Rel, 1e-2), lossy(Preset::Pfpl, ErrorMode::Rel, 1e-3)},
      {lossy(Preset::Pfpl, ErrorMode::Abs, 1e-3), lossy(Preset::Pfpl, ErrorMode::Rel, 1e-3)},
      {lossy(Preset::Cusz, ErrorMode::Noa, 1e-3), lossy(Preset::Fzgpu, ErrorMode::Noa, 1e-3)},
      {lossy(Preset::Cusz, ErrorMode::Abs, 1e-3), lossy(Preset::Cusz, ErrorMode::Noa, 1e-3)},
  };
  for (Preset preset : kLossy) {
    cases.push_back({lossy(preset, ErrorMode::Noa, 1e-2), lossy(preset, ErrorMode::Noa, 1e-5)});  // looser
    cases.push_back({lossy(preset, ErrorMode::Noa, 1e-5), lossy(preset, ErrorMode::Noa, 1e-2)});  // tighter
    cases.push_back({lossy(preset, ErrorMode::Noa, 2e-3), lossy(preset, ErrorMode::Noa, 1e-3)});  // 2x
  }
  for (const Case& c : cases) {
    const Bytes frame = compress(v.data(), bytes, f32, {v.size()}, c.written);
    const std::string why = refusal(stored_for(c.stored, f32, 8192), frame, bytes);
    EXPECT_NE(why.find("the dataset's cd_values say"), std::string::npos)
        << preset_name(c.written.preset) << " " << mode_name(c.written.mode) << " " << c.written.bound << " vs "
        << preset_name(c.stored.preset) << " " << mode_name(c.stored.mode) << " " << c.stored.bound << ": " << why;
  }
}

// Values the NOA range leaves out (+0.0, the fill value) and values near 0
// must not make a frame look looser or tighter than it is.
TEST(FrameCheck, NoaNoFalseAlarmNearZeroFillFloat64BigEndian) {
  const DataType f32 = DataType::of<float>();
  for (Preset preset : kLossy) {
    // All positive, far from 0, with +0.0 elements (left out of the range)
    // and tiny ones that may decode to +0.0 or near it.
    std::vector<float> v = field(4096, 200);
    for (size_t i = 0; i < v.size(); i += 101) v[i] = 0.0f;
    for (size_t i = 50; i < v.size(); i += 211) v[i] = 1e-6f;
    const Options o = lossy(preset, ErrorMode::Noa, 1e-3);
    Bytes frame = compress(v.data(), v.size() * 4, f32, {v.size()}, o);
    EXPECT_NO_THROW(read_as_filter(stored_for(o, f32, 4096), frame, v.size() * 4)) << preset_name(preset);
    // A fill value far outside the data, kept exact and out of the range.
    const float fill = -1e34f;
    for (size_t i = 7; i < v.size(); i += 13) v[i] = fill;
    Options with_fill = o;
    with_fill.fill_value.resize(4);
    std::memcpy(with_fill.fill_value.data(), &fill, 4);
    frame = compress(v.data(), v.size() * 4, f32, {v.size()}, with_fill);
    EXPECT_NO_THROW(read_as_filter(stored_for(o, f32, 4096, with_fill.fill_value), frame, v.size() * 4))
        << preset_name(preset);
  }
  // float64, and big-endian float32 (the scalar pass).
  std::vector<double> d(4096);
  for (size_t i = 0; i < d.size(); ++i) d[i] = 1e5 * std::cos(1e-3 * static_cast<double>(i));
  const Options o64 = lossy(Preset::CuszHiCr, ErrorMode::Noa, 1e-4);
  const Bytes frame64 = compress(d.data(), d.size() * 8, DataType::of<double>(), {d.size()}, o64);
  EXPECT_NO_THROW(read_as_filter(stored_for(o64, DataType::of<double>(), 4096), frame64, d.size() * 8));
  EXPECT_NE(refusal(stored_for(lossy(Preset::CuszHiCr, ErrorMode::Noa, 1e-2), DataType::of<double>(), 4096),
                    frame64, d.size() * 8).find("cd_values say"), std::string::npos);
  std::vector<float> v = field(4096, -3);
  std::vector<uint8_t> big(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    bits = __builtin_bswap32(bits);
    std::memcpy(big.data() + 4 * i, &bits, 4);
  }
  const DataType be{ElementClass::Float, 4, ByteOrder::Big};
  const Options obe = lossy(Preset::Fzgpu, ErrorMode::Noa, 1e-3);
  const Bytes frame_be = compress(big.data(), big.size(), be, {v.size()}, obe);
  EXPECT_NO_THROW(read_as_filter(stored_for(obe, be, 4096), frame_be, big.size()));
  EXPECT_NE(refusal(stored_for(lossy(Preset::Fzgpu, ErrorMode::Noa, 1e-1), be, 4096), frame_be, big.size())
                .find("cd_values say"), std::string::npos);
}

}  // namespace
}  // namespace fz::filter
