// h5fz params: the filter parameters for a preset/mode/bound, spelled for
// h5repack (-f UD=...) and for h5py (compression=32850, compression_opts=...).
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "filter_params.hpp"
#include "presets_text.hpp"

namespace h5fz {

namespace {

// --dtype: true for float64, false for float32.
bool parse_float_dtype(const std::string& text) {
  if (text == "float32" || text == "f4") return false;
  if (text == "float64" || text == "f8") return true;
  throw UsageError("--dtype: '" + text + "' is not float32 or float64");
}

// The preset lists come from the engine's preset table (presets_text.hpp).
std::string help_text() {
  return "usage: h5fz params [--preset P] [--mode M] [--bound X] [--missing V] [--dtype D]\n"
         "                   [--tuning T [--alpha A --beta B]]\n"
         "                   [--shape D0,D1,... [--element-bytes N] [--chunk-mib M]]\n"
         "\n"
         "Prints the H5Z-FZ filter parameters (the cd_values user layout: cd[0] preset,\n"
         "cd[1] mode, cd[2] and cd[3] the low and high 32 bits of the bound as an IEEE-754\n"
         "double; cd[4], cd[5] the missing value; cd[6] the spline tuning, cd[7..10] alpha\n"
         "and beta; docs/CD_VALUES.md) as an h5repack -f argument and as an h5py\n"
         "compression_opts tuple.\n"
         "A preset/mode pair the engine refuses (rel with " +
         lossy_presets_text(fz::ErrorMode::Rel, false, " or ") +
         ") exits 1 with the\n"
         "engine's message.\n"
         "\n"
         "  --preset P   " +
         preset_help_text() +
         "\n"
         "  --mode M     abs (default), noa (relative to the chunk's value range), rel\n"
         "               (point-wise relative; " +
         lossy_presets_text(fz::ErrorMode::Rel, true, ", ") +
         " only)\n"
         "  --bound X    error bound (> 0), required by lossy presets\n"
         "  --missing V  lossy presets: the missing value (the variable's _FillValue or\n"
         "               missing_value), appended as cd[4], cd[5] (low, high 32 bits of a\n"
         "               double); it is kept bit-exact and left out of the NOA range, beside\n"
         "               HDF5's fill value, never in its place (use it for netCDF files\n"
         "               written by nccopy / in no-fill mode, or with a missing_value)\n"
         "  --dtype D    float32 (default) or float64: the variable's type. The missing\n"
         "               value is rounded to it (a float32 dataset refuses a double that\n"
         "               is not a float32, and h5repack then copies it unfiltered);\n"
         "               without --dtype, a note on stderr says float32 was assumed\n" +
         spline_tuning_help_text() +
         "               A tuning without --missing puts 4294967295, 4294967295 (\"no missing\n"
         "               value\") in cd[4], cd[5]\n"
         "  --shape D,... the dataset's extents, slowest first (512,512,512 or 512x512x512):\n"
         "               also prints the chunk shape to use, as h5repack -l CHUNK= and as\n"
         "               h5py's chunks=: the fastest axes whole, as many as fit in M MiB,\n"
         "               the next axis in the fewest equal pieces that fit, the slower\n"
         "               axes 1 (fz::suggest_chunk_shape; README \"Choosing chunks\")\n"
         "  --element-bytes N  the element size for --shape (default: 4, or 8 with\n"
         "               --dtype float64)\n"
         "  --chunk-mib M the chunk size to aim at, at most (default 4)\n"
         "\n"
         "examples:\n"
         "  h5fz params --preset cusz --mode noa --bound 1e-4\n"
         "  h5fz params --preset pfpl --mode noa --bound 1e-3 --missing -1e34 --dtype float32\n"
         "  h5fz params --preset cuszhi-cr --mode noa --bound 1e-3 --tuning quality-first\n"
         "  h5fz params --preset cuszhi-tp --mode noa --bound 1e-3 --tuning manual --alpha 1.5 --beta 4\n"
         "  h5repack -f \"$(h5fz params --preset pfpl --mode noa --bound 1e-3 | sed -n 's/^h5repack: *-f //p')\" in.h5 out.h5\n"
         "  h5fz params --preset cuszhi-cr --mode noa --bound 1e-3 --shape 2161,4320\n";
}

// --shape [--element-bytes N] [--chunk-mib M]: the suggested chunk shape, as
// the line params prints (checked before anything is printed).
std::string chunks_line(const ParsedArgs& parsed, bool float64) {
  const std::vector<uint64_t> dims = parse_shape(parsed.get("--shape"));
  size_t width = float64 ? 8 : 4;
  if (parsed.has("--element-bytes")) {
    const double w = parse_positive_double("--element-bytes", parsed.get("--element-bytes"));
    if (w != std::floor(w) || w > 4096) throw UsageError("--element-bytes: a whole number of bytes, 1..4096");
    width = static_cast<size_t>(w);
  }
  double mib = 4;
  if (parsed.has("--chunk-mib")) mib = parse_positive_double("--chunk-mib", parsed.get("--chunk-mib"));
  if (mib * 1048576.0 >= 4294967295.0) throw UsageError("--chunk-mib: HDF5 chunks stay below 4 GiB");
  const size_t target = static_cast<size_t>(mib * 1048576.0);
  if (target < width) throw UsageError("--chunk-mib: smaller than one element");
  const std::vector<uint64_t> chunk = fz::suggest_chunk_shape(dims, width, target);
  uint64_t bytes = width;
  std::string tuple = "(";
  for (size_t k = 0; k < chunk.size(); ++k) {
    bytes *= chunk[k];
    tuple += (k ? ", " : "") + std::to_string(chunk[k]);
  }
  tuple += chunk.size() == 1 ? ",)" : ")";
  std::string spelled;
  for (size_t k = 0; k < chunk.size(); ++k) spelled += (k ? "x" : "") + std::to_string(chunk[k]);
  char size[64];
  std::snprintf(size, sizeof size, "%.2f MiB of %zu-byte elements", double(bytes) / 1048576.0, width);
  return "chunks:   h5repack -l CHUNK=" + spelled + ", h5py chunks=" + tuple + " (" + size + ", for " +
         shape_text(dims) + ")\n";
}

}  // namespace

int run_params(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  ParsedArgs parsed =
      parse_args(args, {"--preset", "--mode", "--bound", "--missing", "--dtype", "--tuning", "--alpha", "--beta",
                        "--shape", "--element-bytes", "--chunk-mib"},
                 {});
  if (!parsed.positional.empty()) throw UsageError("params takes no file, got '" + parsed.positional[0] + "'");
  fz::Options options;
  if (parsed.has("--preset")) options.preset = parse_preset(parsed.get("--preset"));
  if (parsed.has("--mode")) options.mode = parse_mode(parsed.get("--mode"));
  if (parsed.has("--bound")) options.bound = parse_positive_double("--bound", parsed.get("--bound"));
  const bool lossy = fz::preset_is_lossy(options.preset);
  if (lossy && !parsed.has("--bound"))
    throw UsageError(std::string("preset '") + fz::preset_name(options.preset) + "' is lossy and needs --bound");
  if (!lossy && (parsed.has("--mode") || parsed.has("--bound") || parsed.has("--missing") || parsed.has("--dtype")))
    throw UsageError(std::string("--mode/--bound/--missing/--dtype apply to lossy presets; preset '") +
                     fz::preset_name(options.preset) + "' is lossless");
  const bool spell_tuning = apply_spline_tuning(parsed, options);
  const bool float64 = parsed.has("--dtype") && parse_float_dtype(parsed.get("--dtype"));
  const fz::DataType dtype = float64 ? fz::DataType::of<double>() : fz::DataType::of<float>();
  if (!parsed.has("--shape") && (parsed.has("--element-bytes") || parsed.has("--chunk-mib")))
    throw UsageError("--element-bytes and --chunk-mib go with --shape");
  const std::string chunks = parsed.has("--shape") ? chunks_line(parsed, float64) : std::string();

  // Refuse what the plugin would refuse at set_local. Presets not built here
  // are only noted below, so parameters for another build can still be printed.
  if (fz::preset_is_available(options.preset)) fz::validate(options, dtype);

  double missing = 0.0;
  const bool has_missing = parsed.has("--missing");
  if (has_missing) {
    const std::string text = parsed.get("--missing");
    char* end = nullptr;
    missing = std::strtod(text.c_str(), &end);
    if (text.empty() || end == nullptr || *end != '\0') throw UsageError("--missing: not a number: '" + text + "'");
    if (!float64) {
      // The double the float32 nearest to V widens to: exactly what the filter
      // compares a float32 dataset's missing value with.
      const float narrow = static_cast<float>(missing);
      if (std::isinf(narrow) && !std::isinf(missing))
        throw UsageError("--missing " + text + " is outside float32's range (give --dtype float64 for a double variable)");
      if (!parsed.has("--dtype"))
        std::fprintf(stderr, "note: --missing taken as float32 (no --dtype given); pass --dtype float64 for a double variable\n");
      missing = static_cast<double>(narrow);
    }
  }
  const std::vector<unsigned> values = user_cd_values(options, has_missing ? &missing : nullptr, spell_tuning);
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
  if (has_missing) {
    uint64_t bits;
    std::memcpy(&bits, &missing, sizeof bits);
    std::printf("missing:  %.17g = IEEE-754 double 0x%016" PRIx64 ": cd[4] = 0x%08x (%u, low), cd[5] = 0x%08x (%u, high)\n",
                missing, bits, values[4], values[4], values[5], values[5]);
    std::printf("dtype:    %s (the missing value is %s)\n", float64 ? "float64" : "float32",
                float64 ? "kept as given" : "rounded to the nearest float32");
  } else if (values.size() > 6) {
    std::printf("missing:  none: cd[4] = cd[5] = 0x%08x (%u), the placeholder that lets the tuning follow\n",
                values[4], values[4]);
  }
  if (values.size() > 6) {
    std::printf("tuning:   %s: cd[6] = %u\n", fz::spline_tuning_name(options.spline_tuning), values[6]);
  }
  if (values.size() > 7) {
    const double alpha_beta[2] = {options.spline_alpha, options.spline_beta};
    const char* names[2] = {"alpha:   ", "beta:    "};
    for (size_t k = 0; k < 2; ++k) {
      uint64_t bits;
      std::memcpy(&bits, &alpha_beta[k], sizeof bits);
      const size_t low = 7 + 2 * k;
      std::printf("%s %s = IEEE-754 double 0x%016" PRIx64 ": cd[%zu] = 0x%08x (%u, low), cd[%zu] = 0x%08x (%u, high)\n",
                  names[k], shortest_double(alpha_beta[k]).c_str(), bits, low, values[low], values[low], low + 1,
                  values[low + 1], values[low + 1]);
    }
  }
  if (!chunks.empty()) std::fputs(chunks.c_str(), stdout);
  if (!fz::preset_is_available(options.preset))
    std::fprintf(stderr, "note: preset '%s' is not implemented in this build\n", fz::preset_name(options.preset));
  return 0;
}

}  // namespace h5fz
