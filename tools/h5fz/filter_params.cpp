#include "filter_params.hpp"

#include <cstdio>
#include <cstring>

#ifdef H5FZ_HAVE_FILTER_CORE
#include "cd_values.hpp"
#endif

namespace h5fz {

#ifdef H5FZ_HAVE_FILTER_CORE

std::vector<unsigned> user_cd_values(const fz::Options& options) { return fz::filter::user_cd_values(options); }

std::string describe_fz_cd_values(const std::vector<unsigned>& cd) {
  try {
    if (fz::filter::is_stored_layout(cd.data(), cd.size()))
      return fz::filter::describe(fz::filter::decode_stored(cd.data(), cd.size()));
    return fz::filter::describe(fz::filter::parse_user_layout(cd.data(), cd.size()));
  } catch (const fz::Error& e) {
    return std::string("cannot decode: ") + e.what();
  }
}

bool uses_filter_core() { return true; }

#else  // minimal private conversion of the user layout

namespace {
double bound_from_words(unsigned low, unsigned high) {
  uint64_t bits = (static_cast<uint64_t>(high) << 32) | low;
  double bound;
  std::memcpy(&bound, &bits, sizeof bound);
  return bound;
}
}  // namespace

std::vector<unsigned> user_cd_values(const fz::Options& options) {
  if (!fz::preset_is_lossy(options.preset)) return {static_cast<unsigned>(options.preset)};
  uint64_t bits;
  std::memcpy(&bits, &options.bound, sizeof bits);
  return {static_cast<unsigned>(options.preset), static_cast<unsigned>(options.mode),
          static_cast<unsigned>(bits & 0xffffffffu), static_cast<unsigned>(bits >> 32)};
}

std::string describe_fz_cd_values(const std::vector<unsigned>& cd) {
  // The stored layout starts with a marker far above any preset id; its word
  // positions are the filter's business, so only say what it is.
  if (!cd.empty() && cd[0] > 0xffffu) return "stored layout (decoding it needs fz_filter_core)";
  if (cd.empty()) return "preset lossless (no values)";
  char text[160];
  unsigned preset = cd[0], mode = cd.size() > 1 ? cd[1] : 0;
  const char* preset_text = preset <= 6 ? fz::preset_name(static_cast<fz::Preset>(preset)) : "unknown";
  const char* mode_text = mode <= 2 ? fz::mode_name(static_cast<fz::ErrorMode>(mode)) : "unknown";
  if (cd.size() >= 4)
    std::snprintf(text, sizeof text, "preset %s, mode %s, bound %.17g", preset_text, mode_text,
                  bound_from_words(cd[2], cd[3]));
  else
    std::snprintf(text, sizeof text, "preset %s, mode %s", preset_text, mode_text);
  return text;
}

bool uses_filter_core() { return false; }

#endif

}  // namespace h5fz
