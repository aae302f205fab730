// The user layout parsed and checked (parse_user_layout, parse_any_layout,
// require_available), and the helpers every cd_values source shares for its
// messages (cd_values_internal.hpp). The other parts of the cd_values code:
// the tuning words (missing value, spline tuning) in cd_values_tuning.cpp,
// the stored layout in cd_values_layout.cpp, Options and descriptions in
// cd_values_describe.cpp.
#include "cd_values.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cd_values_internal.hpp"

namespace fz::filter {
namespace {

constexpr unsigned kLastMode = static_cast<unsigned>(ErrorMode::Rel);

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

}  // namespace

namespace cd_detail {

[[noreturn]] void fail(const std::string& message) { throw Error(message); }

std::string preset_label(Preset preset) {
  return std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) + ")";
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

}  // namespace cd_detail

using cd_detail::check_user_params;
using cd_detail::checked_mode;
using cd_detail::checked_preset;
using cd_detail::fail;
using cd_detail::preset_label;

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

}  // namespace fz::filter
