// h5fz read FILE DATASET: a box of a dataset read many chunks at a time
// (chunk_reader.cpp), written as a raw file and/or compared with HDF5's own
// read through the filter, with both speeds.
#include <cstdio>
#include <string>
#include <vector>

#include "chunk_reader.hpp"
#include "cli.hpp"
#include "environment.hpp"
#include "hdf5_handle.hpp"
#include "plugin_lookup.hpp"
#include "repack_copy.hpp"

namespace h5fz {

namespace {

const char* kHelp =
    "usage: h5fz read FILE DATASET [--start A,B,...] [--count X,Y,...] [options]\n"
    "\n"
    "Reads a box of DATASET (default: all of it) the way h5fz.read does: the chunks it\n"
    "touches are read as stored (H5Dread_chunk) and decoded together by the engine, on\n"
    "all cores or the GPU, instead of HDF5 calling the filter one chunk at a time.\n"
    "Prints the size, the chunks and the speed (MB/s of decoded bytes, MB = 1e6).\n"
    "Each frame is checked against the dataset's stored parameters as the filter checks\n"
    "it (element type, preset, error-bound mode and bound): a chunk the filter would\n"
    "refuse is an error here too. A box larger than this machine's memory, or a dataset\n"
    "of variable-length elements (no raw bytes stand for them), is refused. A dataset\n"
    "with other filters is read through HDF5; a filter HDF5 cannot find is named.\n"
    "\n"
    "  --start A,B,...  first element per axis (default 0)\n"
    "  --count X,Y,...  elements per axis (default: to the end)\n"
    "  --output RAW     write the box as raw bytes (C order, the file's byte order)\n"
    "  --compare        also read the box with H5Dread through the filter (needs the\n"
    "                   plugin: HDF5_PLUGIN_PATH, else the one beside this program): the\n"
    "                   bytes must be identical (else exit 1); both speeds\n"
    "  --threads N      CPU threads (default: H5Z_FZ_THREADS, else all cores)\n"
    "  --device D       auto (default), cpu, cuda or cuda:N\n";

}  // namespace

int run_read(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const ParsedArgs parsed =
      parse_args(args, {"--start", "--count", "--output", "--threads", "--device"}, {"--compare"});
  if (parsed.positional.size() != 2) throw UsageError("read needs a file and a dataset");
  BoxCommand opened = open_box_command(parsed, H5F_ACC_RDONLY);
  const fz::Options& policy = opened.policy;
  const Handle& dataset = opened.dataset;
  const Handle& space = opened.space;
  const Handle& type = opened.type;
  const int rank = static_cast<int>(opened.dims.size());
  ReadBox box{opened.start, opened.count};
  const size_t element = H5Tget_size(type.get());
  if (has_variable_length(type.get())) throw ToolError(variable_length_refusal(parsed.positional[1]));
  // Checked before anything is allocated: a count that wraps would make a
  // small buffer for a huge box (issue 28 item 7).
  const uint64_t bytes = box_bytes(box.count, element, parsed.positional[1]);
  if (parsed.has("--compare") && bytes > fz::total_memory() / 2 && fz::total_memory() != 0)
    throw ToolError(parsed.positional[1] + ": --compare needs the box twice (" + human_bytes(2 * bytes) +
                    "), more than this machine's memory: read a smaller box (--start, --count)");
  if (parsed.has("--compare") && !find_plugin())
    throw ToolError("--compare reads through the H5Z-FZ filter, and its plugin (libH5Zfz.so) was not found: set "
                    "HDF5_PLUGIN_PATH to the folder that holds it");
  fz::Bytes out(static_cast<size_t>(bytes));
  Stopwatch batch_clock;
  const ReadStats stats = read_box(dataset.get(), box, out.data(), policy);
  const double batch_seconds = batch_clock.seconds();
  std::printf("read %s [%s] (%zu-byte elements): %s from %s stored in %llu chunks, %.3f s, %.0f MB/s%s\n",
              parsed.positional[1].c_str(), shape_text(std::vector<uint64_t>(box.count.begin(), box.count.end())).c_str(),
              element,
              human_bytes(out.size()).c_str(), human_bytes(stats.frame_bytes).c_str(),
              static_cast<unsigned long long>(stats.chunks), batch_seconds,
              megabytes_per_second(out.size(), batch_seconds),
              stats.through_filter ? " (not H5Z-FZ alone: read through HDF5's filters)" : "");
  if (parsed.has("--output")) write_whole_file(parsed.get("--output"), out);
  if (parsed.has("--compare")) {
    fz::Bytes through(out.size());
    Stopwatch clock;
    Handle memory(H5Screate_simple(rank, box.count.data(), nullptr), H5Sclose);
    require_hdf5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, box.start.data(), nullptr, box.count.data(), nullptr),
                 "cannot select the box");
    if (bytes && H5Dread(dataset.get(), type.get(), memory.get(), space.get(), H5P_DEFAULT, through.data()) < 0) {
      Handle dcpl(H5Dget_create_plist(dataset.get()), H5Pclose);
      const std::string missing = missing_filters(dcpl.get());
      require_hdf5(-1, "cannot read through the filter" + (missing.empty() ? std::string() : ": " + missing));
    }
    const double seconds = clock.seconds();
    const bool identical = through == out;
    std::printf("through the filter (H5Dread): %.3f s, %.0f MB/s; %s; batch read %.2fx the filter's speed\n", seconds,
                megabytes_per_second(out.size(), seconds), identical ? "identical bytes" : "THE BYTES DIFFER",
                batch_seconds > 0 ? seconds / batch_seconds : 0.0);
    if (!identical) return 1;
  }
  return 0;
}

}  // namespace h5fz
