// h5fz compress: one raw array file -> one FZM frame, the whole array as one chunk;
// with --verify it decodes the frame again and reports the round trip's quality.
#include <cstdio>

#include "environment.hpp"
#include "cli.hpp"
#include "quality.hpp"

namespace h5fz {

namespace {

std::string help_text() {
  return "usage: h5fz compress --dtype T --shape D0,D1,... [options] in.raw out.fzm\n"
    "\n"
    "Compresses a raw little-endian C-order array (last dimension fastest) into\n"
    "one FZM frame, the same frame the HDF5 filter stores for one chunk.\n"
    "\n"
    "  --dtype T      f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64, or bytesN (opaque N-byte elements)\n"
    "  --shape D,...  extents, slowest first (91,91,91 or 91x91x91); their product times\n"
    "                 the element size must equal the file size\n"
    "  --preset P     lossless (default), pfpl, fzgpu, cusz, cuszhi-tp, cuszhi-cr, or 0..6\n"
    "  --mode M       error-bound mode for lossy presets: abs (default), noa (relative to the\n"
    "                 value range), rel (point-wise relative)\n"
    "  --bound X      error bound (> 0), required by lossy presets\n" +
    spline_tuning_help_text() +
    "  --threads N    CPU threads (default: H5Z_FZ_THREADS, else all cores)\n"
    "  --verify       decode the frame again and compare it with the input: bit-exact for\n"
    "                 lossless presets and non-float data; for float32/float64 under a lossy\n"
    "                 preset the max abs error, max point-wise relative error (over x != 0),\n"
    "                 PSNR (20 log10(range / RMSE), range over the finite values), NRMSE,\n"
    "                 decompression MB/s and the number of elements outside the requested\n"
    "                 bound (noa: bound x the array's finite value range, the whole array\n"
    "                 being one chunk); exits 1 unless that number is 0 and NaN/Inf match\n"
    "  --quiet        print nothing on success\n"
    "\n"
    "presets and modes: lossless (no bound); pfpl: abs, noa, rel; fzgpu, cusz, cuszhi-tp\n"
    "and cuszhi-cr: abs, noa (the engine refuses rel for them: exit 1 with its message).\n"
    "MB/s counts uncompressed bytes, MB = 1e6.\n"
    "\n"
    "examples:\n"
    "  h5fz compress --dtype f32 --shape 91,91,91 --preset fzgpu --mode noa --bound 1e-3 \\\n"
    "      --verify wmag91.float wmag91.fzm\n"
    "  h5fz compress --dtype f32 --shape 91,91,91 --preset cuszhi-cr --mode noa --bound 1e-3 \\\n"
    "      --tuning quality-first --verify wmag91.float wmag91.fzm\n";
}

}  // namespace

int run_compress(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  ParsedArgs parsed =
      parse_args(args, {"--dtype", "--shape", "--preset", "--mode", "--bound", "--threads", "--tuning", "--alpha", "--beta"},
                 {"--quiet", "--verify"});
  if (parsed.positional.size() != 2) throw UsageError("compress needs an input and an output file");
  if (!parsed.has("--dtype")) throw UsageError("compress needs --dtype");
  if (!parsed.has("--shape")) throw UsageError("compress needs --shape");
  const std::string& in_path = parsed.positional[0];
  const std::string& out_path = parsed.positional[1];

  fz::DataType dtype = parse_dtype(parsed.get("--dtype"));
  std::vector<uint64_t> dims = parse_shape(parsed.get("--shape"));
  fz::Options options;
  fz::filter::apply_policy(fz::filter::policy_from_environment(), options);  // H5Z_FZ_DEVICE, _THREADS, ...
  if (parsed.has("--preset")) options.preset = parse_preset(parsed.get("--preset"));
  if (parsed.has("--mode")) options.mode = parse_mode(parsed.get("--mode"));
  if (parsed.has("--bound")) options.bound = parse_positive_double("--bound", parsed.get("--bound"));
  if (parsed.has("--threads")) options.threads = parse_unsigned("--threads", parsed.get("--threads"));
  const bool lossy = fz::preset_is_lossy(options.preset);
  if (!lossy && (parsed.has("--mode") || parsed.has("--bound")))
    throw UsageError(std::string("--mode/--bound apply to lossy presets; preset '") +
                     fz::preset_name(options.preset) + "' is lossless");
  if (lossy && !parsed.has("--bound"))
    throw UsageError(std::string("preset '") + fz::preset_name(options.preset) + "' is lossy and needs --bound");
  apply_spline_tuning(parsed, options);  // --tuning, --alpha, --beta (presets 5 and 6)
  // The engine names option/type conflicts (e.g. REL on a predictor preset) itself.
  fz::validate(options, dtype);

  uint64_t expected = element_count(dims);
  if (expected > UINT64_MAX / dtype.size) throw UsageError("shape " + shape_text(dims) + " is too large");
  expected *= dtype.size;
  fz::Bytes input = read_whole_file(in_path);
  if (input.size() != expected)
    throw ToolError("'" + in_path + "' holds " + std::to_string(input.size()) + " bytes, but shape " +
                    shape_text(dims) + " of " + dtype_name(dtype) + " needs " + std::to_string(expected));

  Stopwatch clock;
  fz::Bytes frame = fz::compress(input.data(), input.size(), dtype, dims, options);
  double seconds = clock.seconds();
  write_whole_file(out_path, frame);

  const bool quiet = parsed.has("--quiet");
  if (!quiet) {
    std::printf("%s -> %s: %s %s, preset %s", in_path.c_str(), out_path.c_str(), dtype_name(dtype).c_str(),
                shape_text(dims).c_str(), fz::preset_name(options.preset));
    if (lossy) std::printf(", mode %s, bound %.6g", fz::mode_name(options.mode), options.bound);
    std::printf("%s", spline_tuning_text(options).c_str());
    std::printf("\n  %llu -> %llu bytes, ratio %.3f, compress %.1f MB/s (%.4f s)\n",
                static_cast<unsigned long long>(input.size()), static_cast<unsigned long long>(frame.size()),
                frame.empty() ? 0.0 : static_cast<double>(input.size()) / frame.size(),
                megabytes_per_second(input.size(), seconds), seconds);
  }
  if (!parsed.has("--verify")) return 0;

  Stopwatch decode_clock;
  fz::Decoded decoded = fz::decompress(frame.data(), frame.size(), options);
  double decode_seconds = decode_clock.seconds();
  BoundSpec spec;
  if (lossy) {
    spec.known = true;
    spec.mode = options.mode;
    spec.bound = options.bound;
    spec.source = "requested";
  }
  Quality q = assess(input, decoded.data, dtype, spec);
  const bool passes = quality_passes(q, lossy);
  if (!quiet || !passes) {
    std::printf("  verify: decompress %.1f MB/s (%.4f s)\n", megabytes_per_second(input.size(), decode_seconds),
                decode_seconds);
    print_quality(q, spec, in_path);
  }
  if (!passes) {
    std::fprintf(stderr, "h5fz compress: verification FAILED (%s)\n",
                 lossy && q.float_stats ? "elements outside the bound or NaN/Inf changed" : "not bit-exact");
    return 1;
  }
  return 0;
}

}  // namespace h5fz
