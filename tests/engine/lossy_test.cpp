// Lossy presets through the public API: the error bound holds for every
// element of every real field, for every preset, mode, dtype and several
// bounds; special values come back bit-exactly; bytes do not depend on threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {

struct Field {
  const char* name;
  std::vector<uint64_t> dims;
  bool f64;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {{"vorticity.128_128_41", {41, 128, 128}, false},
                                       {"vorticity.512_512", {512, 512}, false},
                                       {"wmag91.float", {91, 91, 91}, false},
                                       {"999x999.float", {999, 999}, false},
                                       {"const32x32x59.float", {59, 32, 32}, false},
                                       {"pressure.384_384.f64", {384, 384}, true}};
  return f;
}

// The presets and modes swept below come from the preset table: every lossy
// preset this build has, in the modes it honours, so a new preset is tested by
// being listed there (docs/ADDING_A_STAGE.md, "Adding a preset").
std::vector<Preset> lossy_presets() {
  std::vector<Preset> out;
  for (const PresetInfo& p : preset_table())
    if (p.lossy && p.available) out.push_back(p.id);
  return out;
}

// Of `modes`, those `preset` honours.
std::vector<ErrorMode> modes_of(Preset preset, std::initializer_list<ErrorMode> modes = {ErrorMode::Abs, ErrorMode::Noa,
                                                                                        ErrorMode::Rel}) {
  std::vector<ErrorMode> out;
  for (ErrorMode m : modes)
    if (find_preset(preset)->honours(m)) out.push_back(m);
  return out;
}

// The bounds relative to no element (ABS and NOA) that most tests sweep.
constexpr std::initializer_list<ErrorMode> kRangeModes = {ErrorMode::Abs, ErrorMode::Noa};

template <typename T>
std::vector<T> values_of(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// Counts elements outside the bound, checked in long double (exact for the
// differences of floats and doubles that matter here); NaN/Inf must match bit for bit.
template <typename T>
size_t violations(const std::vector<T>& x, const std::vector<T>& y, ErrorMode mode, double bound) {
  long double lo = std::numeric_limits<long double>::infinity(), hi = -lo;
  for (T v : x)
    if (std::isfinite(v)) lo = std::min<long double>(lo, v), hi = std::max<long double>(hi, v);
  const long double abs_bound = mode == ErrorMode::Noa ? (long double)bound * (hi - lo) : (long double)bound;
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) {
      bad += std::memcmp(&x[i], &y[i], sizeof(T)) != 0;
      continue;
    }
    const long double err = std::fabs((long double)x[i] - (long double)y[i]);
    const long double allowed = mode == ErrorMode::Rel ? (long double)bound * std::fabs((long double)x[i]) : abs_bound;
    bad += !(err <= allowed);
  }
  return bad;
}

template <typename T>
void check_field(const Bytes& raw, const std::vector<uint64_t>& dims, Preset preset, ErrorMode mode, double bound,
                 double* ratio) {
  Options o;
  o.preset = preset;
  o.mode = mode;
  o.bound = bound;
  const Bytes frame = compress(raw.data(), raw.size(), DataType::of<T>(), dims, o);
  const Decoded d = decompress(frame.data(), frame.size());
  ASSERT_EQ(d.data.size(), raw.size());
  EXPECT_EQ(violations(values_of<T>(raw), values_of<T>(d.data), mode, bound), 0u);
  *ratio = double(raw.size()) / double(frame.size());
}

std::vector<double> as_doubles(const Bytes& f32) {
  std::vector<double> out;
  for (float v : values_of<float>(f32)) out.push_back(v);
  return out;
}

TEST(Lossy, EveryPresetModeAndBoundHoldsOnEveryRealField) {
  for (const Field& f : fields()) {
    const Bytes raw = testing::read_field(f.name);
    for (Preset preset : lossy_presets()) {
      for (ErrorMode mode : modes_of(preset)) {
        for (double bound : {1e-2, 1e-4, 1e-6}) {
          // ABS bounds scaled to the field: vorticity is ~1e-4 in size.
          const double b = mode == ErrorMode::Abs ? bound * (std::string(f.name).rfind("vorticity", 0) == 0 ? 1e-3 : 10.0)
                                                  : bound;
          SCOPED_TRACE(::testing::Message() << f.name << " " << preset_name(preset) << " " << mode_name(mode) << " "
                                            << b);
          double ratio = 0;
          if (f.f64) {
            check_field<double>(raw, f.dims, preset, mode, b, &ratio);
          } else {
            check_field<float>(raw, f.dims, preset, mode, b, &ratio);
            const auto d = as_doubles(raw);
            Bytes wide(d.size() * 8);
            std::memcpy(wide.data(), d.data(), wide.size());
            double ratio64 = 0;
            check_field<double>(wide, f.dims, preset, mode, b, &ratio64);
          }
          // Tight bounds on noisy fields may not compress (the frame then holds
          // the chunk raw), but a frame never costs more than a small header.
          EXPECT_GT(ratio, 0.999);
          if (mode == ErrorMode::Noa && bound >= 1e-4 && std::string(f.name) != "pressure.384_384.f64") {
            EXPECT_GT(ratio, 2.0);
          }
        }
      }
    }
  }
}

TEST(Lossy, SpecialValuesSurviveBitExactly) {
  std::vector<float> v(50000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(i * 0.001f) * 100;
  v[10] = std::numeric_limits<float>::quiet_NaN();
  v[11] = std::numeric_limits<float>::infinity();
  v[12] = -std::numeric_limits<float>::infinity();
  v[13] = std::numeric_limits<float>::denorm_min();
  v[14] = -0.0f;
  v[15] = std::numeric_limits<float>::max();
  v[16] = -std::numeric_limits<float>::max();
  const Bytes raw(reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data() + v.size()));
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : modes_of(preset, kRangeModes)) {
      SCOPED_TRACE(::testing::Message() << preset_name(preset) << " " << mode_name(mode));
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = 1e-3;
      const Bytes frame = compress(raw.data(), raw.size(), DataType::of<float>(), {v.size()}, o);
      const Decoded d = decompress(frame.data(), frame.size());
      for (size_t i = 10; i <= 16; ++i) EXPECT_EQ(std::memcmp(&raw[4 * i], &d.data[4 * i], 4), 0) << i;
      EXPECT_EQ(violations(v, values_of<float>(d.data), mode, 1e-3), 0u);
    }
  }
}

TEST(Lossy, BytesDoNotDependOnThreads) {
  const Bytes raw = testing::read_field("wmag91.float");
  for (Preset preset : lossy_presets()) {
    Options one;
    one.preset = preset;
    one.mode = ErrorMode::Noa;
    one.bound = 1e-3;
    one.threads = 1;
    Options many = one;
    many.threads = 5;
    EXPECT_TRUE(compress(raw.data(), raw.size(), DataType::of<float>(), {91, 91, 91}, one) ==
                compress(raw.data(), raw.size(), DataType::of<float>(), {91, 91, 91}, many))
        << preset_name(preset);
  }
}

#if defined(__x86_64__)
// Decision 5: a host that turned on flush-to-zero, denormals-are-zero and
// round-toward-zero gets the same frames and values, and its state back. The
// data has denormals and values whose NOA range depends on them.
TEST(Lossy, CallerFloatingPointStateChangesNothing) {
  std::vector<float> v(20000);
  // The minimum is a negative denormal: read as 0 under DAZ it would shrink the
  // range, and with NOA 0.5 the bound (above the smallest normal) with it.
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = i % 3 ? 2e-38f + 5e-39f * static_cast<float>(std::sin(i * 0.01)) : -5e-39f;
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : modes_of(preset, kRangeModes)) {
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = mode == ErrorMode::Noa ? 0.5 : 2e-38;
      o.threads = 1;
      const Bytes reference = compress(v.data(), v.size() * 4, DataType::of<float>(), {v.size()}, o);
      const Decoded expected = decompress(reference.data(), reference.size());
      const unsigned saved = _mm_getcsr();
      const unsigned hostile = saved | 0x8000u | 0x0040u | 0x6000u;  // FTZ, DAZ, round toward zero
      _mm_setcsr(hostile);
      const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {v.size()}, o);
      const Decoded got = decompress(frame.data(), frame.size());
      const unsigned after = _mm_getcsr();
      _mm_setcsr(saved);
      EXPECT_EQ(after & ~0x3Fu, hostile & ~0x3Fu) << "control bits not restored";
      EXPECT_TRUE(frame == reference) << preset_name(preset) << " " << mode_name(mode);
      EXPECT_TRUE(got.data == expected.data) << preset_name(preset) << " " << mode_name(mode);
    }
  }
}
#endif

// The fill mask is in the frame exactly when the chunk holds a fill element,
// whatever the mode, dtype and byte order; fill elements come back exact.
TEST(Lossy, FillMaskOnlyWhereTheChunkHoldsFillValues) {
  auto count_fill_masks = [](const Bytes& frame) {
    const FrameInfo info = inspect(frame.data(), frame.size());
    return std::count_if(info.stages.begin(), info.stages.end(),
                         [](const StageInfo& s) { return s.name.find("fillmask") != std::string::npos; });
  };
  for (unsigned width : {4u, 8u}) {
    for (ByteOrder order : {ByteOrder::Little, ByteOrder::Big}) {
      const DataType dtype{ElementClass::Float, width, order};
      const size_t n = 5000;
      std::vector<double> values(n);
      for (size_t i = 0; i < n; ++i) values[i] = 10 + std::sin(i * 0.01);
      auto encode = [&](const std::vector<double>& v) {  // to dtype's bytes
        Bytes b(n * width);
        for (size_t i = 0; i < n; ++i) {
          uint64_t bits = 0;
          if (width == 4) {
            const float f = static_cast<float>(v[i]);
            std::memcpy(&bits, &f, 4);
          } else {
            std::memcpy(&bits, &v[i], 8);
          }
          for (unsigned k = 0; k < width; ++k)
            b[i * width + (order == ByteOrder::Big ? width - 1 - k : k)] = static_cast<uint8_t>(bits >> (8 * k));
        }
        return b;
      };
      Options o;
      o.fill_value = Bytes(width, 0);  // HDF5's default fill value, +0.0
      o.bound = 1e-3;
      std::vector<double> with_fill = values;
      for (size_t i = n - 7; i < n; ++i) with_fill[i] = 0.0;  // one fill run at the very end
      for (Preset preset : lossy_presets()) {
        for (ErrorMode mode : modes_of(preset, kRangeModes)) {
          o.preset = preset;
          o.mode = mode;
          const std::string what = std::string(preset_name(preset)) + " " + mode_name(mode) + " width " +
                                   std::to_string(width) + (order == ByteOrder::Big ? " BE" : " LE");
          const Bytes clean = encode(values), filled = encode(with_fill);
          const Bytes a = compress(clean.data(), clean.size(), dtype, {n}, o);
          const Bytes b = compress(filled.data(), filled.size(), dtype, {n}, o);
          EXPECT_EQ(count_fill_masks(a), 0) << what;
          EXPECT_EQ(count_fill_masks(b), 1) << what;
          const Decoded back = decompress(b.data(), b.size());
          EXPECT_TRUE(std::all_of(back.data.end() - 7 * width, back.data.end(), [](uint8_t c) { return c == 0; }))
              << what << ": fill elements not exact";
        }
      }
    }
  }
}

TEST(Lossy, ZeroPaddingOfEdgeChunksDoesNotWidenTheNoaRange) {
  // HDF5 pads a ragged edge chunk with zeros when no fill value is defined; the
  // bound must stay relative to the data's range, not to [0, 100].
  std::vector<float> chunk(64, 0.0f);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 8; ++x) chunk[y * 8 + x] = 100.0f + 0.01f * static_cast<float>((y * 8 + x) % 7);
  float lo = 1e30f, hi = -1e30f;
  for (int i = 0; i < 16; ++i) lo = std::min(lo, chunk[i]), hi = std::max(hi, chunk[i]);
  for (Preset preset : lossy_presets()) {
    Options o;
    o.preset = preset;
    o.mode = ErrorMode::Noa;
    o.bound = 1e-2;
    const Bytes frame = compress(chunk.data(), chunk.size() * 4, DataType::of<float>(), {8, 8}, o);
    const auto back = values_of<float>(decompress(frame.data(), frame.size()).data);
    for (int i = 0; i < 16; ++i)
      EXPECT_LE(std::fabs(double(back[i]) - double(chunk[i])), 1e-2 * (double(hi) - double(lo)))
          << preset_name(preset) << " element " << i;
  }
}

TEST(Lossy, LandMasksOfFillValuesAreExactAndCheap) {
  // Half of wmag91 masked with a netCDF-style fill value: the fill elements come
  // back bit-exactly, the rest within NOA's bound over the non-fill range, and
  // the mask costs little (the fill elements are not stored one by one).
  const Bytes raw = testing::read_field("wmag91.float");
  std::vector<float> v = values_of<float>(raw);
  const float fill = -1e34f;
  for (size_t i = 0; i < v.size(); ++i)
    if ((i / 91) % 91 < 45) v[i] = fill;  // the first half of every plane is "land"
  std::vector<float> sea;
  for (float x : v)
    if (x != fill) sea.push_back(x);
  const float lo = *std::min_element(sea.begin(), sea.end()), hi = *std::max_element(sea.begin(), sea.end());
  Bytes fill_bytes(4);
  std::memcpy(fill_bytes.data(), &fill, 4);
  for (Preset preset : lossy_presets()) {
    Options o;
    o.preset = preset;
    o.mode = ErrorMode::Noa;
    o.bound = 1e-3;
    o.fill_value = fill_bytes;
    const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {91, 91, 91}, o);
    const auto back = values_of<float>(decompress(frame.data(), frame.size()).data);
    size_t bad = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] == fill) {
        bad += std::memcmp(&v[i], &back[i], 4) != 0;
      } else {
        bad += !(std::fabs(double(back[i]) - double(v[i])) <= 1e-3 * (double(hi) - double(lo)));
      }
    }
    EXPECT_EQ(bad, 0u) << preset_name(preset);
    // About half the data of the unmasked field, so at least its ratio again.
    EXPECT_GT(double(raw.size()) / double(frame.size()), 7.0) << preset_name(preset);
  }
}

TEST(Lossy, PresetsRefuseTheModesTheyDoNotHonour) {
  const std::vector<float> v(100, 1.0f);
  size_t refusals = 0;
  for (Preset preset : lossy_presets()) {
    for (ErrorMode mode : {ErrorMode::Abs, ErrorMode::Noa, ErrorMode::Rel}) {
      if (find_preset(preset)->honours(mode)) continue;
      ++refusals;
      Options o;
      o.preset = preset;
      o.mode = mode;
      o.bound = 1e-3;
      try {
        compress(v.data(), 400, DataType::of<float>(), {100}, o);
        ADD_FAILURE() << "accepted " << mode_name(mode) << " for " << preset_name(preset);
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(std::string("preset '") + preset_name(preset) + "' cannot guarantee"),
                  std::string::npos)
            << e.what();
      }
    }
  }
  EXPECT_GT(refusals, 0u) << "the predictor presets (fzgpu, cusz) refuse REL";
}

TEST(Lossy, TheRelRefusalNamesThePresetsAndModesToUse) {
  // The message is generated from the preset table; its text is documented
  // (docs/CD_VALUES.md) and must stay as it was.
  Options o;
  o.preset = Preset::Fzgpu;
  o.mode = ErrorMode::Rel;
  o.bound = 1e-3;
  try {
    validate(o, DataType::of<float>());
    ADD_FAILURE() << "accepted REL for fzgpu";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "preset 'fzgpu' cannot guarantee point-wise relative (REL) bounds; use preset pfpl for REL, or mode "
                 "abs/noa");
  }
}

TEST(Lossy, NonFloatTypesGoLossless) {
  const Bytes ints = testing::smooth_words(40000, 4, 3);
  Options o;
  o.preset = Preset::Cusz;
  o.mode = ErrorMode::Abs;
  o.bound = 1.0;
  const Bytes frame = compress(ints.data(), ints.size(), DataType::of<int32_t>(), {10000}, o);
  EXPECT_TRUE(decompress(frame.data(), frame.size()).data == ints);
}

}  // namespace
}  // namespace fz
