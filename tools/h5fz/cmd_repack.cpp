// h5fz repack IN OUT: a copy of an HDF5 or netCDF-4 file whose numeric
// datasets are compressed with the H5Z-FZ filter. The structure (groups,
// attributes, links, dimension scales, every other dataset) is copied as it
// is (repack_copy.cpp). The numeric datasets are created with the filter, so
// HDF5's set_local writes the same stored cd_values h5repack's would
// (repack_dataset.cpp), but their chunks never pass through HDF5's
// one-chunk-at-a-time filter call: they are compressed a batch at a time
// through the engine's batch API and stored with H5Dwrite_chunk
// (repack_pipeline.cpp). This file holds the command itself: its options,
// the output written under a partial name and committed only when good, the
// report (repack_report.cpp) and the exit status.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "environment.hpp"
#include "hdf5_handle.hpp"
#include "plugin_lookup.hpp"
#include "repack_copy.hpp"
#include "repack_help.hpp"
#include "repack_output.hpp"
#include "repack_progress.hpp"
#include "repack_report.hpp"
#include "repack_run.hpp"

namespace h5fz {

namespace {

RepackSettings parse_settings(const ParsedArgs& parsed) {
  RepackSettings settings;
  fz::Options& options = settings.options;
  options.preset = parse_preset(parsed.get("--preset", "lossless"));
  const std::string mode = parsed.get("--mode", "abs");
  if (mode == "noa-global") {
    settings.noa_global = true;
    options.mode = fz::ErrorMode::Noa;
  } else {
    options.mode = parse_mode(mode);
  }
  if (parsed.has("--bound")) options.bound = parse_positive_double("--bound", parsed.get("--bound"));
  if (fz::preset_is_lossy(options.preset) && !parsed.has("--bound")) {
    throw UsageError(std::string("preset ") + fz::preset_name(options.preset) + " needs --bound");
  }
  apply_spline_tuning(parsed, options);
  // Checks preset, mode and bound as the filter will (float32 stands for any float).
  if (fz::preset_is_lossy(options.preset)) {
    fz::Options check = options;
    if (settings.noa_global) check.mode = fz::ErrorMode::Abs;
    try {
      fz::validate(check, fz::DataType::of<float>());
    } catch (const fz::Error& e) {
      throw UsageError(e.what());
    }
  }
  fz::filter::apply_policy(fz::filter::policy_from_environment(), options);
  if (parsed.has("--device")) options.device = parsed.get("--device");
  if (parsed.has("--threads")) options.threads = parse_unsigned("--threads", parsed.get("--threads"));
  settings.patterns = split_commas(parsed.get("--datasets"));
  const std::string chunks = parsed.get("--chunks", "keep");
  if (chunks == "keep") {
    settings.chunks = ChunkChoice::kKeep;
  } else if (chunks == "auto") {
    settings.chunks = ChunkChoice::kAuto;
  } else {
    settings.chunks = ChunkChoice::kShape;
    settings.chunk_shape = parse_shape(chunks);
    for (uint64_t c : settings.chunk_shape) {
      if (c == 0) throw UsageError("--chunks: extents must be at least 1");
    }
  }
  if (parsed.has("--batch-mib")) {
    const unsigned mib = parse_unsigned("--batch-mib", parsed.get("--batch-mib"));
    if (mib == 0) throw UsageError("--batch-mib must be at least 1");
    settings.batch_bytes = size_t{mib} << 20;
  }
  settings.verify = parsed.has("--verify");
  if (parsed.has("--errors") && parsed.has("--no-errors")) throw UsageError("--errors and --no-errors contradict");
  // By default only where a decode costs little: chunks compressed on a GPU.
  const bool on_gpu = fz::device_api_available() && options.device != "cpu";
  settings.measure_errors = parsed.has("--errors") || (!parsed.has("--no-errors") && on_gpu);
  settings.quiet = parsed.has("--quiet");
  settings.progress = !settings.quiet && (parsed.has("--progress") || isatty(STDERR_FILENO));
  return settings;
}

}  // namespace

int run_repack(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(repack_help_text().c_str(), stdout);
    return 0;
  }
  const ParsedArgs parsed = parse_args(
      args, {"--preset", "--mode", "--bound", "--tuning", "--alpha", "--beta", "--datasets", "--chunks", "--device",
             "--threads", "--batch-mib"},
      {"--verify", "--errors", "--no-errors", "--progress", "--quiet"});
  if (parsed.positional.size() != 2) throw UsageError("repack needs an input and an output file");
  const std::string in_path = parsed.positional[0], out_path = parsed.positional[1];
  const RepackSettings settings = parse_settings(parsed);
  check_repack_target(in_path, out_path);  // before any work: not IN, not a directory, a writable folder

  // After a failed write (a full disk, a file size limit) HDF5 cannot close
  // the output, and closing it again when the program exits crashed
  // (SIGSEGV in H5F__close_cb): every handle is closed here, on every path,
  // so HDF5's own close at exit is not needed. Before any other HDF5 call.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  require_plugin();
  Handle in_file(H5Fopen(in_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!in_file.ok()) throw ToolError("cannot open " + in_path + " as HDF5: " + hdf5_error_text("not an HDF5 file"));

  InterruptGuard guard;
  Stopwatch clock;
  std::vector<DatasetReport> reports;
  std::vector<std::string> warnings;
  double write_seconds = 0;
  PartialOutput partial(out_path);  // removed on every way out unless committed
  try {
    // The input's file creation properties keep the root group's link and
    // attribute order tracking (netCDF-4 relies on it) and its user block.
    // The root group's own creation order flags are not in the file's
    // creation properties HDF5 returns; they come from the group.
    Handle fcpl(H5Pcopy(Handle(H5Fget_create_plist(in_file.get()), H5Pclose).get()), H5Pclose);
    {
      Handle root(H5Gopen2(in_file.get(), "/", H5P_DEFAULT), H5Gclose);
      Handle gcpl(H5Gget_create_plist(root.get()), H5Pclose);
      unsigned order = 0;
      if (H5Pget_link_creation_order(gcpl.get(), &order) >= 0) H5Pset_link_creation_order(fcpl.get(), order);
      if (H5Pget_attr_creation_order(gcpl.get(), &order) >= 0) H5Pset_attr_creation_order(fcpl.get(), order);
      H5Eclear2(H5E_DEFAULT);
    }
    hsize_t user_block = 0;
    H5Pget_userblock(fcpl.get(), &user_block);
    // The partial file exists (created empty by this run): HDF5 truncates it.
    hid_t out_id = H5Fcreate(partial.path().c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT);
    if (out_id < 0) throw ToolError("cannot create " + partial.path() + ": " + hdf5_error_text("?"));
    Handle out_file(out_id, H5Fclose);
    Repack run(settings, in_file.get(), out_file.get(), partial.path());
    {
      Progress progress(settings.progress, run.bytes_to_compress());
      run.run(progress);
    }
    require_hdf5(H5Fflush(out_file.get(), H5F_SCOPE_GLOBAL), "cannot write " + partial.path());
    out_file.reset();
    // HDF5 sizes the user block but writes zeros: its bytes are IN's (as h5repack copies them).
    copy_user_block(in_path, partial.path(), user_block);
    write_seconds = clock.seconds();
    if (settings.verify) {
      Handle written(H5Fopen(partial.path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
      if (!written.ok()) throw ToolError("--verify: cannot reopen " + partial.path() + ": " + hdf5_error_text("?"));
      uint64_t total = 0;
      for (const DatasetReport& r : run.reports()) total += r.compressed ? r.raw_bytes : 0;
      Progress progress(settings.progress, total);
      run.verify(written.get(), progress);
    }
    reports = run.reports();
    warnings = run.warnings();
    check_interrupted();
    // A failed check keeps an existing OUT as it was: only a good copy replaces it.
    if (count_failed(reports) == 0) partial.commit();
  } catch (const Interrupted&) {
    partial.remove();
    std::fprintf(stderr, "h5fz repack: interrupted (signal %d); removed the partial output, %s was not written\n",
                 static_cast<int>(g_interrupt_signal), out_path.c_str());
    return 130;
  }

  if (!settings.quiet) print_report(reports, settings.verify, in_path, out_path, write_seconds);
  for (const std::string& w : warnings) std::fprintf(stderr, "h5fz repack: warning: %s\n", w.c_str());
  if (count_failed(reports)) {
    // Complete on its own: under --quiet there is no table to point at.
    std::fprintf(stderr, "h5fz repack: %s; %s was not written\n",
                 failure_summary(reports, settings.verify, settings.quiet).c_str(), out_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace h5fz
