#include "cd_values.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>

namespace fz::filter {
namespace {

constexpr unsigned kLastMode = static_cast<unsigned>(ErrorMode::Rel);

[[noreturn]] void fail(const std::string& message) { throw Error(message); }

std::string preset_label(Preset preset) {
  return std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) + ")";
}

// Preset lists come from the engine's preset table (fz::preset_table).
std::string known_presets() {
  std::string list;
  for (const PresetInfo& preset : preset_table()) {
    if (!list.empty()) list += ", ";
    list += std::to_string(static_cast<unsigned>(preset.id)) + " " + preset.name;
  }
  return list;
}

std::string known_modes() {
  std::string list;
  for (unsigned id = 0; id <= kLastMode; ++id) {
    if (!list.empty()) list += ", ";
    list += std::to_string(id) + " " + mode_name(static_cast<ErrorMode>(id));
  }
  return list;
}

std::string format_double(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

// The fewest digits that give the double back ("1.5", "1.1"), for alpha and beta.
std::string format_shortest(double value) {
  for (int digits = 1; digits < 17; ++digits) {
    std::ostringstream out;
    out.precision(digits);
    out << value;
    if (std::strtod(out.str().c_str(), nullptr) == value) return out.str();
  }
  return format_double(value);
}

Preset checked_preset(unsigned word, const char* where) {
  if (word > 0xFF || !find_preset(static_cast<Preset>(word))) {
    fail("unknown preset " + std::to_string(word) + " in " + where + " (known presets: " +
         known_presets() + ")");
  }
  return static_cast<Preset>(word);
}

ErrorMode checked_mode(unsigned word, const char* where) {
  if (word > kLastMode) {
    fail("unknown error-bound mode " + std::to_string(word) + " in " + where + " (known modes: " +
         known_modes() + ")");
  }
  return static_cast<ErrorMode>(word);
}

std::string preset_who(Preset preset) { return "preset " + preset_label(preset); }

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

// The tuning words after the bound: none for lossless presets; 0 or 2 (the
// missing value) for lossy ones; 0, 2, 3 or 7 for presets 5 and 6 (the
// missing value or its placeholder, then the spline tuning).
void check_tuning_words(const UserParams& params) {
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

// The checks shared by both layouts once the fields are in place.
void check_user_params(const UserParams& params) {
  if (preset_is_lossy(params.preset)) {
    if (!std::isfinite(params.bound) || !(params.bound > 0.0)) {
      fail("preset " + preset_label(params.preset) +
           " needs a positive finite error bound, but cd_values[2..3] hold " +
           format_double(params.bound));
    }
  }
  check_tuning_words(params);
}

// Fill value bytes travel in two words, byte i in bits 8*(i%4) of word i/4, so
// the packing does not depend on the host's byte order.
std::pair<unsigned, unsigned> pack_fill(const Bytes& fill) {
  unsigned words[2] = {0, 0};
  for (size_t i = 0; i < fill.size(); ++i) words[i / 4] |= static_cast<unsigned>(fill[i]) << (8 * (i % 4));
  return {words[0], words[1]};
}

Bytes unpack_fill(unsigned low, unsigned high, size_t size) {
  const unsigned words[2] = {low, high};
  Bytes fill(size);
  for (size_t i = 0; i < size; ++i) fill[i] = static_cast<uint8_t>(words[i / 4] >> (8 * (i % 4)));
  return fill;
}

std::string hex(unsigned value) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << value;
  return out.str();
}

// Where a field sits, for messages: "stored cd_values[1] bits 8-15".
std::string field_place(const StoredField& field) {
  std::string place = "stored cd_values[" + std::to_string(field.word) + "]";
  if (field.bits >= 32) return place;
  if (field.bits == 1) return place + " bit " + std::to_string(field.shift);
  return place + " bits " + std::to_string(field.shift) + "-" + std::to_string(field.shift + field.bits - 1);
}

// Puts `value` into its field, refusing a value the field cannot hold.
void put_field(std::vector<unsigned>& cd, const StoredField& field, uint64_t value) {
  if (value > field.max()) {
    fail("cannot store " + std::string(field.name) + " " + std::to_string(value) + ": " + field_place(field) +
         " holds at most " + std::to_string(field.max()));
  }
  cd[field.word] |= static_cast<unsigned>(value) << field.shift;
}

}  // namespace

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

FloatFields ieee_fields(unsigned size) {
  switch (size) {
    case 2: return {15, 10, 5, 0, 10, 15};
    case 4: return {31, 23, 8, 0, 23, 127};
    case 8: return {63, 52, 11, 0, 52, 1023};
    default: return {};
  }
}

std::pair<unsigned, unsigned> split_bound(double bound) {
  uint64_t bits = 0;
  std::memcpy(&bits, &bound, sizeof bits);
  return {static_cast<unsigned>(bits & 0xFFFFFFFFu), static_cast<unsigned>(bits >> 32)};
}

double join_bound(unsigned low, unsigned high) {
  const uint64_t bits = (static_cast<uint64_t>(high) << 32) | static_cast<uint64_t>(low);
  double bound = 0.0;
  std::memcpy(&bound, &bits, sizeof bound);
  return bound;
}

bool is_stored_layout(const unsigned* cd, size_t n) {
  return n > 0 && cd != nullptr && (cd[kWordMarker] & kStoredMarkerMask) == kStoredMarker;
}

UserParams parse_user_layout(const unsigned* cd, size_t n) {
  if (n > kMaxUserValues) {
    fail(std::to_string(n) + " cd_values given; H5Z-FZ takes at most " + std::to_string(kMaxUserValues) +
         " (preset, mode, bound low 32 bits, bound high 32 bits, then up to " +
         std::to_string(kMaxTuningValues) + " tuning values)");
  }
  UserParams params;
  if (n == 0) return params;  // no values: the default, lossless
  params.preset = checked_preset(cd[kUserPreset], "cd_values[0]");
  if (n > kUserMode) params.mode = checked_mode(cd[kUserMode], "cd_values[1]");
  if (n == kUserBoundLow + 1) {
    fail("3 cd_values given; the error bound takes two: cd_values[2] = low and cd_values[3] = high "
         "32 bits of an IEEE-754 double");
  }
  if (n > kUserBoundHigh) {
    params.bound = join_bound(cd[kUserBoundLow], cd[kUserBoundHigh]);
  } else if (preset_is_lossy(params.preset)) {
    fail("preset " + preset_label(params.preset) +
         " is lossy and needs an error bound: cd_values = {preset, mode, bound low 32 bits, bound high "
         "32 bits}");
  }
  if (n > kUserTuning) params.tuning.assign(cd + kUserTuning, cd + n);
  check_user_params(params);
  return params;
}

UserParams parse_any_layout(const unsigned* cd, size_t n) {
  if (is_stored_layout(cd, n)) return decode_stored(cd, n).user;
  return parse_user_layout(cd, n);
}

void require_available(Preset preset) {
  if (preset_is_available(preset)) return;
  std::string available;
  for (const PresetInfo& candidate : preset_table()) {
    if (!candidate.available) continue;
    if (!available.empty()) available += ", ";
    available += std::to_string(static_cast<unsigned>(candidate.id)) + " " + candidate.name;
  }
  fail("preset " + preset_label(preset) + " is not available in this build of H5Z-FZ " + version() +
       " (available: " + available + ")");
}

std::vector<unsigned> encode_stored(const StoredParams& params) {
  const UserParams& user = params.user;
  const DatasetInfo& dataset = params.dataset;
  if (dataset.chunk_dims.size() > kMaxRank) fail("chunk rank " + std::to_string(dataset.chunk_dims.size()) + " is above 32");
  check_user_params(user);
  if (dataset.fill_value.size() > kMaxFillBytes) fail("fill values above 8 bytes are not stored");
  if (!dataset.fill_value.empty() && dataset.fill_value.size() != dataset.dtype.size) {
    fail("the fill value is " + std::to_string(dataset.fill_value.size()) + " bytes, the element " +
         std::to_string(dataset.dtype.size));
  }
  std::vector<unsigned> cd(kStoredFixedWords, 0u);
  cd[kWordMarker] = kStoredMarker;
  put_field(cd, kFieldLayoutVersion, kStoredLayoutVersion);
  put_field(cd, kFieldPreset, static_cast<unsigned>(user.preset));
  put_field(cd, kFieldMode, static_cast<unsigned>(user.mode));
  put_field(cd, kFieldTuningCount, user.tuning.size());
  put_field(cd, kFieldRank, dataset.chunk_dims.size());
  std::tie(cd[kWordBoundLow], cd[kWordBoundHigh]) = split_bound(user.bound);
  put_field(cd, kFieldElementClass, static_cast<unsigned>(dataset.dtype.element_class));
  put_field(cd, kFieldByteOrder, static_cast<unsigned>(dataset.dtype.order));
  put_field(cd, kFieldHdf5Sign, dataset.hdf5_sign);
  put_field(cd, kFieldFillDefined, dataset.fill_value.empty() ? 0u : 1u);
  put_field(cd, kFieldFirstFilter, dataset.first_filter ? 1u : 0u);
  put_field(cd, kFieldHdf5Class, dataset.hdf5_class);
  cd[kWordElementSize] = dataset.dtype.size;
  put_field(cd, kFieldFloatSignPos, dataset.float_fields.sign_pos);
  put_field(cd, kFieldFloatExpPos, dataset.float_fields.exp_pos);
  put_field(cd, kFieldFloatExpSize, dataset.float_fields.exp_size);
  put_field(cd, kFieldFloatMantPos, dataset.float_fields.mant_pos);
  put_field(cd, kFieldFloatMantSize, dataset.float_fields.mant_size);
  put_field(cd, kFieldFloatExpBias, dataset.float_fields.exp_bias);
  std::tie(cd[kWordFillLow], cd[kWordFillHigh]) = pack_fill(dataset.fill_value);
  cd.insert(cd.end(), dataset.chunk_dims.begin(), dataset.chunk_dims.end());
  cd.insert(cd.end(), user.tuning.begin(), user.tuning.end());
  return cd;
}

StoredParams decode_stored(const unsigned* cd, size_t n) {
  if (!is_stored_layout(cd, n)) fail("cd_values are not in the stored layout (no marker in cd_values[0])");
  const unsigned version = stored_field(cd, kFieldLayoutVersion);
  if (version != kStoredLayoutVersion) {
    fail("stored cd_values layout version " + std::to_string(version) +
         " is not understood by this H5Z-FZ (it reads version " + std::to_string(kStoredLayoutVersion) +
         "); upgrade the plugin");
  }
  if (n < kStoredFixedWords) {
    fail("stored cd_values are truncated: " + std::to_string(n) + " values, at least " +
         std::to_string(kStoredFixedWords) + " expected");
  }
  const unsigned rank = stored_field(cd, kFieldRank);
  const unsigned tuning = stored_field(cd, kFieldTuningCount);
  if (rank > kMaxRank || tuning > kMaxTuningValues || n != kStoredFixedWords + rank + tuning) {
    fail("stored cd_values are inconsistent: " + std::to_string(n) + " values for rank " +
         std::to_string(rank) + " and " + std::to_string(tuning) + " tuning values");
  }
  if (cd[kWordType] & kTypeReservedMask) {
    fail("stored cd_values[4] has reserved bits set (" + hex(cd[kWordType] & kTypeReservedMask) +
         "); written by a later H5Z-FZ or damaged");
  }
  StoredParams params;
  UserParams& user = params.user;
  user.preset = checked_preset(stored_field(cd, kFieldPreset), field_place(kFieldPreset).c_str());
  user.mode = checked_mode(stored_field(cd, kFieldMode), field_place(kFieldMode).c_str());
  user.bound = join_bound(cd[kWordBoundLow], cd[kWordBoundHigh]);
  user.tuning.assign(cd + kStoredFixedWords + rank, cd + n);
  check_user_params(user);

  DatasetInfo& dataset = params.dataset;
  const unsigned element_class = stored_field(cd, kFieldElementClass);
  if (element_class > static_cast<unsigned>(ElementClass::Float)) {
    fail("stored cd_values hold an unknown element class " + std::to_string(element_class));
  }
  if (cd[kWordElementSize] == 0) fail("stored cd_values hold an element size of 0");
  // The byte order is one bit: 0 little, 1 big (both known).
  static_assert(static_cast<unsigned>(ByteOrder::Big) == kFieldByteOrder.max(), "byte order field");
  dataset.dtype.element_class = static_cast<ElementClass>(element_class);
  dataset.dtype.size = cd[kWordElementSize];
  dataset.dtype.order = static_cast<ByteOrder>(stored_field(cd, kFieldByteOrder));
  dataset.hdf5_class = stored_field(cd, kFieldHdf5Class);
  dataset.hdf5_sign = stored_field(cd, kFieldHdf5Sign);
  dataset.first_filter = stored_field(cd, kFieldFirstFilter) == 1;
  dataset.float_fields = {stored_field(cd, kFieldFloatSignPos),  stored_field(cd, kFieldFloatExpPos),
                          stored_field(cd, kFieldFloatExpSize),  stored_field(cd, kFieldFloatMantPos),
                          stored_field(cd, kFieldFloatMantSize), stored_field(cd, kFieldFloatExpBias)};
  if (stored_field(cd, kFieldFillDefined) == 1) {
    if (dataset.dtype.size > kMaxFillBytes) {
      fail("stored cd_values hold a fill value for a " + std::to_string(dataset.dtype.size) +
           "-byte element (at most 8)");
    }
    dataset.fill_value = unpack_fill(cd[kWordFillLow], cd[kWordFillHigh], dataset.dtype.size);
  }
  // Bytes past the fill value (or any, without one) are 0, as encode writes them.
  if (pack_fill(dataset.fill_value) != std::make_pair(cd[kWordFillLow], cd[kWordFillHigh])) {
    fail("stored cd_values[8..9] hold fill value bytes beyond " +
         (dataset.fill_value.empty() ? std::string("an absent fill value (fill-value flag 0)")
                                     : "the " + std::to_string(dataset.dtype.size) + "-byte element"));
  }
  dataset.chunk_dims.assign(cd + kStoredFixedWords, cd + kStoredFixedWords + rank);
  return params;
}

std::vector<unsigned> user_cd_values(const UserParams& params) {
  std::vector<unsigned> cd{static_cast<unsigned>(params.preset)};
  if (!preset_is_lossy(params.preset) && params.tuning.empty()) return cd;
  cd.push_back(static_cast<unsigned>(params.mode));
  const auto [low, high] = split_bound(params.bound);
  cd.push_back(low);
  cd.push_back(high);
  cd.insert(cd.end(), params.tuning.begin(), params.tuning.end());
  return cd;
}

std::vector<unsigned> user_cd_values(const Options& options) { return user_cd_values(from_options(options)); }

std::string h5repack_filter_argument(const Options& options, bool optional) {
  const std::vector<unsigned> cd = user_cd_values(options);
  std::string argument = "UD=" + std::to_string(kFilterId) + "," + (optional ? "1" : "0") + "," +
                         std::to_string(cd.size());
  for (unsigned word : cd) argument += "," + std::to_string(word);
  return argument;
}

Options to_options(const UserParams& params) {
  Options options;
  options.preset = params.preset;
  options.mode = params.mode;
  options.bound = params.bound;
  const SplineChoice spline = spline_choice(params);
  options.spline_tuning = spline.tuning;
  options.spline_alpha = spline.alpha;
  options.spline_beta = spline.beta;
  return options;
}

Options dataset_options(const StoredParams& params) {
  Options options = to_options(params.user);
  options.fill_value = params.dataset.fill_value;
  options.missing_value = missing_value_element(params.user, params.dataset.dtype);
  return options;
}

UserParams from_options(const Options& options) {
  UserParams params;
  params.preset = options.preset;
  params.mode = options.mode;
  params.bound = options.bound;
  // Presets 5 and 6: a tuning other than the default is spelled out (after
  // the placeholder for "no missing value"); the default needs no words.
  if (takes_spline_tuning(options.preset) && options.spline_tuning != Options{}.spline_tuning) {
    SplineChoice spline;
    spline.given = true;
    spline.tuning = options.spline_tuning;
    if (options.spline_tuning == SplineTuning::kManual) {
      spline.alpha = options.spline_alpha;
      spline.beta = options.spline_beta;
    }
    params.tuning = make_tuning_words(options.preset, nullptr, &spline);
  }
  return params;
}

DataType bytes_type() { return {ElementClass::Opaque, 1, ByteOrder::Little}; }

std::string describe(const DataType& dtype) {
  const char* order = dtype.order == ByteOrder::Big ? " big-endian" : " little-endian";
  const std::string bits = std::to_string(8 * static_cast<unsigned long>(dtype.size));
  switch (dtype.element_class) {
    case ElementClass::Float: return "float" + bits + order;
    case ElementClass::Signed: return "int" + bits + (dtype.size > 1 ? order : "");
    case ElementClass::Unsigned: return "uint" + bits + (dtype.size > 1 ? order : "");
    case ElementClass::Opaque: break;
  }
  return "opaque " + std::to_string(dtype.size) + "-byte";
}

std::string describe(const UserParams& params) {
  std::string text = "preset " + preset_label(params.preset);
  if (preset_is_lossy(params.preset)) {
    text += ", mode " + std::string(mode_name(params.mode)) + ", bound " + format_double(params.bound);
  }
  if (has_missing_value(params)) text += ", missing value " + format_double(missing_value(params));
  if (takes_spline_tuning(params.preset)) {
    const SplineChoice spline = spline_choice(params);
    text += std::string(", tuning ") + spline_tuning_name(spline.tuning);
    if (spline.tuning == SplineTuning::kManual) {
      text += " alpha " + format_shortest(spline.alpha) + " beta " + format_shortest(spline.beta);
    }
    if (!spline.given) text += " (default)";
  }
  return text;
}

std::string describe(const StoredParams& params) {
  std::string text = describe(params.user) + ", " + describe(params.dataset.dtype) + ", chunk ";
  for (size_t i = 0; i < params.dataset.chunk_dims.size(); ++i) {
    text += (i ? "x" : "") + std::to_string(params.dataset.chunk_dims[i]);
  }
  if (params.dataset.chunk_dims.empty()) text += "(none)";
  if (!params.dataset.fill_value.empty()) text += ", fill value stored";
  return text;
}

}  // namespace fz::filter
