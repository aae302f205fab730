// fz_filter_core: the user and stored cd_values layouts, their checks and
// messages, and the pinned word and bit positions files depend on.
#include "cd_values.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace fz::filter {
namespace {

using ::testing::HasSubstr;

uint64_t bits_of(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double double_of(uint64_t bits) {
  double value = 0.0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// float32(-1e34) as a double: a missing value a float32 dataset accepts.
const double kFloat32Missing = static_cast<double>(-1e34f);

std::vector<unsigned> lossy_user(Preset preset, ErrorMode mode, double bound) {
  const auto [low, high] = split_bound(bound);
  return {static_cast<unsigned>(preset), static_cast<unsigned>(mode), low, high};
}

// The message a parse of `cd` fails with ("" when it succeeds).
std::string user_layout_error(const std::vector<unsigned>& cd) {
  try {
    parse_user_layout(cd.data(), cd.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string stored_layout_error(const std::vector<unsigned>& cd) {
  try {
    decode_stored(cd.data(), cd.size());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

StoredParams float32_params() {
  StoredParams params;
  params.user.preset = Preset::Lossless;
  params.dataset.dtype = DataType::of<float>();
  params.dataset.hdf5_class = 1;  // H5T_FLOAT
  params.dataset.float_fields = ieee_fields(4);
  params.dataset.chunk_dims = {16, 50};
  return params;
}

void expect_same(const StoredParams& a, const StoredParams& b) {
  EXPECT_EQ(a.user.preset, b.user.preset);
  EXPECT_EQ(a.user.mode, b.user.mode);
  EXPECT_EQ(bits_of(a.user.bound), bits_of(b.user.bound));
  EXPECT_EQ(a.user.tuning, b.user.tuning);
  EXPECT_EQ(a.dataset.dtype, b.dataset.dtype);
  EXPECT_EQ(a.dataset.hdf5_class, b.dataset.hdf5_class);
  EXPECT_EQ(a.dataset.hdf5_sign, b.dataset.hdf5_sign);
  EXPECT_EQ(a.dataset.float_fields, b.dataset.float_fields);
  EXPECT_EQ(a.dataset.fill_value, b.dataset.fill_value);
  EXPECT_EQ(a.dataset.chunk_dims, b.dataset.chunk_dims);
  EXPECT_EQ(a.dataset.first_filter, b.dataset.first_filter);
}

// ---- the bound as two words ---------------------------------------------------

TEST(Bound, SplitsLowWordFirst) {
  EXPECT_EQ(split_bound(1.0), std::make_pair(0u, 0x3FF00000u));
  EXPECT_EQ(split_bound(-2.0), std::make_pair(0u, 0xC0000000u));
  const auto [low, high] = split_bound(1e-3);  // 0x3F50624DD2F1A9FC
  EXPECT_EQ(low, 0xD2F1A9FCu);
  EXPECT_EQ(high, 0x3F50624Du);
  EXPECT_EQ(join_bound(0xD2F1A9FCu, 0x3F50624Du), 1e-3);
}

TEST(Bound, RoundTripsEveryBitPattern) {
  std::mt19937_64 random(20240611);
  std::vector<uint64_t> patterns = {
      0, bits_of(-0.0), bits_of(std::numeric_limits<double>::denorm_min()),
      bits_of(std::numeric_limits<double>::min()), bits_of(std::numeric_limits<double>::max()),
      bits_of(std::numeric_limits<double>::infinity()), bits_of(-std::numeric_limits<double>::infinity()),
      0x7FF8000000000001ull, 0xFFF0000000000001ull, 0xFFFFFFFFFFFFFFFFull, bits_of(0.1), bits_of(1e-300)};
  for (int i = 0; i < 100000; ++i) patterns.push_back(random());
  for (double decade = 1e-12; decade < 1e12; decade *= 10) patterns.push_back(bits_of(decade));
  for (uint64_t pattern : patterns) {
    const auto [low, high] = split_bound(double_of(pattern));
    EXPECT_EQ(static_cast<uint64_t>(low) | (static_cast<uint64_t>(high) << 32), pattern);
    ASSERT_EQ(bits_of(join_bound(low, high)), pattern);
  }
}

// ---- user layout ----------------------------------------------------------------

TEST(UserLayout, NoValuesIsLossless) {
  const UserParams params = parse_user_layout(nullptr, 0);
  EXPECT_EQ(params.preset, Preset::Default);
  EXPECT_FALSE(preset_is_lossy(params.preset));
  EXPECT_TRUE(params.tuning.empty());
}

TEST(UserLayout, LosslessForms) {
  for (const std::vector<unsigned>& cd : std::vector<std::vector<unsigned>>{{0}, {1}, {1, 0}, {1, 2}, {1, 0, 0, 0}}) {
    const UserParams params = parse_user_layout(cd.data(), cd.size());
    EXPECT_EQ(static_cast<unsigned>(params.preset), cd[0]);
    if (cd.size() > 1) {
      EXPECT_EQ(static_cast<unsigned>(params.mode), cd[1]);
    }
  }
}

TEST(UserLayout, LossyPresetsTakeEveryModeAndBound) {
  for (unsigned preset = 2; preset <= 6; ++preset) {
    for (unsigned mode = 0; mode <= 2; ++mode) {
      for (double bound : {1e-6, 0.5, 3.0, 1e30, std::numeric_limits<double>::denorm_min()}) {
        const auto cd = lossy_user(static_cast<Preset>(preset), static_cast<ErrorMode>(mode), bound);
        const UserParams params = parse_user_layout(cd.data(), cd.size());
        EXPECT_EQ(static_cast<unsigned>(params.preset), preset);
        EXPECT_EQ(static_cast<unsigned>(params.mode), mode);
        EXPECT_EQ(bits_of(params.bound), bits_of(bound));
        const Options options = to_options(params);
        EXPECT_EQ(options.preset, params.preset);
        EXPECT_EQ(options.mode, params.mode);
        EXPECT_EQ(bits_of(options.bound), bits_of(bound));
      }
    }
  }
}

TEST(UserLayout, RefusesUnknownPreset) {
  EXPECT_THAT(user_layout_error({7}), HasSubstr("unknown preset 7 in cd_values[0]"));
  EXPECT_THAT(user_layout_error({7}), HasSubstr("1 lossless"));
  EXPECT_THAT(user_layout_error({0xFFFFFFFFu, 0, 0, 0}), HasSubstr("unknown preset 4294967295"));
}

TEST(UserLayout, RefusesUnknownMode) {
  EXPECT_THAT(user_layout_error({1, 3}), HasSubstr("unknown error-bound mode 3 in cd_values[1]"));
  EXPECT_THAT(user_layout_error(lossy_user(Preset::Pfpl, static_cast<ErrorMode>(9), 1.0)),
              HasSubstr("unknown error-bound mode 9"));
}

TEST(UserLayout, RefusesHalfABound) {
  EXPECT_THAT(user_layout_error({1, 0, 5}), HasSubstr("3 cd_values given; the error bound takes two"));
  EXPECT_THAT(user_layout_error({2, 0, 5}), HasSubstr("3 cd_values given"));
}

TEST(UserLayout, RefusesLossyWithoutBound) {
  EXPECT_THAT(user_layout_error({2}), HasSubstr("preset 2 (pfpl) is lossy and needs an error bound"));
  EXPECT_THAT(user_layout_error({4, 1}), HasSubstr("preset 4 (cusz) is lossy and needs an error bound"));
}

TEST(UserLayout, RefusesBoundsThatAreNotPositiveAndFinite) {
  for (double bound : {0.0, -0.0, -1e-3, std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THAT(user_layout_error(lossy_user(Preset::Fzgpu, ErrorMode::Abs, bound)),
                HasSubstr("preset 3 (fzgpu) needs a positive finite error bound"))
        << bound;
  }
  EXPECT_THAT(user_layout_error(lossy_user(Preset::Pfpl, ErrorMode::Rel, -0.25)), HasSubstr("hold -0.25"));
}

TEST(UserLayout, LosslessIgnoresTheBound) {
  // h5repack's UD=32850,0,4,1,0,0,0 style: a zero bound with the lossless preset.
  const auto cd = lossy_user(Preset::Lossless, ErrorMode::Abs, -1.0);
  EXPECT_EQ(user_layout_error(cd), "");
}

TEST(UserLayout, RefusesTooManyValues) {
  std::vector<unsigned> cd(21, 1u);
  EXPECT_THAT(user_layout_error(cd), HasSubstr("21 cd_values given; H5Z-FZ takes at most 20"));
  cd.resize(300);
  EXPECT_THAT(user_layout_error(cd), HasSubstr("300 cd_values given"));
}

TEST(UserLayout, RefusesTuningAPresetDoesNotTake) {
  std::vector<unsigned> cd = {1, 0, 0, 0, 5};
  EXPECT_THAT(user_layout_error(cd), HasSubstr("preset 1 (lossless) takes no tuning values, but cd_values[4..] hold 1"));
  cd = {1, 0, 0, 0, 5, 6};
  EXPECT_THAT(user_layout_error(cd), HasSubstr("preset 1 (lossless) takes no tuning values, but cd_values[4..] hold 2"));
  cd = lossy_user(Preset::Cusz, ErrorMode::Abs, 1.0);
  cd.insert(cd.end(), 16, 0u);
  EXPECT_THAT(user_layout_error(cd), HasSubstr("preset 4 (cusz) takes at most 2 tuning values, but cd_values[4..] hold 16"));
  cd = lossy_user(Preset::Cusz, ErrorMode::Abs, 1.0);
  cd.insert(cd.end(), 3, 0u);
  EXPECT_THAT(user_layout_error(cd), HasSubstr("takes at most 2 tuning values, but cd_values[4..] hold 3"));
}

std::vector<unsigned> with_missing(Preset preset, double missing) {
  std::vector<unsigned> cd = lossy_user(preset, ErrorMode::Noa, 1e-3);
  const auto [low, high] = split_bound(missing);
  cd.push_back(low);
  cd.push_back(high);
  return cd;
}

TEST(MissingValue, LossyPresetsTakeSixValues) {
  for (Preset preset : {Preset::Pfpl, Preset::Fzgpu, Preset::Cusz, Preset::CuszHiTp, Preset::CuszHiCr}) {
    const std::vector<unsigned> cd = with_missing(preset, -1e34);
    const UserParams params = parse_user_layout(cd.data(), cd.size());
    EXPECT_EQ(params.bound, 1e-3);
    ASSERT_EQ(params.tuning.size(), 2u);
    EXPECT_TRUE(has_missing_value(params));
    EXPECT_EQ(missing_value(params), -1e34);
    EXPECT_EQ(user_cd_values(params), cd);
    EXPECT_THAT(describe(params), HasSubstr("missing value -9.9999999999999995e+33"));
  }
  const std::vector<unsigned> plain = lossy_user(Preset::Pfpl, ErrorMode::Abs, 1.0);
  EXPECT_FALSE(has_missing_value(parse_user_layout(plain.data(), plain.size())));
  EXPECT_EQ(max_tuning_values(Preset::Lossless), 0u);
  EXPECT_EQ(max_tuning_values(Preset::Default), 0u);
  EXPECT_EQ(max_tuning_values(Preset::Cusz), 2u);
}

TEST(MissingValue, RefusesFiveValues) {
  std::vector<unsigned> cd = with_missing(Preset::Pfpl, -1e34);
  cd.pop_back();
  EXPECT_THAT(user_layout_error(cd),
              HasSubstr("preset 2 (pfpl) takes 0 or 2 tuning values (cd_values[4], cd_values[5] = low and high 32 "
                        "bits of the missing value as an IEEE-754 double), but cd_values[4..] hold 1"));
}

Bytes element_bytes(const void* value, size_t size) {
  Bytes bytes(size);
  std::memcpy(bytes.data(), value, size);
  return bytes;
}

TEST(MissingValue, Float32NeedsAnExactValue) {
  const std::vector<unsigned> cd = with_missing(Preset::Cusz, -1e34);
  const UserParams params = parse_user_layout(cd.data(), cd.size());
  try {
    missing_value_element(params, DataType::of<float>());
    ADD_FAILURE() << "-1e34 is not a float32";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing value -9.9999999999999995e+33"));
    EXPECT_THAT(e.what(), HasSubstr("not representable as float32"));
  }
  const float f = -1e34f;
  const std::vector<unsigned> exact = with_missing(Preset::Cusz, static_cast<double>(f));
  const UserParams exact_params = parse_user_layout(exact.data(), exact.size());
  EXPECT_EQ(missing_value_element(exact_params, DataType::of<float>()), element_bytes(&f, 4));
  // Big-endian data: the element's bytes reversed (the tests run little-endian hosts).
  Bytes big = element_bytes(&f, 4);
  std::reverse(big.begin(), big.end());
  EXPECT_EQ(missing_value_element(exact_params, DataType{ElementClass::Float, 4, ByteOrder::Big}), big);
}

TEST(MissingValue, Float64IsTheBitsAndNanConverts) {
  const double d = -1e34;
  const std::vector<unsigned> cd = with_missing(Preset::Pfpl, d);
  const UserParams params = parse_user_layout(cd.data(), cd.size());
  EXPECT_EQ(missing_value_element(params, DataType::of<double>()), element_bytes(&d, 8));
  // Other element types: ignored (lossless there).
  EXPECT_TRUE(missing_value_element(params, DataType{ElementClass::Signed, 4, ByteOrder::Little}).empty());
  EXPECT_TRUE(missing_value_element(params, DataType{ElementClass::Opaque, 8, ByteOrder::Little}).empty());

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<unsigned> nan_cd = with_missing(Preset::Pfpl, nan);
  const UserParams nan_params = parse_user_layout(nan_cd.data(), nan_cd.size());
  const float nan_f = static_cast<float>(nan);
  EXPECT_EQ(missing_value_element(nan_params, DataType::of<float>()), element_bytes(&nan_f, 4));
  EXPECT_EQ(missing_value_element(nan_params, DataType::of<double>()), element_bytes(&nan, 8));
}

TEST(MissingValue, StoredAfterTheChunkDimsAndIdempotent) {
  StoredParams params = float32_params();
  params.user.preset = Preset::Pfpl;
  params.user.mode = ErrorMode::Noa;
  params.user.bound = 1e-3;
  const float f = -1e34f;
  const auto [low, high] = split_bound(static_cast<double>(f));
  params.user.tuning = {low, high};
  params.dataset.fill_value = missing_value_element(params.user, params.dataset.dtype);
  const std::vector<unsigned> stored = encode_stored(params);
  ASSERT_EQ(stored.size(), kStoredFixedWords + params.dataset.chunk_dims.size() + 2);
  EXPECT_EQ(stored[stored.size() - 2], low);
  EXPECT_EQ(stored.back(), high);
  EXPECT_EQ(stored_field(stored.data(), kFieldTuningCount), 2u);
  EXPECT_EQ(stored_field(stored.data(), kFieldFillDefined), 1u);
  const StoredParams decoded = decode_stored(stored.data(), stored.size());
  expect_same(decoded, params);
  // A second set_local starts from the stored words and gets the same answer.
  const UserParams again = parse_any_layout(stored.data(), stored.size());
  EXPECT_EQ(again.tuning, params.user.tuning);
  EXPECT_EQ(missing_value_element(again, params.dataset.dtype), params.dataset.fill_value);
}

// ---- the spline tuning, cd[6..10] (presets 5, 6) and the "no missing value" placeholder ----

constexpr unsigned kNone = kNoMissingValueWord;

// {preset, noa, 1e-3, words...}
std::vector<unsigned> lossy_with(Preset preset, const std::vector<unsigned>& words) {
  std::vector<unsigned> cd = lossy_user(preset, ErrorMode::Noa, 1e-3);
  cd.insert(cd.end(), words.begin(), words.end());
  return cd;
}

// {alpha low, alpha high, beta low, beta high}
std::vector<unsigned> alpha_beta_words(double alpha, double beta) {
  const auto [a_low, a_high] = split_bound(alpha);
  const auto [b_low, b_high] = split_bound(beta);
  return {a_low, a_high, b_low, b_high};
}

std::vector<unsigned> manual_words(double alpha, double beta) {
  std::vector<unsigned> words = {kNone, kNone, 3};
  const std::vector<unsigned> ab = alpha_beta_words(alpha, beta);
  words.insert(words.end(), ab.begin(), ab.end());
  return words;
}

const Preset kSplinePresets[] = {Preset::CuszHiTp, Preset::CuszHiCr};
const Preset kOtherLossyPresets[] = {Preset::Pfpl, Preset::Fzgpu, Preset::Cusz};

TEST(SplineTuning, PlaceholderMeansNoMissingValueForEveryLossyPreset) {
  EXPECT_EQ(kNoMissingValueWord, 0xFFFFFFFFu);
  for (Preset preset : {Preset::Pfpl, Preset::Fzgpu, Preset::Cusz, Preset::CuszHiTp, Preset::CuszHiCr}) {
    const std::vector<unsigned> cd = lossy_with(preset, {kNone, kNone});
    ASSERT_EQ(user_layout_error(cd), "") << preset_name(preset);
    const UserParams params = parse_user_layout(cd.data(), cd.size());
    EXPECT_FALSE(has_missing_value(params)) << preset_name(preset);
    EXPECT_THROW(missing_value(params), Error);
    EXPECT_TRUE(missing_value_element(params, DataType::of<float>()).empty());
    EXPECT_TRUE(missing_value_element(params, DataType::of<double>()).empty());
    EXPECT_THAT(describe(params), ::testing::Not(HasSubstr("missing")));
    EXPECT_EQ(user_cd_values(params), cd);  // kept as given
  }
  // Only both words together: one of them all ones is a missing value (a NaN).
  for (const std::vector<unsigned>& words : {std::vector<unsigned>{kNone, 0x7FF80000u}, {0u, kNone}}) {
    const std::vector<unsigned> cd = lossy_with(Preset::Pfpl, words);
    EXPECT_TRUE(has_missing_value(parse_user_layout(cd.data(), cd.size())));
  }
  // Lossless presets take no tuning words, the placeholder neither.
  EXPECT_THAT(user_layout_error({1, 0, 0, 0, kNone, kNone}),
              HasSubstr("preset 1 (lossless) takes no tuning values, but cd_values[4..] hold 2"));
}

TEST(SplineTuning, SplinePresetsTakeTheTuningWords) {
  for (Preset preset : kSplinePresets) {
    EXPECT_TRUE(takes_spline_tuning(preset));
    EXPECT_EQ(max_tuning_values(preset), 7u);
    // No tuning word: the engine's default.
    for (const std::vector<unsigned>& words : {std::vector<unsigned>{}, {kNone, kNone}}) {
      const std::vector<unsigned> cd = lossy_with(preset, words);
      const UserParams params = parse_user_layout(cd.data(), cd.size());
      const SplineChoice choice = spline_choice(params);
      EXPECT_FALSE(choice.given);
      EXPECT_EQ(choice.tuning, SplineTuning::kRatioFirst);
      EXPECT_EQ(to_options(params).spline_tuning, Options{}.spline_tuning);
      EXPECT_THAT(describe(params), HasSubstr("tuning ratio-first (default)"));
    }
    for (unsigned id = 0; id <= 2; ++id) {
      for (const double* missing : {static_cast<const double*>(nullptr), &kFloat32Missing}) {
        std::vector<unsigned> words = {kNone, kNone, id};
        if (missing) std::tie(words[0], words[1]) = split_bound(*missing);
        const std::vector<unsigned> cd = lossy_with(preset, words);
        ASSERT_EQ(user_layout_error(cd), "") << id;
        const UserParams params = parse_user_layout(cd.data(), cd.size());
        EXPECT_EQ(has_missing_value(params), missing != nullptr);
        if (missing) {
          EXPECT_EQ(missing_value(params), *missing);
        }
        const SplineChoice choice = spline_choice(params);
        EXPECT_TRUE(choice.given);
        EXPECT_EQ(static_cast<unsigned>(choice.tuning), id);
        // The mapping the filter does for every chunk (set_local and compress_chunk).
        const Options options = to_options(params);
        EXPECT_EQ(static_cast<unsigned>(options.spline_tuning), id);
        EXPECT_EQ(options.spline_alpha, 1.0);
        EXPECT_EQ(options.spline_beta, 1.0);
        EXPECT_NO_THROW(validate(options, DataType::of<float>()));
        EXPECT_THAT(describe(params), HasSubstr(std::string(", tuning ") +
                                                spline_tuning_name(static_cast<SplineTuning>(id))));
        EXPECT_THAT(describe(params), ::testing::Not(HasSubstr("(default)")));
        EXPECT_EQ(user_cd_values(params), cd);
      }
    }
    const std::vector<unsigned> cd = lossy_with(preset, manual_words(1.5, 4));
    const UserParams params = parse_user_layout(cd.data(), cd.size());
    const Options options = to_options(params);
    EXPECT_EQ(options.spline_tuning, SplineTuning::kManual);
    EXPECT_EQ(options.spline_alpha, 1.5);
    EXPECT_EQ(options.spline_beta, 4.0);
    EXPECT_NO_THROW(validate(options, DataType::of<float>()));
    EXPECT_THAT(describe(params), HasSubstr(", tuning manual alpha 1.5 beta 4"));
    // The words h5repack is given in docs/CD_VALUES.md.
    EXPECT_EQ(cd, (std::vector<unsigned>{static_cast<unsigned>(preset), 1, 3539053052u, 1062232653u, 4294967295u,
                                         4294967295u, 3, 0, 1073217536u, 0, 1074790400u}));
    // The ends of the range, and values that are not whole.
    for (const auto& [alpha, beta] : {std::make_pair(1.0, 1.0), std::make_pair(1024.0, 1024.0),
                                      std::make_pair(1.1, 1023.5)}) {
      const std::vector<unsigned> edge = lossy_with(preset, manual_words(alpha, beta));
      EXPECT_EQ(user_layout_error(edge), "") << alpha << " " << beta;
      const Options edge_options = to_options(parse_user_layout(edge.data(), edge.size()));
      EXPECT_EQ(bits_of(edge_options.spline_alpha), bits_of(alpha));
      EXPECT_EQ(bits_of(edge_options.spline_beta), bits_of(beta));
    }
    const std::vector<unsigned> odd = lossy_with(preset, manual_words(1.1, 1023.5));
    EXPECT_THAT(describe(parse_user_layout(odd.data(), odd.size())), HasSubstr("alpha 1.1 beta 1023.5"));
  }
  for (Preset preset : kOtherLossyPresets) {
    EXPECT_FALSE(takes_spline_tuning(preset));
    EXPECT_EQ(max_tuning_values(preset), 2u);
    const std::vector<unsigned> cd = lossy_with(preset, {});
    EXPECT_THAT(describe(parse_user_layout(cd.data(), cd.size())), ::testing::Not(HasSubstr("tuning")));
  }
  EXPECT_FALSE(takes_spline_tuning(Preset::Lossless));
  EXPECT_FALSE(takes_spline_tuning(Preset::Default));
}

TEST(SplineTuning, RefusesOtherCounts) {
  for (Preset preset : kSplinePresets) {
    const std::string who = "preset " + std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) + ")";
    for (size_t count : {1u, 4u, 5u, 6u}) {
      std::vector<unsigned> words = manual_words(2, 2);
      words.resize(count);
      const std::string error = user_layout_error(lossy_with(preset, words));
      EXPECT_THAT(error, HasSubstr(who + " takes 0, 2, 3 or 7 tuning values (")) << count;
      EXPECT_THAT(error, HasSubstr("), but cd_values[4..] hold " + std::to_string(count))) << count;
      // The message says what each word holds.
      EXPECT_THAT(error, HasSubstr("4294967295, 4294967295 for none"));
      EXPECT_THAT(error, HasSubstr("cd_values[6] = spline tuning (0 off, 1 ratio-first, 2 quality-first, 3 manual)"));
      EXPECT_THAT(error, HasSubstr("cd_values[7], cd_values[8] = alpha and cd_values[9], cd_values[10] = beta"));
    }
    for (size_t count : {8u, 9u, 16u}) {
      std::vector<unsigned> words = manual_words(2, 2);
      words.resize(count, 0u);
      EXPECT_THAT(user_layout_error(lossy_with(preset, words)),
                  HasSubstr(who + " takes at most 7 tuning values ("))
          << count;
      EXPECT_THAT(user_layout_error(lossy_with(preset, words)), HasSubstr("but cd_values[4..] hold " + std::to_string(count)));
    }
  }
  // The other lossy presets keep 0 or 2.
  for (Preset preset : kOtherLossyPresets) {
    const std::string who = "preset " + std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) + ")";
    for (size_t count : {3u, 7u}) {
      std::vector<unsigned> words = manual_words(2, 2);
      words.resize(count);
      const std::string error = user_layout_error(lossy_with(preset, words));
      EXPECT_THAT(error, HasSubstr(who + " takes at most 2 tuning values, but cd_values[4..] hold " +
                                   std::to_string(count)));
      EXPECT_THAT(error, HasSubstr("a spline tuning in cd_values[6..] applies to presets 5 (cuszhi-tp) and 6 (cuszhi-cr) only"));
    }
  }
}

TEST(SplineTuning, RefusesBadValues) {
  for (Preset preset : kSplinePresets) {
    const std::string who = "preset " + std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) + ")";
    for (unsigned id : {4u, 7u, 255u, 0xFFFFFFFFu}) {
      EXPECT_THAT(user_layout_error(lossy_with(preset, {kNone, kNone, id})),
                  HasSubstr("unknown spline tuning " + std::to_string(id) +
                            " in cd_values[6] (known: 0 off, 1 ratio-first, 2 quality-first, 3 manual)"));
      std::vector<unsigned> seven = manual_words(2, 2);
      seven[kTuningSpline] = id;
      EXPECT_THAT(user_layout_error(lossy_with(preset, seven)), HasSubstr("unknown spline tuning " + std::to_string(id)));
    }
    // Manual needs alpha and beta; the others take none.
    EXPECT_THAT(user_layout_error(lossy_with(preset, {kNone, kNone, 3})),
                HasSubstr(who + ": spline tuning 3 (manual) in cd_values[6] needs alpha and beta: cd_values[7], "
                                "cd_values[8] = low and high 32 bits of alpha and cd_values[9], cd_values[10] of beta "
                                "(IEEE-754 doubles), 11 values in all, but 7 were given"));
    for (unsigned id = 0; id <= 2; ++id) {
      std::vector<unsigned> seven = manual_words(2, 2);
      seven[kTuningSpline] = id;
      EXPECT_THAT(user_layout_error(lossy_with(preset, seven)),
                  HasSubstr(who + ": cd_values[7..10] (alpha and beta) go with spline tuning 3 (manual) only, but "
                                  "cd_values[6] holds " + std::to_string(id) + " (" +
                            spline_tuning_name(static_cast<SplineTuning>(id)) + ")"));
    }
    const double inf = std::numeric_limits<double>::infinity();
    for (double bad : {0.0, -0.0, 0.5, std::nextafter(1.0, 0.0), std::nextafter(1024.0, 2048.0), 1e300, -2.0, inf,
                       -inf, std::numeric_limits<double>::quiet_NaN()}) {
      const std::string alpha_error = user_layout_error(lossy_with(preset, manual_words(bad, 2)));
      EXPECT_THAT(alpha_error, HasSubstr(who + ": the manual spline tuning's alpha in cd_values[7..8] must be a finite "
                                               "number in [1, 1024], but it is "))
          << bad;
      const std::string beta_error = user_layout_error(lossy_with(preset, manual_words(2, bad)));
      EXPECT_THAT(beta_error, HasSubstr(who + ": the manual spline tuning's beta in cd_values[9..10] must be a finite "
                                              "number in [1, 1024], but it is "))
          << bad;
    }
    EXPECT_THAT(user_layout_error(lossy_with(preset, manual_words(0.5, 2))), HasSubstr("but it is 0.5"));
    EXPECT_THAT(user_layout_error(lossy_with(preset, manual_words(2, std::nextafter(1024.0, 2048.0)))),
                HasSubstr("but it is 1024.0000000000002"));
    EXPECT_THAT(user_layout_error(lossy_with(preset, manual_words(2, inf))), HasSubstr("but it is inf"));
  }
}

TEST(SplineTuning, EngineChecksAgain) {
  // validate() refuses what the filter refuses, for the options any caller builds.
  Options options;
  options.preset = Preset::CuszHiCr;
  options.mode = ErrorMode::Noa;
  options.bound = 1e-3;
  options.spline_tuning = SplineTuning::kManual;
  options.spline_alpha = 2000;
  EXPECT_THROW(validate(options, DataType::of<float>()), Error);
  options.spline_alpha = 2;
  options.spline_beta = 0.5;
  EXPECT_THROW(validate(options, DataType::of<float>()), Error);
  options.spline_beta = 4;
  EXPECT_NO_THROW(validate(options, DataType::of<float>()));
  options.spline_tuning = static_cast<SplineTuning>(4);
  EXPECT_THROW(validate(options, DataType::of<float>()), Error);
}

TEST(SplineTuning, StoredAfterTheChunkDimsAndIdempotent) {
  for (Preset preset : kSplinePresets) {
    for (const std::vector<unsigned>& words :
         {std::vector<unsigned>{kNone, kNone, 2}, manual_words(1.5, 4), std::vector<unsigned>{kNone, kNone}}) {
      const std::vector<unsigned> user = lossy_with(preset, words);
      StoredParams params = float32_params();
      params.dataset.chunk_dims = {32, 91, 91};
      params.user = parse_user_layout(user.data(), user.size());
      const std::vector<unsigned> stored = encode_stored(params);
      // 10 fixed words, the chunk dims, the tuning words as given: 20 words with
      // manual on a 3-D chunk (all of it shown by h5dump 1.10).
      ASSERT_EQ(stored.size(), kStoredFixedWords + 3 + words.size());
      EXPECT_LE(stored.size(), 20u);
      EXPECT_EQ(stored_field(stored.data(), kFieldTuningCount), words.size());
      EXPECT_EQ(std::vector<unsigned>(stored.end() - static_cast<long>(words.size()), stored.end()), words);
      EXPECT_EQ(stored_field(stored.data(), kFieldFillDefined), 0u);  // the placeholder is no fill value
      const StoredParams decoded = decode_stored(stored.data(), stored.size());
      expect_same(decoded, params);
      // What compress_chunk does with the stored words: the same Options.
      const Options from_stored = to_options(decoded.user);
      const Options from_user = to_options(params.user);
      EXPECT_EQ(from_stored.spline_tuning, from_user.spline_tuning);
      EXPECT_EQ(bits_of(from_stored.spline_alpha), bits_of(from_user.spline_alpha));
      EXPECT_EQ(bits_of(from_stored.spline_beta), bits_of(from_user.spline_beta));
      // A second set_local (h5repack of a filtered file) gives the same words.
      StoredParams again = params;
      again.user = parse_any_layout(stored.data(), stored.size());
      EXPECT_EQ(encode_stored(again), stored);
      EXPECT_EQ(user_cd_values(again.user), user);
      EXPECT_THAT(describe(decoded), HasSubstr(", tuning "));
    }
  }
  // A damaged stored tuning word is refused on read like a damaged user word.
  StoredParams params = float32_params();
  const std::vector<unsigned> user = lossy_with(Preset::CuszHiCr, {kNone, kNone, 2});
  params.user = parse_user_layout(user.data(), user.size());
  std::vector<unsigned> stored = encode_stored(params);
  stored.back() = 9;
  EXPECT_THAT(stored_layout_error(stored), HasSubstr("unknown spline tuning 9 in cd_values[6]"));
}

TEST(SplineTuning, OptionsToUserLayout) {
  for (Preset preset : kSplinePresets) {
    Options options;
    options.preset = preset;
    options.mode = ErrorMode::Noa;
    options.bound = 1e-3;
    // The default needs no words (the layout tools printed before).
    EXPECT_EQ(user_cd_values(options), lossy_user(preset, ErrorMode::Noa, 1e-3));
    for (SplineTuning tuning : {SplineTuning::kOff, SplineTuning::kQualityFirst}) {
      options.spline_tuning = tuning;
      EXPECT_EQ(user_cd_values(options), lossy_with(preset, {kNone, kNone, static_cast<unsigned>(tuning)}));
    }
    options.spline_tuning = SplineTuning::kManual;
    options.spline_alpha = 1.5;
    options.spline_beta = 4;
    const std::vector<unsigned> cd = user_cd_values(options);
    EXPECT_EQ(cd, lossy_with(preset, manual_words(1.5, 4)));
    const Options back = to_options(parse_user_layout(cd.data(), cd.size()));
    EXPECT_EQ(back.spline_tuning, SplineTuning::kManual);
    EXPECT_EQ(back.spline_alpha, 1.5);
    EXPECT_EQ(back.spline_beta, 4.0);
    EXPECT_EQ(h5repack_filter_argument(options),
              "UD=32850,0,11," + std::to_string(static_cast<unsigned>(preset)) +
                  ",1,3539053052,1062232653,4294967295,4294967295,3,0,1073217536,0,1074790400");
  }
  // Other presets ignore the spline fields (the engine does too).
  Options pfpl;
  pfpl.preset = Preset::Pfpl;
  pfpl.bound = 1.0;
  pfpl.spline_tuning = SplineTuning::kQualityFirst;
  EXPECT_EQ(user_cd_values(pfpl).size(), 4u);
}

std::string tuning_words_error(Preset preset, const double* missing, const SplineChoice* spline) {
  try {
    make_tuning_words(preset, missing, spline);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SplineTuning, MakeTuningWords) {
  const double missing = kFloat32Missing;
  const auto [m_low, m_high] = split_bound(missing);
  SplineChoice quality;
  quality.tuning = SplineTuning::kQualityFirst;
  SplineChoice manual;
  manual.tuning = SplineTuning::kManual;
  manual.alpha = 1.5;
  manual.beta = 4;
  EXPECT_TRUE(make_tuning_words(Preset::CuszHiCr, nullptr, nullptr).empty());
  EXPECT_EQ(make_tuning_words(Preset::Pfpl, &missing, nullptr), (std::vector<unsigned>{m_low, m_high}));
  EXPECT_EQ(make_tuning_words(Preset::CuszHiCr, nullptr, &quality), (std::vector<unsigned>{kNone, kNone, 2}));
  EXPECT_EQ(make_tuning_words(Preset::CuszHiTp, &missing, &quality), (std::vector<unsigned>{m_low, m_high, 2}));
  EXPECT_EQ(make_tuning_words(Preset::CuszHiTp, nullptr, &manual), manual_words(1.5, 4));
  EXPECT_THAT(tuning_words_error(Preset::Cusz, nullptr, &quality),
              HasSubstr("preset 4 (cusz) takes no spline tuning (cd_values[6..]): it applies to presets 5 (cuszhi-tp) "
                        "and 6 (cuszhi-cr) only"));
  SplineChoice alpha_without_manual = quality;
  alpha_without_manual.alpha = 2;
  EXPECT_THAT(tuning_words_error(Preset::CuszHiCr, nullptr, &alpha_without_manual),
              HasSubstr("alpha and beta (cd_values[7..10]) go with spline tuning 3 (manual) only, not quality-first"));
  SplineChoice out_of_range = manual;
  out_of_range.beta = 2048;
  EXPECT_THAT(tuning_words_error(Preset::CuszHiCr, nullptr, &out_of_range), HasSubstr("beta in cd_values[9..10]"));
  const double all_ones = join_bound(kNone, kNone);
  EXPECT_THAT(tuning_words_error(Preset::Pfpl, &all_ones, nullptr),
              HasSubstr("is the placeholder for \"no missing value\" in cd_values[4..5]"));
  EXPECT_THAT(tuning_words_error(Preset::Lossless, &missing, nullptr), HasSubstr("preset 1 (lossless) takes no tuning values"));
}

// A smooth 3-D float32 field with some structure, for the end-to-end check below.
std::vector<float> wavy_field(size_t n) {
  std::vector<float> field(n * n * n);
  for (size_t z = 0; z < n; ++z)
    for (size_t y = 0; y < n; ++y)
      for (size_t x = 0; x < n; ++x)
        field[(z * n + y) * n + x] = static_cast<float>(std::sin(0.21 * x) * std::cos(0.13 * y + 0.05 * z * z) +
                                                        0.3 * std::sin(0.7 * (x + y + z)) + 1e-3 * x * y);
  return field;
}

// The rank of a frame's spline stage (config v2: 0x82, width, code bytes,
// form, rank, ...; docs/FORMAT.md), 0 without one.
unsigned spline_rank(const Bytes& frame) {
  for (const StageInfo& s : inspect(frame.data(), frame.size()).stages)
    if (s.name == "spline" && s.config.size() > 4 && s.config[0] == 0x82) return s.config[4];
  return 0;
}

TEST(SplineTuning, WordsReachTheEngine) {
  // Frames from the words' Options are those of the Options set directly,
  // and the tunings differ from one another (so the words do reach the engine).
  const size_t n = 40;
  const std::vector<float> field = wavy_field(n);
  const std::vector<uint64_t> dims = {n, n, n};
  for (Preset preset : kSplinePresets) {
    std::vector<Bytes> frames;
    for (const std::vector<unsigned>& words :
         {std::vector<unsigned>{}, std::vector<unsigned>{kNone, kNone, 0}, std::vector<unsigned>{kNone, kNone, 2},
          manual_words(2, 8), manual_words(1, 1)}) {
      const std::vector<unsigned> cd = lossy_with(preset, words);
      Options from_words = to_options(parse_user_layout(cd.data(), cd.size()));
      from_words.threads = 1;
      const Bytes frame = compress(field.data(), field.size() * sizeof(float), DataType::of<float>(), dims, from_words);
      Options direct;
      direct.preset = preset;
      direct.mode = ErrorMode::Noa;
      direct.bound = 1e-3;
      direct.threads = 1;
      const SplineChoice choice = spline_choice(parse_user_layout(cd.data(), cd.size()));
      direct.spline_tuning = choice.tuning;
      direct.spline_alpha = choice.alpha;
      direct.spline_beta = choice.beta;
      EXPECT_EQ(frame, compress(field.data(), field.size() * sizeof(float), DataType::of<float>(), dims, direct));
      frames.push_back(frame);
    }
    EXPECT_NE(frames[1], frames[0]) << "off gave ratio-first's frame";
    EXPECT_NE(frames[2], frames[0]) << "quality-first gave ratio-first's frame";
    EXPECT_NE(frames[3], frames[0]) << "manual 2, 8 gave ratio-first's frame";
    EXPECT_NE(frames[3], frames[2]) << "manual 2, 8 gave quality-first's frame";
    // Manual 1, 1 is ratio-first's spline; cuszhi-cr's ratio-first may also
    // choose Lorenzo or the folded spline for the chunk (manual never does).
    if (preset != Preset::CuszHiCr || spline_rank(frames[0]) == 3)
      EXPECT_EQ(frames[4], frames[0]) << "manual 1, 1 is ratio-first";
  }
}

TEST(UserLayout, IsNotStored) {
  const std::vector<unsigned> cd = {1, 0, 0, 0};
  EXPECT_FALSE(is_stored_layout(cd.data(), cd.size()));
  EXPECT_FALSE(is_stored_layout(nullptr, 0));
}

// ---- availability ---------------------------------------------------------------

TEST(Availability, LosslessIsAlwaysBuilt) {
  EXPECT_NO_THROW(require_available(Preset::Default));
  EXPECT_NO_THROW(require_available(Preset::Lossless));
}

TEST(Availability, UnbuiltPresetIsRefusedByName) {
  for (unsigned id = 2; id <= 6; ++id) {
    const Preset preset = static_cast<Preset>(id);
    if (preset_is_available(preset)) continue;
    try {
      require_available(preset);
      FAIL() << "preset " << id << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()),
                  HasSubstr("preset " + std::to_string(id) + " (" + preset_name(preset) + ") is not available"));
      EXPECT_THAT(std::string(e.what()), HasSubstr("1 lossless"));
    }
    return;
  }
  GTEST_SKIP() << "every preset is available in this build";
}

// ---- stored layout --------------------------------------------------------------

TEST(StoredLayout, WordPositionsArePinned) {
  // Files carry these words: a change here breaks every file already written.
  StoredParams params;
  params.user.preset = Preset::Pfpl;
  params.user.mode = ErrorMode::Noa;
  params.user.bound = 1e-3;
  params.dataset.dtype = {ElementClass::Float, 8, ByteOrder::Big};
  params.dataset.hdf5_class = 1;
  params.dataset.float_fields = ieee_fields(8);
  params.dataset.fill_value = {1, 2, 3, 4, 5, 6, 7, 8};
  params.dataset.chunk_dims = {7, 91, 300};
  const std::vector<unsigned> expected = {
      0x5A46CD01u,               // marker | layout version 1
      0x03000102u,               // rank 3 | tuning 0 | mode 1 | preset 2
      0xD2F1A9FCu, 0x3F50624Du,  // bound low, high
      0x00000153u,               // HDF5 class 1 | fill defined | sign 0 | big-endian | element class 3
      8,                         // element size
      0x000B343Fu,               // mant_pos 0 | exp_size 11 | exp_pos 52 | sign_pos 63
      0x0003FF34u,               // exp_bias 1023 | mant_size 52
      0x04030201u, 0x08070605u,  // fill value
      7, 91, 300};               // chunk dims
  EXPECT_EQ(encode_stored(params), expected);
  EXPECT_TRUE(is_stored_layout(expected.data(), expected.size()));
  expect_same(decode_stored(expected.data(), expected.size()), params);
}

TEST(StoredLayout, IntegerWordsArePinned) {
  StoredParams params;
  params.user.preset = Preset::Lossless;
  params.dataset.dtype = {ElementClass::Signed, 2, ByteOrder::Little};
  params.dataset.hdf5_class = 0;  // H5T_INTEGER
  params.dataset.hdf5_sign = 1;   // H5T_SGN_2
  params.dataset.fill_value = {0xF9, 0xFF};
  params.dataset.chunk_dims = {1000};
  const std::vector<unsigned> expected = {0x5A46CD01u, 0x01000001u, 0, 0, 0x00000062u, 2, 0, 0, 0x0000FFF9u, 0, 1000};
  EXPECT_EQ(encode_stored(params), expected);
  expect_same(decode_stored(expected.data(), expected.size()), params);
}

TEST(StoredLayout, FirstFilterFlagIsBit7OfWord4) {
  // Readers hold a frame to exactly one chunk only when this bit says that
  // H5Z-FZ is the first filter; layouts written before it existed read as 0.
  StoredParams params;
  params.user.preset = Preset::Lossless;
  params.dataset.dtype = {ElementClass::Opaque, 1, ByteOrder::Little};
  params.dataset.hdf5_class = 8;  // H5T_ENUM (h5py's bool)
  params.dataset.chunk_dims = {1u << 26};
  params.dataset.first_filter = true;
  const std::vector<unsigned> expected = {0x5A46CD01u, 0x01000001u, 0, 0, 0x00000880u, 1, 0, 0, 0, 0, 1u << 26};
  EXPECT_EQ(encode_stored(params), expected);
  expect_same(decode_stored(expected.data(), expected.size()), params);
  std::vector<unsigned> before_the_flag = expected;
  before_the_flag[kWordType] &= ~kFieldFirstFilter.mask();
  EXPECT_FALSE(decode_stored(before_the_flag.data(), before_the_flag.size()).dataset.first_filter);
}

TEST(StoredLayout, CompactForOldTools) {
  // h5py before 3.16 reads 16 cd_values correctly, h5dump 1.10 20: a 3-D
  // chunk takes 13 words and every rank up to 6 at most 16.
  StoredParams params = float32_params();
  params.dataset.chunk_dims = {64, 64, 64};
  EXPECT_EQ(encode_stored(params).size(), 13u);
  params.dataset.chunk_dims = {2, 3, 4, 5, 6, 7};
  EXPECT_EQ(encode_stored(params).size(), 16u);
  for (size_t rank = 0; rank <= 6; ++rank) {
    params.dataset.chunk_dims.assign(rank, 9);
    EXPECT_LE(encode_stored(params).size(), 16u) << rank;
  }
  EXPECT_EQ(kStoredFixedWords, 10u);
}

TEST(StoredLayout, RoundTripsManyDatasets) {
  std::vector<StoredParams> cases;
  cases.push_back(float32_params());
  {
    StoredParams p = float32_params();
    p.user.preset = Preset::CuszHiCr;
    p.user.mode = ErrorMode::Rel;
    p.user.bound = 0.125;
    p.dataset.dtype = {ElementClass::Float, 2, ByteOrder::Little};
    p.dataset.float_fields = ieee_fields(2);
    p.dataset.fill_value = {0x00, 0x7C};
    cases.push_back(p);
  }
  {
    StoredParams p;
    p.dataset.dtype = {ElementClass::Signed, 2, ByteOrder::Little};
    p.dataset.hdf5_class = 0;
    p.dataset.hdf5_sign = 1;
    p.dataset.fill_value = {0xF9, 0xFF};
    p.dataset.chunk_dims = {1000};
    cases.push_back(p);
  }
  {
    StoredParams p;
    p.user.preset = Preset::Default;
    p.dataset.dtype = {ElementClass::Opaque, 12, ByteOrder::Little};
    p.dataset.hdf5_class = 6;  // compound
    p.dataset.chunk_dims = {30};
    cases.push_back(p);
  }
  {
    StoredParams p;
    p.dataset.dtype = {ElementClass::Unsigned, 1, ByteOrder::Little};
    p.dataset.fill_value = {0xAB};
    cases.push_back(p);  // rank 0: no chunk dims
  }
  {
    StoredParams p = float32_params();
    p.dataset.chunk_dims.assign(kMaxRank, 0xFFFFFFFFu);
    cases.push_back(p);
  }
  for (const StoredParams& params : cases) {
    const std::vector<unsigned> cd = encode_stored(params);
    EXPECT_EQ(cd.size(), kStoredFixedWords + params.dataset.chunk_dims.size());
    EXPECT_LE(cd.size(), kMaxStoredValues);
    expect_same(decode_stored(cd.data(), cd.size()), params);
  }
}

TEST(StoredLayout, SecondSetLocalRewritesIdempotently) {
  // What set_local does: user choice from whatever layout is there, plus what
  // HDF5 says about the dataset; running it on its own output changes nothing.
  StoredParams first = float32_params();
  const auto user = lossy_user(Preset::Pfpl, ErrorMode::Abs, 0.01);
  first.user = parse_any_layout(user.data(), user.size());
  const std::vector<unsigned> once = encode_stored(first);

  StoredParams second = float32_params();
  second.user = parse_any_layout(once.data(), once.size());
  const std::vector<unsigned> twice = encode_stored(second);
  EXPECT_EQ(once, twice);

  // A rechunk (h5repack -l) keeps the user's choice and takes the new shape.
  StoredParams rechunked = float32_params();
  rechunked.dataset.chunk_dims = {4, 4, 4};
  rechunked.user = parse_any_layout(once.data(), once.size());
  const std::vector<unsigned> moved = encode_stored(rechunked);
  const StoredParams decoded = decode_stored(moved.data(), moved.size());
  EXPECT_EQ(decoded.dataset.chunk_dims, (std::vector<uint32_t>{4, 4, 4}));
  EXPECT_EQ(bits_of(decoded.user.bound), bits_of(0.01));
  EXPECT_EQ(user_cd_values(decoded.user), user);
}

TEST(StoredLayout, FillBytesDoNotDependOnTheHost) {
  StoredParams params;
  params.dataset.dtype = {ElementClass::Signed, 4, ByteOrder::Big};
  params.dataset.fill_value = {0x12, 0x34, 0x56, 0x78};
  const std::vector<unsigned> cd = encode_stored(params);
  EXPECT_EQ(stored_field(cd.data(), kFieldFillDefined), 1u);
  EXPECT_EQ(cd[kWordFillLow], 0x78563412u);
  EXPECT_EQ(cd[kWordFillHigh], 0u);
  EXPECT_EQ(decode_stored(cd.data(), cd.size()).dataset.fill_value, params.dataset.fill_value);
}

TEST(StoredLayout, EncodeRefusesInconsistentInput) {
  StoredParams params = float32_params();
  params.dataset.fill_value = {1, 2};  // 2 bytes for a 4-byte element
  EXPECT_THROW(encode_stored(params), Error);
  params = float32_params();
  params.dataset.chunk_dims.assign(kMaxRank + 1, 1);
  EXPECT_THROW(encode_stored(params), Error);
  params = float32_params();
  params.dataset.dtype = {ElementClass::Opaque, 16, ByteOrder::Little};
  params.dataset.fill_value.assign(16, 0);
  EXPECT_THROW(encode_stored(params), Error);
}

std::string encode_error(const StoredParams& params) {
  try {
    encode_stored(params);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StoredLayout, EncodeRefusesFieldsThatDoNotFit) {
  StoredParams params = float32_params();
  params.dataset.float_fields.sign_pos = 256;  // a 33-byte custom float
  EXPECT_THAT(encode_error(params),
              HasSubstr("cannot store float sign position 256: stored cd_values[6] bits 0-7 holds at most 255"));
  params = float32_params();
  params.dataset.float_fields.exp_bias = 1u << 24;
  EXPECT_THAT(encode_error(params), HasSubstr("float exponent bias 16777216: stored cd_values[7] bits 8-31"));
  params = float32_params();
  params.dataset.float_fields.exp_bias = (1u << 24) - 1;  // the largest that fits
  const std::vector<unsigned> cd = encode_stored(params);
  EXPECT_EQ(decode_stored(cd.data(), cd.size()).dataset.float_fields.exp_bias, (1u << 24) - 1);
  params = float32_params();
  params.dataset.hdf5_class = 256;
  EXPECT_THAT(encode_error(params), HasSubstr("cannot store HDF5 class 256"));
  params = float32_params();
  params.dataset.hdf5_sign = 2;
  EXPECT_THAT(encode_error(params), HasSubstr("cannot store HDF5 sign 2: stored cd_values[4] bit 5"));
  // Preset and mode are 8-bit enums, rank and tuning count are checked before
  // (at most 32 and 16): their 8-bit fields always fit.
}

TEST(StoredLayout, RefusesDamage) {
  const std::vector<unsigned> good = encode_stored(float32_params());
  ASSERT_EQ(good.size(), 12u);
  ASSERT_EQ(stored_layout_error(good), "");

  EXPECT_THAT(stored_layout_error({1, 0, 0, 0}), HasSubstr("not in the stored layout"));
  EXPECT_THAT(stored_layout_error({0x5A47CD01u}), HasSubstr("not in the stored layout"));

  std::vector<unsigned> cd(good.begin(), good.begin() + 9);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("stored cd_values are truncated: 9 values, at least 10"));
  cd.assign(good.begin(), good.begin() + 1);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("truncated: 1 values"));

  for (unsigned version : {0u, 2u, 255u}) {
    cd = good;
    cd[kWordMarker] = kStoredMarker | version;
    EXPECT_TRUE(is_stored_layout(cd.data(), cd.size()));
    EXPECT_THAT(stored_layout_error(cd), HasSubstr("layout version " + std::to_string(version) + " is not understood"));
    EXPECT_THAT(stored_layout_error(cd), HasSubstr("upgrade the plugin"));
    cd.resize(3);  // a later version may be shorter: the version is what is reported
    EXPECT_THAT(stored_layout_error(cd), HasSubstr("layout version " + std::to_string(version)));
  }

  cd = good;
  cd.pop_back();
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("inconsistent: 11 values for rank 2 and 0 tuning values"));
  cd = good;
  cd.push_back(0);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("inconsistent: 13 values for rank 2"));
  cd = good;
  cd[kWordChoice] = (cd[kWordChoice] & ~kFieldRank.mask()) | (33u << kFieldRank.shift);
  cd.resize(kStoredFixedWords + 33);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("inconsistent: 43 values for rank 33"));
  cd = good;
  cd[kWordChoice] = (cd[kWordChoice] & ~kFieldRank.mask()) | (3u << kFieldRank.shift);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("inconsistent: 12 values for rank 3"));
  cd = good;
  cd[kWordChoice] |= 1u << kFieldTuningCount.shift;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("inconsistent: 12 values for rank 2 and 1 tuning values"));
  cd = good;
  cd[kWordChoice] |= 17u << kFieldTuningCount.shift;
  cd.resize(cd.size() + 17);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("and 17 tuning values"));

  cd = good;
  cd[kWordChoice] = (cd[kWordChoice] & ~kFieldPreset.mask()) | 12u;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("unknown preset 12 in stored cd_values[1] bits 0-7"));
  cd = good;
  cd[kWordChoice] |= 5u << kFieldMode.shift;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("unknown error-bound mode 5 in stored cd_values[1] bits 8-15"));
  cd = good;
  cd[kWordChoice] = (cd[kWordChoice] & ~kFieldPreset.mask()) | static_cast<unsigned>(Preset::Pfpl);
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("needs a positive finite error bound"));

  cd = good;
  cd[kWordType] = (cd[kWordType] & ~kFieldElementClass.mask()) | 4u;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("unknown element class 4"));
  cd = good;
  cd[kWordType] |= 0xFu;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("unknown element class 15"));
  cd = good;
  cd[kWordElementSize] = 0;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("element size of 0"));
  for (unsigned bit : {16u, 23u, 31u}) {
    cd = good;
    cd[kWordType] |= 1u << bit;
    EXPECT_THAT(stored_layout_error(cd), HasSubstr("stored cd_values[4] has reserved bits set")) << bit;
  }
  cd = good;
  cd[kWordType] |= 0x80010000u;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("reserved bits set (0x80010000)"));
  cd = good;
  cd[kWordType] |= kFieldFillDefined.mask();
  cd[kWordElementSize] = 16;
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("fill value for a 16-byte element"));
  cd = good;
  cd[kWordFillHigh] = 1;  // no fill value, yet fill bytes
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("fill value bytes beyond an absent fill value"));
  cd = good;
  cd[kWordType] |= kFieldFillDefined.mask();
  cd[kWordFillHigh] = 0x100;  // byte 5 of a 4-byte element's fill value
  EXPECT_THAT(stored_layout_error(cd), HasSubstr("fill value bytes beyond the 4-byte element"));
}

TEST(AnyLayout, ReadsBoth) {
  const auto user = lossy_user(Preset::Cusz, ErrorMode::Noa, 1e-4);
  StoredParams params = float32_params();
  params.user = parse_user_layout(user.data(), user.size());
  const std::vector<unsigned> stored = encode_stored(params);
  for (const std::vector<unsigned>& cd : {user, stored}) {
    const UserParams parsed = parse_any_layout(cd.data(), cd.size());
    EXPECT_EQ(parsed.preset, Preset::Cusz);
    EXPECT_EQ(parsed.mode, ErrorMode::Noa);
    EXPECT_EQ(bits_of(parsed.bound), bits_of(1e-4));
  }
}

// ---- the user layout for tools --------------------------------------------------

TEST(UserCdValues, LosslessIsOneWord) {
  EXPECT_EQ(user_cd_values(Options{}), std::vector<unsigned>{1});
  Options options;
  options.preset = Preset::Default;
  EXPECT_EQ(user_cd_values(options), std::vector<unsigned>{0});
}

TEST(UserCdValues, LossyIsFourWordsAndParsesBack) {
  Options options;
  options.preset = Preset::Fzgpu;
  options.mode = ErrorMode::Rel;
  options.bound = 2.5e-5;
  const std::vector<unsigned> cd = user_cd_values(options);
  const auto [low, high] = split_bound(2.5e-5);
  EXPECT_EQ(cd, (std::vector<unsigned>{3, 2, low, high}));
  const Options back = to_options(parse_user_layout(cd.data(), cd.size()));
  EXPECT_EQ(back.preset, options.preset);
  EXPECT_EQ(back.mode, options.mode);
  EXPECT_EQ(bits_of(back.bound), bits_of(options.bound));
}

TEST(UserCdValues, H5repackArgument) {
  EXPECT_EQ(h5repack_filter_argument(Options{}), "UD=32850,0,1,1");
  EXPECT_EQ(h5repack_filter_argument(Options{}, true), "UD=32850,1,1,1");
  Options options;
  options.preset = Preset::Pfpl;
  options.bound = 1.0;
  EXPECT_EQ(h5repack_filter_argument(options), "UD=32850,0,4,2,0,0,1072693248");
}

TEST(Describe, NamesTheChoice) {
  StoredParams params = float32_params();
  params.user.preset = Preset::Pfpl;
  params.user.mode = ErrorMode::Abs;
  params.user.bound = 0.5;
  const std::string text = describe(params);
  EXPECT_THAT(text, HasSubstr("preset 2 (pfpl)"));
  EXPECT_THAT(text, HasSubstr("0.5"));
  EXPECT_THAT(text, HasSubstr("float32 little-endian"));
  EXPECT_THAT(text, HasSubstr("chunk 16x50"));
  EXPECT_EQ(describe(DataType{ElementClass::Signed, 8, ByteOrder::Big}), "int64 big-endian");
  EXPECT_EQ(describe(DataType{ElementClass::Unsigned, 1, ByteOrder::Little}), "uint8");
  EXPECT_EQ(describe(DataType{ElementClass::Opaque, 12, ByteOrder::Little}), "opaque 12-byte");
}

TEST(IeeeFields, StandardLayouts) {
  EXPECT_EQ(ieee_fields(2), (FloatFields{15, 10, 5, 0, 10, 15}));
  EXPECT_EQ(ieee_fields(4), (FloatFields{31, 23, 8, 0, 23, 127}));
  EXPECT_EQ(ieee_fields(8), (FloatFields{63, 52, 11, 0, 52, 1023}));
  EXPECT_EQ(ieee_fields(16), FloatFields{});
}

}  // namespace
}  // namespace fz::filter
