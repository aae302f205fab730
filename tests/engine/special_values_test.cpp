// Two special values at once (issue 28, item 1): HDF5's fill value (which pads
// edge chunks and never-written elements) and a missing value (netCDF
// missing_value, land). Both come back bit for bit, both stay out of NOA's
// range, for every lossy preset, mode and float type; a chunk with both gets
// two FILLMASK stages, a chunk with one gets the one-mask frame a single
// special value always gave; fz::chunk_bound states the same rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"
#include "value_range.hpp"

namespace fz {
namespace {

template <typename T>
Bytes element(T x) {
  Bytes b(sizeof(T));
  std::memcpy(b.data(), &x, sizeof(T));
  return b;
}

template <typename T>
uint64_t bits(T x) {
  uint64_t b = 0;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

size_t fill_masks(const Bytes& frame) {
  const FrameInfo info = inspect(frame.data(), frame.size());
  return static_cast<size_t>(std::count_if(info.stages.begin(), info.stages.end(),
                                           [](const StageInfo& s) { return s.name == "fillmask"; }));
}

std::vector<Preset> lossy_presets() {
  std::vector<Preset> out;
  for (const PresetInfo& p : preset_table())
    if (p.lossy && p.available) out.push_back(p.id);
  return out;
}

// A real field with a fill run (padding-like, every 91st row's tail) and
// missing-value "land" (a block of every plane).
template <typename T>
std::vector<T> field_with_specials(T fill, T missing, std::vector<uint64_t>& dims) {
  std::vector<T> v;
  if (sizeof(T) == 4) {
    const Bytes raw = testing::read_field("wmag91.float");
    std::vector<float> f(raw.size() / 4);
    std::memcpy(f.data(), raw.data(), raw.size());
    v.assign(f.begin(), f.end());
    dims = {91, 91, 91};
  } else {
    const Bytes raw = testing::read_field("pressure.384_384.f64");
    std::vector<double> f(raw.size() / 8);
    std::memcpy(f.data(), raw.data(), raw.size());
    v.assign(f.begin(), f.end());
    dims = {384, 384};
  }
  const size_t row = static_cast<size_t>(dims.back());
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % row >= row - 9) v[i] = fill;                   // like the padding of a ragged edge
    if ((i / row) % 40 < 12 && i % row < 30) v[i] = missing;  // land
  }
  return v;
}

template <typename T>
void check_two_special_values() {
  const T fill = T(9.96921e36), missing = T(-1e30);
  std::vector<uint64_t> dims;
  const std::vector<T> v = field_with_specials(fill, missing, dims);
  T lo = INFINITY, hi = -INFINITY;
  for (T x : v)
    if (x != fill && x != missing) lo = std::min(lo, x), hi = std::max(hi, x);
  const DataType dtype = DataType::of<T>();
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa}) {
      if (!find_preset(preset)->honours(mode)) continue;
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = mode == ErrorMode::Noa ? 1e-3 : 1e-3 * (double(hi) - double(lo));
      o.fill_value = element(fill);
      o.missing_value = element(missing);
      const std::string what = std::string(preset_name(preset)) + " " + mode_name(mode) + " f" +
                               std::to_string(8 * sizeof(T));
      const Bytes frame = compress(v.data(), v.size() * sizeof(T), dtype, dims, o);
      if (!inspect(frame.data(), frame.size()).raw) EXPECT_EQ(fill_masks(frame), 2u) << what;
      const Decoded d = decompress(frame.data(), frame.size());
      ASSERT_EQ(d.data.size(), v.size() * sizeof(T)) << what;
      std::vector<T> back(v.size());
      std::memcpy(back.data(), d.data.data(), d.data.size());
      const double allowed = 1e-3 * (double(hi) - double(lo));
      size_t bad_special = 0, bad_value = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == fill || v[i] == missing)
          bad_special += std::memcmp(&v[i], &back[i], sizeof(T)) != 0;
        else
          bad_value += !(std::fabs(double(back[i]) - double(v[i])) <= allowed);
      }
      EXPECT_EQ(bad_special, 0u) << what;
      EXPECT_EQ(bad_value, 0u) << what;
      // chunk_bound states the rule the frame holds: both values exact, the
      // range over the rest.
      const ChunkBound b = chunk_bound(v.data(), v.size() * sizeof(T), dtype, o);
      EXPECT_TRUE(b.lossy) << what;
      EXPECT_EQ(b.mode, ErrorMode::Abs) << what;
      EXPECT_LE(b.bound, allowed) << what;
      EXPECT_GE(b.bound, allowed * (1 - 1e-12)) << what;
      EXPECT_EQ(b.exact_bits, (std::vector<uint64_t>{bits(fill), bits(missing)})) << what;
      if (mode == ErrorMode::Noa) {
        EXPECT_EQ(b.range_min, double(lo)) << what;
        EXPECT_EQ(b.range_max, double(hi)) << what;
      }
    }
  }
}

TEST(SpecialValues, FillAndMissingBothExactAndOutOfTheRangeFloat32) { check_two_special_values<float>(); }
TEST(SpecialValues, FillAndMissingBothExactAndOutOfTheRangeFloat64) { check_two_special_values<double>(); }

// With one special value in the chunk the frame is the one a single special
// value always gave (frames written before a second one existed, and the
// golden corpus, stay as they were): the missing value alone is today's
// fill-value frame, and a missing value equal to the fill value counts once.
TEST(SpecialValues, OneSpecialValueGivesTheOneMaskFrame) {
  const float fill = 9.96921e36f, missing = -1e30f;
  std::vector<uint64_t> dims;
  const std::vector<float> both = field_with_specials(fill, missing, dims);
  std::vector<float> only_missing = both, only_fill = both;
  const Bytes raw = testing::read_field("wmag91.float");
  std::vector<float> plain(raw.size() / 4);
  std::memcpy(plain.data(), raw.data(), raw.size());
  for (size_t i = 0; i < both.size(); ++i) {
    if (both[i] == fill) only_missing[i] = plain[i];
    if (both[i] == missing) only_fill[i] = plain[i];
  }
  const size_t bytes = both.size() * 4;
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa}) {
      if (!find_preset(preset)->honours(mode)) continue;
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = 1e-3;
      const std::string what = std::string(preset_name(preset)) + " " + mode_name(mode);
      Options as_one = o, as_two = o;
      as_one.fill_value = element(missing);
      as_two.fill_value = element(fill);
      as_two.missing_value = element(missing);
      EXPECT_EQ(compress(only_missing.data(), bytes, DataType::of<float>(), dims, as_two),
                compress(only_missing.data(), bytes, DataType::of<float>(), dims, as_one))
          << what << ": missing value alone";
      as_one.fill_value = element(fill);
      EXPECT_EQ(compress(only_fill.data(), bytes, DataType::of<float>(), dims, as_two),
                compress(only_fill.data(), bytes, DataType::of<float>(), dims, as_one))
          << what << ": fill value alone";
      Options same = as_one;
      same.missing_value = element(fill);
      EXPECT_EQ(compress(only_fill.data(), bytes, DataType::of<float>(), dims, same),
                compress(only_fill.data(), bytes, DataType::of<float>(), dims, as_one))
          << what << ": missing value equal to the fill value";
      // (A frame stored raw, incompressible at this bound, has no stages.)
      const Bytes one = compress(only_fill.data(), bytes, DataType::of<float>(), dims, as_two);
      if (!inspect(one.data(), one.size()).raw) EXPECT_EQ(fill_masks(one), 1u) << what;
      EXPECT_EQ(fill_masks(compress(plain.data(), bytes, DataType::of<float>(), dims, as_two)), 0u) << what;
    }
  }
}

// The CPU range leaves both values out and reports each; the SSE paths agree
// with the scalar one (big-endian input takes the scalar path).
TEST(SpecialValues, FiniteRangeLeavesBothOut) {
  for (bool big : {false, true}) {
    std::vector<float> v = {5.0f, -1e30f, 2.0f, 9.96921e36f, 0.0f, 3.0f, -1e30f, 4.0f, 7.0f, 9.96921e36f, 6.0f};
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    if (big)
      for (size_t i = 0; i < b.size(); i += 4) std::reverse(b.begin() + i, b.begin() + i + 4);
    const engine::FiniteRange r =
        engine::finite_range(ByteSpan(b), 4, big, bits(9.96921e36f), bits(-1e30f), serial_executor());
    EXPECT_TRUE(r.any && r.has_fill && r.has_missing) << big;
    EXPECT_EQ(r.min, 2.0) << big;
    EXPECT_EQ(r.max, 7.0) << big;
    const engine::FiniteRange same =
        engine::finite_range(ByteSpan(b), 4, big, bits(-1e30f), bits(-1e30f), serial_executor());
    EXPECT_TRUE(same.has_fill && !same.has_missing) << big;
    EXPECT_EQ(same.max, double(9.96921e36f)) << big;
  }
}

// -0.0 is the second special value when no missing value is given and the
// chunk's facts come from a range pass (NOA; ABS for the spline presets,
// which tune to the range): masked, it comes back exactly for the price of
// its mask's runs instead of an outlier each. A missing value given, or REL,
// keeps the outliers; a fill value of -0.0 is one special value, not two.
TEST(SpecialValues, NegativeZerosMaskedWhenNoMissingValueIsGiven) {
  const Bytes raw = testing::read_field("wmag91.float");
  std::vector<float> v(raw.size() / 4);
  std::memcpy(v.data(), raw.data(), raw.size());
  for (size_t i = 0; i < v.size(); i += 53) v[i] = -0.0f;
  const std::vector<uint64_t> dims = {91, 91, 91};
  const size_t bytes = v.size() * 4;
  const DataType dtype = DataType::of<float>();
  const uint64_t negative_zero = bits(-0.0f);
  size_t masked_cases = 0;
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa, ErrorMode::Rel}) {
      if (!find_preset(preset)->honours(mode)) continue;
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = 1e-3;
      const std::string what = std::string(preset_name(preset)) + " " + mode_name(mode);
      const bool range_pass = mode == ErrorMode::Noa || (mode == ErrorMode::Abs && (preset == Preset::CuszHiTp ||
                                                                                   preset == Preset::CuszHiCr));
      const Bytes frame = compress(v.data(), bytes, dtype, dims, o);
      const Decoded d = decompress(frame.data(), frame.size());
      ASSERT_EQ(d.data.size(), bytes) << what;
      size_t lost_signs = 0;
      for (size_t i = 0; i < v.size(); i += 53) lost_signs += std::memcmp(&d.data[4 * i], &v[i], 4) != 0;
      EXPECT_EQ(lost_signs, 0u) << what;
      const ChunkBound b = chunk_bound(v.data(), bytes, dtype, o);
      if (inspect(frame.data(), frame.size()).raw) continue;
      EXPECT_EQ(fill_masks(frame), range_pass ? 1u : 0u) << what;
      EXPECT_EQ(std::count(b.exact_bits.begin(), b.exact_bits.end(), negative_zero), range_pass ? 1 : 0) << what;
      if (!range_pass) continue;
      ++masked_cases;
      // The outliers a given missing value (absent from the chunk) leaves
      // them as cost more than the mask.
      Options with_missing = o;
      with_missing.missing_value = element(-1e30f);
      const Bytes outliers = compress(v.data(), bytes, dtype, dims, with_missing);
      EXPECT_EQ(fill_masks(outliers), 0u) << what;
      EXPECT_LT(frame.size(), outliers.size()) << what;
      // A fill value of -0.0: one mask, the fill value's.
      Options fill_is_zero = o;
      fill_is_zero.fill_value = element(-0.0f);
      EXPECT_EQ(fill_masks(compress(v.data(), bytes, dtype, dims, fill_is_zero)), 1u) << what;
      EXPECT_EQ(chunk_bound(v.data(), bytes, dtype, fill_is_zero).exact_bits, std::vector<uint64_t>{negative_zero})
          << what;
    }
  }
  EXPECT_GE(masked_cases, 6u);
}

// chunk_bound on a ragged edge chunk padded with zeros (no fill value): the
// padding is left out, as the compressor leaves it out.
TEST(SpecialValues, ChunkBoundLeavesZeroPaddingOut) {
  std::vector<float> chunk(64, 0.0f);
  for (size_t i = 0; i < 40; ++i) chunk[i] = 100.0f + 0.025f * float(i);
  Options o;
  o.preset = Preset::Fzgpu;
  o.mode = ErrorMode::Noa;
  o.bound = 1e-3;
  const ChunkBound b = chunk_bound(chunk.data(), chunk.size() * 4, DataType::of<float>(), o);
  EXPECT_TRUE(b.lossy);
  EXPECT_EQ(b.range_min, 100.0);
  EXPECT_EQ(b.range_max, double(100.0f + 0.025f * 39.0f));
  EXPECT_NEAR(b.bound, 1e-3 * (b.range_max - b.range_min), 1e-15);
  o.preset = Preset::Lossless;
  EXPECT_FALSE(chunk_bound(chunk.data(), chunk.size() * 4, DataType::of<float>(), o).lossy);
}

}  // namespace
}  // namespace fz
