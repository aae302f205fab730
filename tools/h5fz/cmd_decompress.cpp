// h5fz decompress: one FZM frame -> the raw array, optionally compared with the
// original (bit-exactness always; error statistics and the bound check for
// float32/float64 data, quality.hpp).
#include <cstdio>

#include "environment.hpp"
#include "cli.hpp"
#include "quality.hpp"

namespace h5fz {

namespace {

const char* const kHelp =
    "usage: h5fz decompress [options] in.fzm out.raw\n"
    "\n"
    "Decodes an FZM frame (the frame alone says how) into the raw array bytes.\n"
    "Threads: H5Z_FZ_THREADS, or all cores.\n"
    "\n"
    "  --compare F   compare the result with the original raw file F: bit-exact or not;\n"
    "                for float32/float64 also the max abs error, max point-wise relative\n"
    "                error (over x != 0), PSNR (20 log10(range / RMSE), range over the\n"
    "                finite original values), NRMSE and the number of elements outside\n"
    "                the bound. Exits 1 when a lossless frame (or non-float data) is not\n"
    "                bit-exact, or when any element lies outside the bound or a NaN/Inf\n"
    "                changed.\n"
    "  --mode M      with --bound: the bound to check (abs, noa, rel; noa uses the\n"
    "                original's value range as the filter takes it, the whole array\n"
    "                being one chunk: finite values other than +0.0 and the fill value).\n"
    "                Without them the frame's own record is used: the quantize stage's\n"
    "                mode and bound (pfpl), or the absolute bound the lorenzo stage\n"
    "                enforced (fzgpu, cusz; never larger than the requested bound)\n"
    "  --bound X     the requested error bound (> 0)\n"
    "  --quiet       print nothing on success\n"
    "\n"
    "MB/s counts uncompressed bytes, MB = 1e6.\n";

}  // namespace

int run_decompress(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  ParsedArgs parsed = parse_args(args, {"--compare", "--mode", "--bound"}, {"--quiet"});
  if (parsed.positional.size() != 2) throw UsageError("decompress needs an input frame and an output file");
  if ((parsed.has("--mode") || parsed.has("--bound")) && !parsed.has("--compare"))
    throw UsageError("--mode/--bound say what --compare checks; give --compare too");
  if (parsed.has("--mode") && !parsed.has("--bound")) throw UsageError("--mode needs --bound");
  const std::string& in_path = parsed.positional[0];
  const std::string& out_path = parsed.positional[1];
  const bool quiet = parsed.has("--quiet");

  fz::Bytes frame = read_whole_file(in_path);
  Stopwatch clock;
  fz::Decoded decoded = fz::decompress(frame.data(), frame.size(), fz::filter::policy_from_environment());
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
  if (!parsed.has("--compare")) return 0;

  const std::string original_path = parsed.get("--compare");
  fz::Bytes original = read_whole_file(original_path);
  if (original.size() != decoded.data.size()) {
    std::fprintf(stderr, "h5fz decompress: size mismatch: '%s' has %zu bytes, the frame decodes to %zu\n",
                 original_path.c_str(), original.size(), decoded.data.size());
    return 1;
  }
  const bool lossy = fz::preset_is_lossy(decoded.preset);
  BoundSpec spec;
  if (lossy) {
    // The frame's record supplies the fill value even when the user names the bound.
    spec = bound_from_frame(fz::inspect(frame.data(), frame.size()));
    if (parsed.has("--bound")) {
      spec.known = true;
      spec.mode = parsed.has("--mode") ? parse_mode(parsed.get("--mode")) : fz::ErrorMode::Abs;
      spec.bound = parse_positive_double("--bound", parsed.get("--bound"));
      spec.source = "requested";
    }
  }
  Quality q = assess(original, decoded.data, decoded.dtype, spec);
  const bool passes = quality_passes(q, lossy);
  if (!quiet || !passes) print_quality(q, spec, original_path);
  if (!passes) {
    std::fprintf(stderr, "h5fz decompress: comparison FAILED (%s)\n",
                 lossy && q.float_stats ? "elements outside the bound or NaN/Inf changed" : "not bit-exact");
    return 1;
  }
  return 0;
}

}  // namespace h5fz
