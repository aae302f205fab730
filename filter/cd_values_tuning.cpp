// The tuning words after the bound (user cd_values[4..], stored after the
// chunk dims): the lossy presets' missing value and the spline tuning of
// presets 5 and 6, checked (cd_detail::check_tuning_words, which both layouts
// run), built (make_tuning_words) and read (spline_choice, missing_value,
// missing_value_element). cd_values.hpp documents the words.
#include "cd_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cd_values_internal.hpp"

namespace fz::filter {

using cd_detail::check_tuning_words;
using cd_detail::fail;
using cd_detail::format_double;
using cd_detail::format_shortest;
using cd_detail::preset_who;

namespace {

const char* const kMissingWordsText =
    "cd_values[4], cd_values[5] = low and high 32 bits of the missing value as an IEEE-754 double";

const char* const kSplineWordsText =
    "cd_values[4], cd_values[5] = low and high 32 bits of the missing value as an IEEE-754 double, "
    "or 4294967295, 4294967295 for none; cd_values[6] = spline tuning (0 off, 1 ratio-first, "
    "2 quality-first, 3 manual); with 3, cd_values[7], cd_values[8] = alpha and cd_values[9], "
    "cd_values[10] = beta, doubles split like the bound";

std::string known_spline_tunings() {
  std::string list;
  for (unsigned id = 0; id <= static_cast<unsigned>(SplineTuning::kManual); ++id) {
    if (!list.empty()) list += ", ";
    list += std::to_string(id) + " " + spline_tuning_name(static_cast<SplineTuning>(id));
  }
  return list;
}

// alpha or beta of the manual tuning: finite, in [1, kMaxSplineAlphaBeta].
void check_alpha_beta(Preset preset, const char* name, const char* where, double value) {
  if (std::isfinite(value) && value >= 1.0 && value <= kMaxSplineAlphaBeta) return;
  fail(preset_who(preset) + ": the manual spline tuning's " + name + " in " + where +
       " must be a finite number in [1, " + format_shortest(kMaxSplineAlphaBeta) + "], but it is " +
       format_shortest(value));
}

}  // namespace

// The tuning words after the bound: none for lossless presets; 0 or 2 (the
// missing value) for lossy ones; 0, 2, 3 or 7 for presets 5 and 6 (the
// missing value or its placeholder, then the spline tuning).
void cd_detail::check_tuning_words(const UserParams& params) {
  const size_t n = params.tuning.size();
  const std::string held = "but cd_values[4..] hold " + std::to_string(n);
  const std::string who = preset_who(params.preset);
  if (!preset_is_lossy(params.preset)) {
    if (n) fail(who + " takes no tuning values, " + held);
    return;
  }
  if (!takes_spline_tuning(params.preset)) {
    if (n == 1) fail(who + " takes 0 or 2 tuning values (" + kMissingWordsText + "), " + held);
    if (n > kMissingValueWords) {
      fail(who + " takes at most 2 tuning values, " + held + " (cd_values[4], cd_values[5]: the missing value; " +
           "a spline tuning in cd_values[6..] applies to presets 5 (cuszhi-tp) and 6 (cuszhi-cr) only)");
    }
    return;
  }
  if (n > kSplineManualWords) fail(who + " takes at most 7 tuning values (" + kSplineWordsText + "), " + held);
  if (n != 0 && n != kMissingValueWords && n != kSplineTuningWords && n != kSplineManualWords) {
    fail(who + " takes 0, 2, 3 or 7 tuning values (" + kSplineWordsText + "), " + held);
  }
  if (n < kSplineTuningWords) return;
  const unsigned id = params.tuning[kTuningSpline];
  if (id > static_cast<unsigned>(SplineTuning::kManual)) {
    fail("unknown spline tuning " + std::to_string(id) + " in cd_values[6] (known: " + known_spline_tunings() + ")");
  }
  const bool manual = id == static_cast<unsigned>(SplineTuning::kManual);
  if (manual && n != kSplineManualWords) {
    fail(who + ": spline tuning 3 (manual) in cd_values[6] needs alpha and beta: cd_values[7], cd_values[8] = low "
         "and high 32 bits of alpha and cd_values[9], cd_values[10] of beta (IEEE-754 doubles), 11 values in all, "
         "but " + std::to_string(kUserTuning + n) + " were given");
  }
  if (!manual && n == kSplineManualWords) {
    fail(who + ": cd_values[7..10] (alpha and beta) go with spline tuning 3 (manual) only, but cd_values[6] holds " +
         std::to_string(id) + " (" + spline_tuning_name(static_cast<SplineTuning>(id)) +
         "); give 7 values for it, or 3 in cd_values[6]");
  }
  if (manual) {
    check_alpha_beta(params.preset, "alpha", "cd_values[7..8]",
                     join_bound(params.tuning[kTuningAlphaLow], params.tuning[kTuningAlphaHigh]));
    check_alpha_beta(params.preset, "beta", "cd_values[9..10]",
                     join_bound(params.tuning[kTuningBetaLow], params.tuning[kTuningBetaHigh]));
  }
}

size_t max_tuning_values(Preset preset) {
  if (takes_spline_tuning(preset)) return kSplineManualWords;
  return preset_is_lossy(preset) ? kMissingValueWords : 0;
}

bool takes_spline_tuning(Preset preset) { return preset == Preset::CuszHiTp || preset == Preset::CuszHiCr; }

bool has_missing_value(const UserParams& params) {
  return preset_is_lossy(params.preset) && params.tuning.size() >= kMissingValueWords &&
         !(params.tuning[kTuningMissingLow] == kNoMissingValueWord &&
           params.tuning[kTuningMissingHigh] == kNoMissingValueWord);
}

SplineChoice spline_choice(const UserParams& params) {
  SplineChoice choice;
  if (!takes_spline_tuning(params.preset) || params.tuning.size() < kSplineTuningWords) return choice;
  choice.given = true;
  choice.tuning = static_cast<SplineTuning>(params.tuning[kTuningSpline]);
  if (choice.tuning == SplineTuning::kManual && params.tuning.size() >= kSplineManualWords) {
    choice.alpha = join_bound(params.tuning[kTuningAlphaLow], params.tuning[kTuningAlphaHigh]);
    choice.beta = join_bound(params.tuning[kTuningBetaLow], params.tuning[kTuningBetaHigh]);
  }
  return choice;
}

std::vector<unsigned> make_tuning_words(Preset preset, const double* missing, const SplineChoice* spline) {
  UserParams params;
  params.preset = preset;
  if (missing) {
    const auto [low, high] = split_bound(*missing);
    if (low == kNoMissingValueWord && high == kNoMissingValueWord) {
      fail("the missing value whose 64 bits are all ones (a NaN) is the placeholder for \"no missing value\" in "
           "cd_values[4..5]; NaN is kept exactly anyway, give no missing value or another NaN");
    }
    params.tuning = {low, high};
  }
  if (spline) {
    if (!takes_spline_tuning(preset)) {
      fail(preset_who(preset) + " takes no spline tuning (cd_values[6..]): it applies to presets 5 (cuszhi-tp) and "
           "6 (cuszhi-cr) only");
    }
    const bool manual = spline->tuning == SplineTuning::kManual;
    if (!manual && (spline->alpha != 1.0 || spline->beta != 1.0)) {
      fail(preset_who(preset) + ": alpha and beta (cd_values[7..10]) go with spline tuning 3 (manual) only, not " +
           spline_tuning_name(spline->tuning));
    }
    if (!missing) params.tuning = {kNoMissingValueWord, kNoMissingValueWord};
    params.tuning.push_back(static_cast<unsigned>(spline->tuning));
    if (manual) {
      for (const double value : {spline->alpha, spline->beta}) {
        const auto [low, high] = split_bound(value);
        params.tuning.push_back(low);
        params.tuning.push_back(high);
      }
    }
  }
  if (!params.tuning.empty() && !preset_is_lossy(preset)) {
    fail(preset_who(preset) + " takes no tuning values (a missing value or a spline tuning applies to lossy presets)");
  }
  check_tuning_words(params);
  return params.tuning;
}

double missing_value(const UserParams& params) {
  if (!has_missing_value(params)) fail("no missing value in the tuning words");
  return join_bound(params.tuning[kTuningMissingLow], params.tuning[kTuningMissingHigh]);
}

Bytes missing_value_element(const UserParams& params, const DataType& dtype) {
  if (!has_missing_value(params) || dtype.element_class != ElementClass::Float) return {};
  const double value = missing_value(params);
  Bytes element(dtype.size);
  if (dtype.size == 8) {
    std::memcpy(element.data(), &value, 8);
  } else if (dtype.size == 4) {
    const float narrow = static_cast<float>(value);
    const bool exact = std::isnan(value) ? std::isnan(narrow) : static_cast<double>(narrow) == value;
    if (!exact) {
      fail("missing value " + format_double(value) + " (cd_values[4..5]) is not representable as float32 (nearest " +
           format_double(static_cast<double>(narrow)) + "); give the float32 value exactly, e.g. the "
           "variable's _FillValue read as a float32 and widened to a double");
    }
    std::memcpy(element.data(), &narrow, 4);
  } else {
    return {};  // float16: no exact host conversion here; HDF5's fill value still applies
  }
  // memcpy gave the host's order; the data's may differ.
  const bool host_little = [] {
    const uint16_t one = 1;
    uint8_t first = 0;
    std::memcpy(&first, &one, 1);
    return first == 1;
  }();
  if (host_little != (dtype.order == ByteOrder::Little)) std::reverse(element.begin(), element.end());
  return element;
}

}  // namespace fz::filter
