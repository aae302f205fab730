// h5fz decompress: one FZM frame -> the raw array, optionally compared with the
// original (bit-exactness always; max error and PSNR for float data).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "cli.hpp"

namespace h5fz {

namespace {

const char* const kHelp =
    "usage: h5fz decompress [options] in.fzm out.raw\n"
    "\n"
    "Decodes an FZM frame (the frame alone says how) into the raw array bytes.\n"
    "\n"
    "  --compare F   compare the result with the original raw file F: bit-exact or not,\n"
    "                and for float32/float64 the max abs error, max error relative to the\n"
    "                value range and PSNR; a lossless frame that does not match exits 1\n"
    "  --quiet       print nothing on success\n";

struct ErrorStats {
  uint64_t elements = 0, differing = 0;
  double max_abs_error = 0, min_value = 0, max_value = 0, sum_squared_error = 0;
  bool non_finite_mismatch = false;  // NaN/Inf not reproduced exactly
};

template <typename T>
ErrorStats float_error_stats(const uint8_t* original, const uint8_t* decoded, size_t bytes) {
  ErrorStats stats;
  stats.elements = bytes / sizeof(T);
  stats.min_value = std::numeric_limits<double>::infinity();
  stats.max_value = -std::numeric_limits<double>::infinity();
  for (uint64_t i = 0; i < stats.elements; ++i) {
    T a, b;  // memcpy: the buffers carry no alignment promise
    std::memcpy(&a, original + i * sizeof(T), sizeof(T));
    std::memcpy(&b, decoded + i * sizeof(T), sizeof(T));
    if (std::memcmp(&a, &b, sizeof(T)) != 0) ++stats.differing;
    if (!std::isfinite(a)) {
      bool same = std::isnan(a) ? std::isnan(b) : a == b;
      if (!same) stats.non_finite_mismatch = true;
      continue;
    }
    double x = a, y = b;
    stats.min_value = std::min(stats.min_value, x);
    stats.max_value = std::max(stats.max_value, x);
    double error = std::isfinite(y) ? std::fabs(x - y) : std::numeric_limits<double>::infinity();
    stats.max_abs_error = std::max(stats.max_abs_error, error);
    stats.sum_squared_error += error * error;
  }
  return stats;
}

// Returns true when the comparison passes (lossless frames must be bit-exact).
bool compare_with_original(const fz::Decoded& decoded, const std::string& original_path, bool quiet) {
  fz::Bytes original = read_whole_file(original_path);
  if (original.size() != decoded.data.size()) {
    std::fprintf(stderr, "h5fz decompress: size mismatch: '%s' has %zu bytes, the frame decodes to %zu\n",
                 original_path.c_str(), original.size(), decoded.data.size());
    return false;
  }
  bool exact = original.empty() || std::memcmp(original.data(), decoded.data.data(), original.size()) == 0;
  bool lossy = fz::preset_is_lossy(decoded.preset);
  if (!quiet || (!exact && !lossy))
    std::printf("  compare with %s: %s\n", original_path.c_str(), exact ? "bit-exact" : "DIFFERS");
  const fz::DataType& t = decoded.dtype;
  bool native_float = t.element_class == fz::ElementClass::Float && t.order == fz::ByteOrder::Little &&
                      (t.size == 4 || t.size == 8);
  if (!exact && native_float) {
    ErrorStats s = t.size == 4 ? float_error_stats<float>(original.data(), decoded.data.data(), original.size())
                               : float_error_stats<double>(original.data(), decoded.data.data(), original.size());
    double range = s.max_value - s.min_value;
    double mse = s.elements ? s.sum_squared_error / s.elements : 0;
    std::printf("  differing elements %llu of %llu\n", static_cast<unsigned long long>(s.differing),
                static_cast<unsigned long long>(s.elements));
    std::printf("  max abs error %.6g, max error / value range %.6g\n", s.max_abs_error,
                range > 0 ? s.max_abs_error / range : 0.0);
    if (mse > 0 && range > 0) std::printf("  PSNR %.2f dB (value range %.6g)\n", 20 * std::log10(range) - 10 * std::log10(mse), range);
    if (s.non_finite_mismatch) std::printf("  NaN/Inf values were NOT preserved\n");
  } else if (!exact) {
    size_t first = 0;
    while (original[first] == decoded.data[first]) ++first;
    std::printf("  first differing byte at offset %zu\n", first);
  }
  return exact || lossy;
}

}  // namespace

int run_decompress(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  ParsedArgs parsed = parse_args(args, {"--compare"}, {"--quiet"});
  if (parsed.positional.size() != 2) throw UsageError("decompress needs an input frame and an output file");
  const std::string& in_path = parsed.positional[0];
  const std::string& out_path = parsed.positional[1];
  const bool quiet = parsed.has("--quiet");

  fz::Bytes frame = read_whole_file(in_path);
  Stopwatch clock;
  fz::Decoded decoded = fz::decompress(frame.data(), frame.size());
  double seconds = clock.seconds();
  write_whole_file(out_path, decoded.data);

  if (!quiet) {
    std::printf("%s -> %s: %s %s, preset %s\n", in_path.c_str(), out_path.c_str(),
                dtype_name(decoded.dtype).c_str(), shape_text(decoded.dims).c_str(),
                fz::preset_name(decoded.preset));
    std::printf("  %llu -> %llu bytes, ratio %.3f, decompress %.1f MB/s (%.4f s)\n",
                static_cast<unsigned long long>(frame.size()),
                static_cast<unsigned long long>(decoded.data.size()),
                frame.empty() ? 0.0 : static_cast<double>(decoded.data.size()) / frame.size(),
                megabytes_per_second(decoded.data.size(), seconds), seconds);
  }
  if (parsed.has("--compare") && !compare_with_original(decoded, parsed.get("--compare"), quiet)) return 1;
  return 0;
}

}  // namespace h5fz
