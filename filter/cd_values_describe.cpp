// A checked choice turned outward: into the engine's Options (to_options,
// dataset_options, and back with from_options), into the user layout that
// selects given Options (user_cd_values, the h5repack -f argument), and into
// one line of text (describe, for H5Z_FZ_VERBOSE and h5fz).
#include "cd_values.hpp"

#include "cd_values_internal.hpp"

namespace fz::filter {

using cd_detail::format_double;
using cd_detail::format_shortest;
using cd_detail::preset_label;

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
