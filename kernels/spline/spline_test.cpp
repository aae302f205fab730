#include "spline/spline.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"
#include "spline/spline_rules.hpp"
#include "spline/testing/spline_inputs.hpp"

namespace fz {
namespace {

using namespace spline::test_inputs;

// wmag91 at eb = 1e-3 x value range: the share of q == 0 codes and the mean
// |q| over the coded points must stay near what this predictor
// measured (both tunings: 0.143 and 5.49, with 216 anchors and 7 outliers),
// so a broken predictor fails.
constexpr double kWmagZeroShare = 0.12;
constexpr double kWmagMeanAbsQ = 6.5;

template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
BitsOf<T> bits_of(T x) {
  BitsOf<T> b;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

bool is_anchor(const Dims& dims, size_t g) {
  const size_t tile = spline::rules::tile_size(static_cast<unsigned>(dims.size()));
  for (size_t k = dims.size(); k-- > 0;) {
    if ((g % dims[k]) % tile != 0) return false;
    g /= dims[k];
  }
  return true;
}

spline::Config config_for(unsigned width, spline::Tuning tuning, unsigned code_bytes = 2, uint32_t radius = 512,
                          spline::CodeForm form = spline::CodeForm::kOffset) {
  spline::Config c;
  c.width = width;
  c.code_bytes = code_bytes;
  c.radius = radius;
  c.tuning = tuning;
  c.code_form = form;
  return c;
}

// The outlier indices of a side stream (spline.hpp's layout; spline_inputs.hpp).
std::vector<size_t> outlier_indices(const Bytes& side, const Dims& dims, unsigned width) {
  try {
    return listed_outliers(side, dims, width);
  } catch (const std::runtime_error& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

// Encodes and decodes; checks every element: within eb exactly (binary128),
// or bit-exact where it is an anchor, an outlier or not codable. Checks the
// code streams too, each code found the slow way (CodePlaces): each group
// stream of its group's size, every code < 2R, code 0 at every anchor and
// exactly at the listed outliers besides, every element that is not codable
// listed. Returns the streams.
// With `fill` (one flag per element), the fill mask made of it goes to the
// encoder, and every fill element that is not an anchor must have code R
// (q = 0): its value is not checked (the fill mask stage puts it back).
template <typename T>
spline::Streams round_trip(const std::vector<T>& values, const Dims& dims, const spline::Config& config, double eb,
                           const Executor& exec = serial_executor(), const std::vector<bool>* fill = nullptr) {
  spline::Streams streams;
  const Bytes in = to_bytes(values);
  const Bytes mask = fill != nullptr ? fill_mask_of(*fill) : Bytes();
  spline::encode(in, mask, dims, config, eb, streams, exec);
  const spline::CodeFormat format = spline::format_of(config);
  const CodePlaces places = code_places(dims);
  for (unsigned k = 0; k < spline::kCodeGroups; ++k)
    EXPECT_EQ(streams.codes[k].size(), places.size[k] * config.code_bytes) << "code group " << k;
  Bytes out;
  spline::decode(streams, dims, format, out, exec);
  EXPECT_EQ(out.size(), in.size());
  if (out.size() != in.size()) return streams;
  const std::vector<size_t> outliers = outlier_indices(streams.side, dims, config.width);
  size_t next_outlier = 0;
  size_t failures = 0;
  for (size_t g = 0; g < values.size() && failures < 5; ++g) {
    const T x = values[g];
    const T y = load_le<T>(out.data() + g * sizeof(T));
    const bool anchor = is_anchor(dims, g);
    const uint32_t code = code_at(streams, places, format, config.radius, g);
    const bool listed = next_outlier < outliers.size() && outliers[next_outlier] == g;
    next_outlier += listed;
    const bool filled = fill != nullptr && (*fill)[g];
    bool ok = code < 2 * config.radius && (anchor ? code == 0 && !listed : listed == (code == 0)) &&
              (anchor || listed || filled || spline::rules::is_codable(x));
    const bool exact = anchor || code == 0 || !spline::rules::is_codable(x);
    if (fill != nullptr && (*fill)[g] && !anchor) {
      ok = code == config.radius && !listed;
    } else if (exact) {
      ok = ok && bits_of(x) == bits_of(y);
    } else {
      __float128 d = static_cast<__float128>(x) - static_cast<__float128>(y);
      if (d < 0) d = -d;
      ok = ok && std::isfinite(y) && d <= static_cast<__float128>(eb);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << g << ": " << x << " -> " << y << " (eb " << eb << ", code " << code
                    << ", anchor " << anchor << ", listed outlier " << listed << ")";
    }
  }
  if (failures == 0) {
    EXPECT_EQ(next_outlier, outliers.size()) << "outliers listed that the codes do not show";
  }
  return streams;
}

double value_range(const std::vector<double>& v) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v) {
    if (!std::isfinite(x)) continue;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return hi > lo ? hi - lo : 1;
}

template <typename T>
void sweep_field(const testing::RealField& field, const std::vector<double>& bounds) {
  const std::vector<T> values = testing::field_values<T>(field);
  const double range = value_range(testing::field_values<double>(field));
  const testing::ThreadExecutor exec(2);
  for (const Dims& dims : {field.dims, Dims{values.size()}}) {
    for (double relative : bounds) {
      for (spline::Tuning tuning : {spline::Tuning::kOff, spline::Tuning::kRatioFirst}) {
        SCOPED_TRACE(field.name + " rank " + std::to_string(dims.size()) + " bound " + std::to_string(relative) +
                     " tuning " + std::to_string(static_cast<int>(tuning)));
        round_trip(values, dims, config_for(sizeof(T), tuning), relative * range, exec);
      }
    }
  }
}

const std::vector<double> kAllBounds = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};

TEST(Spline, RealFieldsWithinBound) {
  for (const auto& field : testing::real_fields()) {
    if (field.f64) sweep_field<double>(field, kAllBounds);
    else sweep_field<float>(field, kAllBounds);
  }
}

TEST(Spline, RealFloat32FieldsAsFloat64WithinBound) {
  for (const auto& field : testing::real_fields())
    if (!field.f64) sweep_field<double>(field, {1e-2, 1e-4, 1e-6});
}

template <typename T>
void check_shapes() {
  const std::vector<Dims> shapes = ragged_shapes();
  for (const Dims& dims : shapes) {
    const std::vector<T> values = smooth_field<T>(element_count(dims), dims.size());
    for (spline::Tuning tuning : {spline::Tuning::kOff, spline::Tuning::kRatioFirst}) {
      for (double eb : {1e-1, 1e-3, 1e-5}) {
        SCOPED_TRACE("shape of " + std::to_string(element_count(dims)) + " rank " + std::to_string(dims.size()));
        round_trip(values, dims, config_for(sizeof(T), tuning), eb);
        round_trip(values, dims, config_for(sizeof(T), tuning, 1, 128), eb);
        round_trip(values, dims, config_for(sizeof(T), tuning, 1, 1), eb);
        round_trip(values, dims, config_for(sizeof(T), tuning, 1, 128, spline::CodeForm::kSigned), eb);
        round_trip(values, dims, config_for(sizeof(T), tuning, 2, 32768, spline::CodeForm::kSigned), eb);
      }
    }
  }
}

TEST(Spline, RaggedAndTinyShapesFloat32) { check_shapes<float>(); }
TEST(Spline, RaggedAndTinyShapesFloat64) { check_shapes<double>(); }

template <typename T>
void check_specials() {
  const std::vector<T> specials = special_values<T>();
  for (const FieldWithSpecials<T>& field : fields_with_specials<T>()) {
    const Dims& dims = field.dims;
    const std::vector<T>& values = field.values;
    for (spline::Tuning tuning : {spline::Tuning::kOff, spline::Tuning::kRatioFirst})
      for (double eb : {1e-2, 1e-6}) {
        round_trip(values, dims, config_for(sizeof(T), tuning), eb);
        round_trip(values, dims, config_for(sizeof(T), tuning, 2, 512, spline::CodeForm::kSigned), eb);
      }
    // All special: nothing but outliers and anchors.
    std::vector<T> all(values.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = specials[i % specials.size()];
    round_trip(all, dims, config_for(sizeof(T), spline::Tuning::kRatioFirst), 1e-3);
    round_trip(all, dims, config_for(sizeof(T), spline::Tuning::kRatioFirst, 1, 128, spline::CodeForm::kSigned), 1e-3);
  }
  // Denormals as ordinary values at a denormal-sized bound.
  std::vector<T> tiny(3000);
  for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = std::numeric_limits<T>::denorm_min() * static_cast<T>(i % 97);
  round_trip(tiny, Dims{tiny.size()}, config_for(sizeof(T), spline::Tuning::kOff),
             static_cast<double>(std::numeric_limits<T>::denorm_min()) * 3);
  // Bounds far out: huge (steps clamped to the largest value) and below every normal.
  const std::vector<T> values = smooth_field<T>(4000, 3);
  round_trip(values, Dims{values.size()}, config_for(sizeof(T), spline::Tuning::kRatioFirst), 1e300);
  round_trip(values, Dims{values.size()}, config_for(sizeof(T), spline::Tuning::kRatioFirst), 1e-310);
}

TEST(Spline, SpecialValuesExactFloat32) { check_specials<float>(); }
TEST(Spline, SpecialValuesExactFloat64) { check_specials<double>(); }

TEST(Spline, ConstantFieldCodesAreAllZeroQ) {
  for (const Dims& dims : std::vector<Dims>{{59, 32, 32}, {100, 77}, {10000}}) {
    const std::vector<float> values(element_count(dims), 3.25f);
    const CodePlaces places = code_places(dims);
    const auto config = config_for(4, spline::Tuning::kRatioFirst);
    const spline::Streams s = round_trip(values, dims, config, 1e-4);
    for (size_t g = 0; g < values.size(); ++g)
      ASSERT_EQ(code_at(s, places, spline::format_of(config), config.radius, g), is_anchor(dims, g) ? 0u : config.radius)
          << g;
    EXPECT_EQ(load_le<uint64_t>(s.side.data() + s.side.size() - 8), 0u);  // no outliers
    // The signed form: q = 0 is the zero word, an anchor -R (two's complement).
    struct SignedCase {
      unsigned code_bytes;
      uint32_t radius;
      uint32_t anchor_word;
    };
    for (const SignedCase& c : {SignedCase{2, 512, 0xFE00}, SignedCase{2, 32768, 0x8000}, SignedCase{1, 128, 0x80},
                                SignedCase{1, 5, 0xFB}}) {
      const auto signed_config =
          config_for(4, spline::Tuning::kRatioFirst, c.code_bytes, c.radius, spline::CodeForm::kSigned);
      const spline::Streams t = round_trip(values, dims, signed_config, 1e-4);
      EXPECT_EQ(t.side.size(), s.side.size());
      for (size_t g = 0; g < values.size(); ++g)
        ASSERT_EQ(stored_at(t.codes, places, c.code_bytes, g), is_anchor(dims, g) ? c.anchor_word : 0u)
            << g << ", radius " << c.radius;
    }
  }
}

TEST(Spline, SameBytesForAnyThreadCountAndRun) {
  const auto& field = testing::real_fields()[0];
  const std::vector<float> values = testing::field_values<float>(field);
  const Bytes in = to_bytes(values);
  for (spline::Tuning tuning : {spline::Tuning::kOff, spline::Tuning::kRatioFirst})
  for (spline::CodeForm form : {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag}) {
    const auto config = config_for(4, tuning, 2, 512, form);
    spline::Streams one, four, again;
    spline::encode(in, field.dims, config, 1e-3, one, serial_executor());
    spline::encode(in, field.dims, config, 1e-3, four, testing::ThreadExecutor(4));
    spline::encode(in, field.dims, config, 1e-3, again, testing::ThreadExecutor(4));
    for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
      EXPECT_FALSE(one.codes[k].empty());
      EXPECT_EQ(one.codes[k], four.codes[k]) << "code group " << k;
      EXPECT_EQ(four.codes[k], again.codes[k]) << "code group " << k;
    }
    EXPECT_EQ(one.side, four.side);
    EXPECT_EQ(four.side, again.side);
    Bytes out1, out4;
    spline::decode(one, field.dims, spline::format_of(config), out1, serial_executor());
    spline::decode(one, field.dims, spline::format_of(config), out4, testing::ThreadExecutor(4));
    EXPECT_EQ(out1.size(), in.size());
    EXPECT_EQ(out1, out4);
  }
}

// A land mask on every real field (the elements below the field's 30th
// percentile, so that the coasts follow the field's own structure, plus a
// rectangle), its elements' values replaced as the fill mask stage replaces
// them (carry forward) or left at a netCDF fill value: every fill element
// that is not an anchor is coded q = 0 (never an outlier, whatever its
// value), every other element holds the bound, and the bytes do not depend
// on the thread count. And the mask pays: the codes' entropy is below that
// of the same values coded without it (land as data, the coasts as steps).
template <typename T>
void check_fill_elements(const testing::RealField& field) {
  const std::vector<T> original = testing::field_values<T>(field);
  const size_t n = original.size();
  std::vector<T> sorted = original;
  std::nth_element(sorted.begin(), sorted.begin() + n * 3 / 10, sorted.end());
  const T low = sorted[n * 3 / 10];
  std::vector<bool> fill(n);
  for (size_t g = 0; g < n; ++g) fill[g] = original[g] < low || (g % field.dims.back() < field.dims.back() / 5 && g < n / 3);
  const double range = value_range(testing::field_values<double>(field));
  const testing::ThreadExecutor exec(3);
  for (bool carried : {true, false}) {
    std::vector<T> values = original;
    T last = T(0);
    for (size_t g = 0; g < n; ++g) {
      if (!fill[g]) last = values[g];
      else values[g] = carried ? last : T(-1e10);
    }
    for (double relative : {1e-2, 1e-4}) {
      SCOPED_TRACE(field.name + (carried ? " carried forward" : " at -1e10") + " bound " + std::to_string(relative));
      const auto config = config_for(sizeof(T), spline::Tuning::kRatioFirst, 2, 4096);
      const spline::Streams masked = round_trip(values, field.dims, config, relative * range, exec, &fill);
      const spline::Streams serial = round_trip(values, field.dims, config, relative * range, serial_executor(), &fill);
      for (unsigned k = 0; k < spline::kCodeGroups; ++k) EXPECT_EQ(masked.codes[k], serial.codes[k]);
      EXPECT_EQ(masked.side, serial.side);
      // A two-valued field (const32x32x59) costs 0.1 bits an element either way: nothing to compare.
      if (!carried || field.name.rfind("const", 0) == 0) continue;
      // Entropy of the codes (bits per element, all groups as one alphabet).
      auto entropy = [&](const spline::Streams& s) {
        std::vector<size_t> counts(2 * config.radius, 0);
        size_t total = 0;
        for (const Bytes& group : s.codes)
          for (size_t i = 0; i + 1 < group.size(); i += 2, ++total) ++counts[load_le<uint16_t>(group.data() + i)];
        double bits = 0;
        for (size_t c : counts)
          if (c != 0) bits -= double(c) * std::log2(double(c) / double(total));
        return bits / double(total);
      };
      spline::Streams unmasked;  // the carried values coded as data, as before the spline read the mask
      spline::encode(to_bytes(values), field.dims, config, relative * range, unmasked);
      EXPECT_LT(entropy(masked), entropy(unmasked)) << "the mask does not make the land cheaper";
      std::printf("%s %g: %.3f bits/element with the mask, %.3f without\n", field.name.c_str(), relative,
                  entropy(masked), entropy(unmasked));
    }
  }
}

TEST(Spline, FillElementsAreCodedZeroWhateverTheirValue) {
  for (const auto& field : testing::real_fields()) {
    if (field.f64) check_fill_elements<double>(field);
    else check_fill_elements<float>(field);
  }
}

// spline_code_rules.hpp's closed forms (code_groups, code_row, code_place) against
// the slow way (CodePlaces): the same group and offset for every element of
// every 1-, 2- and 3-axis shape over these extents, and ragged ones besides;
// the groups' sizes sum to N.
TEST(Spline, CodeGroupClosedFormsMatchTheSlowWay) {
  const std::vector<size_t> extents = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33};
  std::vector<Dims> shapes;
  for (size_t a : extents) {
    shapes.push_back({a});
    for (size_t b : extents) {
      shapes.push_back({a, b});
      for (size_t c : extents) shapes.push_back({a, b, c});
    }
  }
  for (const Dims& dims : ragged_shapes()) shapes.push_back(dims);
  for (const Dims& dims : std::vector<Dims>{{6, 10, 14}, {1, 2, 4099}, {4098, 6}, {123457}, {37, 1, 29}, {5, 131, 2}})
    shapes.push_back(dims);
  size_t checked = 0;
  for (const Dims& dims : shapes) {
    std::string name = "dims";
    for (size_t d : dims) name += " " + std::to_string(d);
    SCOPED_TRACE(name);
    const CodePlaces places = code_places(dims);
    spline::rules::Grid grid;
    ASSERT_EQ(spline::rules::grid_of(dims, grid), spline::rules::GridCheck::kOk);
    const spline::rules::CodeGroups groups = spline::rules::code_groups(grid);
    EXPECT_EQ(groups.size[0] + groups.size[1] + groups.size[2], element_count(dims));
    for (unsigned k = 0; k < spline::kCodeGroups; ++k) ASSERT_EQ(groups.size[k], places.size[k]) << "group " << k;
    const size_t n = element_count(dims);
    for (size_t row = 0; n > 0 && row < grid.n[0] * grid.n[1]; ++row) {
      const spline::rules::CodeRow r = spline::rules::code_row(grid, groups, row / grid.n[1], row % grid.n[1]);
      for (size_t x = 0; x < grid.n[2]; ++x) {
        const size_t g = row * grid.n[2] + x;
        size_t offset = ~size_t{0};
        const unsigned group = spline::rules::code_place(r, x, offset);
        ASSERT_EQ(group, places.group[g]) << "element " << g;
        ASSERT_EQ(offset, places.offset[g]) << "element " << g;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, size_t{3000000});
}

// Both code forms, 1- and 2-byte codes at their largest radius (and smaller
// ones): the same side stream, and every stored word of the signed form is
// the offset form's code - R modulo 2^(8 code_bytes), so that q = 0 is the
// zero word; both decode within the bound (round_trip).
TEST(Spline, EveryCodeFormRoundTrips) {
  struct Case {
    unsigned code_bytes;
    uint32_t radius;
  };
  const std::vector<float> wmag = testing::field_values<float>(testing::real_fields()[0]);
  const double wmag_eb = 1e-3 * value_range(testing::field_values<double>(testing::real_fields()[0]));
  std::vector<std::pair<Dims, std::vector<float>>> inputs = {{testing::real_fields()[0].dims, wmag}};
  for (const Dims& dims : std::vector<Dims>{{40, 41, 19}, {130, 99}, {5000}, {1}, {3, 0}})
    inputs.push_back({dims, smooth_field<float>(element_count(dims), 4)});
  for (const FieldWithSpecials<float>& field : fields_with_specials<float>()) inputs.push_back({field.dims, field.values});
  for (const auto& [dims, values] : inputs) {
    const CodePlaces places = code_places(dims);
    for (const Case& c : {Case{1, 128}, Case{2, 32768}, Case{1, 64}, Case{2, 512}, Case{2, 1}}) {
      for (double eb : {wmag_eb, 1e-4}) {
        SCOPED_TRACE("N " + std::to_string(values.size()) + ", code bytes " + std::to_string(c.code_bytes) +
                     ", radius " + std::to_string(c.radius) + ", eb " + std::to_string(eb));
        const auto offset_config = config_for(4, spline::Tuning::kRatioFirst, c.code_bytes, c.radius);
        const auto signed_config =
            config_for(4, spline::Tuning::kRatioFirst, c.code_bytes, c.radius, spline::CodeForm::kSigned);
        const auto zigzag_config =
            config_for(4, spline::Tuning::kRatioFirst, c.code_bytes, c.radius, spline::CodeForm::kZigzag);
        const spline::Streams offset = round_trip(values, dims, offset_config, eb);
        const spline::Streams signed_streams = round_trip(values, dims, signed_config, eb);
        const spline::Streams zigzag = round_trip(values, dims, zigzag_config, eb);
        EXPECT_EQ(offset.side, signed_streams.side);
        EXPECT_EQ(offset.side, zigzag.side);
        const uint32_t modulus = c.code_bytes == 1 ? 0x100 : 0x10000;
        size_t zero_q = 0, zero_words = 0, zero_zigzag = 0;
        for (size_t g = 0; g < values.size(); ++g) {
          const uint32_t code = stored_at(offset.codes, places, c.code_bytes, g);
          const uint32_t word = stored_at(signed_streams.codes, places, c.code_bytes, g);
          const uint32_t zig = stored_at(zigzag.codes, places, c.code_bytes, g);
          ASSERT_EQ(word, (code + modulus - c.radius) % modulus) << "element " << g << ", code " << code;
          // TCMS's map of the signed word (tcms.hpp): (w << 1) XOR (w >>arithmetic (bits - 1)).
          const uint32_t sign = word >= modulus / 2 ? modulus - 1 : 0;
          ASSERT_EQ(zig, ((word << 1) ^ sign) % modulus) << "element " << g << ", code " << code;
          zero_q += code == c.radius;
          zero_words += word == 0;
          zero_zigzag += zig == 0;
        }
        EXPECT_EQ(zero_q, zero_words);
        EXPECT_EQ(zero_q, zero_zigzag);
        if (values.size() > 100 && c.radius > 1) {
          EXPECT_GT(zero_q, 0u);
        }
      }
    }
  }
}

TEST(Spline, CodeFormAndConfigChecks) {
  const std::vector<float> values = smooth_field<float>(100, 1);
  const Bytes in = to_bytes(values);
  spline::Streams s;
  auto config = config_for(4, spline::Tuning::kOff);
  config.code_form = static_cast<spline::CodeForm>(3);
  EXPECT_THROW(spline::encode(in, {100}, config, 1e-3, s), UsageError);
  config = config_for(4, spline::Tuning::kOff, 1, 129);
  EXPECT_THROW(spline::encode(in, {100}, config, 1e-3, s), UsageError);
  config = config_for(4, spline::Tuning::kOff, 2, 32769, spline::CodeForm::kSigned);
  EXPECT_THROW(spline::encode(in, {100}, config, 1e-3, s), UsageError);
  config = config_for(4, spline::Tuning::kOff, 2, 512, spline::CodeForm::kSigned);
  spline::encode(in, {100}, config, 1e-3, s);
  Bytes out;
  spline::CodeFormat format = spline::format_of(config);
  EXPECT_EQ(format.width, 4u);
  EXPECT_EQ(format.code_bytes, 2u);
  EXPECT_EQ(format.code_form, spline::CodeForm::kSigned);
  spline::decode(s, {100}, format, out);
  EXPECT_EQ(out.size(), in.size());
  format.code_form = static_cast<spline::CodeForm>(3);
  EXPECT_THROW(spline::decode(s, {100}, format, out), UsageError);
}

TEST(Spline, RatioSanityOnWmag91) {
  const auto& field = testing::real_fields()[0];
  ASSERT_EQ(field.name, "wmag91.float");
  const std::vector<float> values = testing::field_values<float>(field);
  const double eb = 1e-3 * value_range(testing::field_values<double>(field));
  const CodePlaces places = code_places(field.dims);
  for (spline::Tuning tuning : {spline::Tuning::kOff, spline::Tuning::kRatioFirst}) {
    const auto config = config_for(4, tuning);
    const spline::Streams s = round_trip(values, field.dims, config, eb);
    size_t zero_q = 0, coded = 0;
    double total = 0;
    for (size_t g = 0; g < values.size(); ++g) {
      const uint32_t code = code_at(s, places, spline::format_of(config), config.radius, g);
      if (code == 0) continue;  // anchors and outliers
      ++coded;
      zero_q += code == config.radius;
      total += std::abs(static_cast<double>(code) - config.radius);
    }
    EXPECT_LT(values.size() - coded, values.size() / 100);  // anchors (1 in 4096) and few outliers
    EXPECT_GT(static_cast<double>(zero_q) / values.size(), kWmagZeroShare);
    EXPECT_LT(total / coded, kWmagMeanAbsQ);
  }
}

}  // namespace
}  // namespace fz
