// h5fz params: the filter parameters for a preset/mode/bound, spelled for
// h5repack (-f UD=...) and for h5py (compression=32850, compression_opts=...).
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "filter_params.hpp"

namespace h5fz {

namespace {

const char* const kHelp =
    "usage: h5fz params [--preset P] [--mode M] [--bound X] [--missing V]\n"
    "\n"
    "Prints the H5Z-FZ filter parameters (the cd_values user layout: cd[0] preset,\n"
    "cd[1] mode, cd[2] and cd[3] the low and high 32 bits of the bound as an IEEE-754\n"
    "double) as an h5repack -f argument and as an h5py compression_opts tuple.\n"
    "A preset/mode pair the engine refuses (rel with fzgpu or cusz) exits 1 with the\n"
    "engine's message.\n"
    "\n"
    "  --preset P   lossless (default), pfpl, fzgpu, cusz, cuszhi-tp, cuszhi-cr, or 0..6\n"
    "  --mode M     abs (default), noa (relative to the chunk's value range), rel\n"
    "               (point-wise relative; pfpl only)\n"
    "  --bound X    error bound (> 0), required by lossy presets\n"
    "  --missing V  lossy presets: the missing value (the variable's _FillValue),\n"
    "               appended as cd[4], cd[5] (low, high 32 bits of a double); it is\n"
    "               kept bit-exact and left out of the NOA range, over HDF5's fill\n"
    "               value (use it for netCDF files written by nccopy / in no-fill mode)\n"
    "\n"
    "examples:\n"
    "  h5fz params --preset cusz --mode noa --bound 1e-4\n"
    "  h5fz params --preset pfpl --mode noa --bound 1e-3 --missing -1e34\n"
    "  h5repack -f \"$(h5fz params --preset pfpl --mode noa --bound 1e-3 | sed -n 's/^h5repack: *-f //p')\" in.h5 out.h5\n";

}  // namespace

int run_params(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  ParsedArgs parsed = parse_args(args, {"--preset", "--mode", "--bound", "--missing"}, {});
  if (!parsed.positional.empty()) throw UsageError("params takes no file, got '" + parsed.positional[0] + "'");
  fz::Options options;
  if (parsed.has("--preset")) options.preset = parse_preset(parsed.get("--preset"));
  if (parsed.has("--mode")) options.mode = parse_mode(parsed.get("--mode"));
  if (parsed.has("--bound")) options.bound = parse_positive_double("--bound", parsed.get("--bound"));
  const bool lossy = fz::preset_is_lossy(options.preset);
  if (lossy && !parsed.has("--bound"))
    throw UsageError(std::string("preset '") + fz::preset_name(options.preset) + "' is lossy and needs --bound");
  if (!lossy && (parsed.has("--mode") || parsed.has("--bound") || parsed.has("--missing")))
    throw UsageError(std::string("--mode/--bound/--missing apply to lossy presets; preset '") +
                     fz::preset_name(options.preset) + "' is lossless");

  // Refuse what the plugin would refuse at set_local (the element type does not
  // matter for these checks; float32 stands in). Presets not built here are
  // only noted below, so parameters for another build can still be printed.
  if (fz::preset_is_available(options.preset)) fz::validate(options, fz::DataType::of<float>());

  std::vector<unsigned> values = user_cd_values(options);
  double missing = 0.0;
  if (parsed.has("--missing")) {
    const std::string text = parsed.get("--missing");
    char* end = nullptr;
    missing = std::strtod(text.c_str(), &end);
    if (text.empty() || end == nullptr || *end != '\0') throw UsageError("--missing: not a number: '" + text + "'");
    uint64_t bits;
    std::memcpy(&bits, &missing, sizeof bits);
    values.push_back(static_cast<unsigned>(bits & 0xFFFFFFFFu));
    values.push_back(static_cast<unsigned>(bits >> 32));
  }
  std::string repack = "UD=" + std::to_string(kFzFilterId) + ",0," + std::to_string(values.size());
  std::string tuple = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    repack += "," + std::to_string(values[i]);
    tuple += (i ? ", " : "") + std::to_string(values[i]);
  }
  tuple += values.size() == 1 ? ",)" : ")";
  std::printf("h5repack: -f %s\n", repack.c_str());
  std::printf("h5py:     compression=%u, compression_opts=%s\n", kFzFilterId, tuple.c_str());
  std::printf("meaning:  %s\n", describe_fz_cd_values(values).c_str());
  if (values.size() >= 4) {
    uint64_t bits;
    std::memcpy(&bits, &options.bound, sizeof bits);
    std::printf("bound:    %.17g = IEEE-754 double 0x%016" PRIx64 ": cd[2] = 0x%08x (%u, low), cd[3] = 0x%08x (%u, high)\n",
                options.bound, bits, values[2], values[2], values[3], values[3]);
  }
  if (values.size() >= 6) {
    uint64_t bits;
    std::memcpy(&bits, &missing, sizeof bits);
    std::printf("missing:  %.17g = IEEE-754 double 0x%016" PRIx64 ": cd[4] = 0x%08x (%u, low), cd[5] = 0x%08x (%u, high)\n",
                missing, bits, values[4], values[4], values[5], values[5]);
    if (!std::isnan(missing) && static_cast<double>(static_cast<float>(missing)) != missing)
      std::printf("note:     %.17g is not a float32; a float32 dataset refuses it (pass the float32 _FillValue exactly)\n",
                  missing);
  }
  if (!fz::preset_is_available(options.preset))
    std::fprintf(stderr, "note: preset '%s' is not implemented in this build\n", fz::preset_name(options.preset));
  return 0;
}

}  // namespace h5fz
