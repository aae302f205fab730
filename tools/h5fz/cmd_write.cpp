// h5fz write FILE DATASET --input RAW: a box of a dataset written many chunks
// at a time (chunk_writer.cpp), from a raw file, with its speed.
#include <cstdio>
#include <string>
#include <vector>

#include "chunk_reader.hpp"
#include "chunk_writer.hpp"
#include "cli.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy.hpp"

namespace h5fz {

namespace {

const char* kHelp =
    "usage: h5fz write FILE DATASET --input RAW [--start A,B,...] [--count X,Y,...] [options]\n"
    "\n"
    "Writes RAW (the box's elements in C order, in the dataset's type and the file's byte\n"
    "order) to a box of DATASET (default: all of it), an existing dataset with H5Z-FZ as\n"
    "its only filter, the way h5fz.write does: the chunks the box covers are encoded\n"
    "together by the engine, on all cores or the GPU, into the frames the filter writes\n"
    "for them, and stored with H5Dwrite_chunk. A chunk the box covers in part is merged\n"
    "into what it holds, as HDF5 merges it. Prints the chunks and the speed (MB/s of the\n"
    "box's bytes, MB = 1e6).\n"
    "\n"
    "  --input RAW      the box's bytes (its size must be the box's)\n"
    "  --start A,B,...  first element per axis (default 0)\n"
    "  --count X,Y,...  elements per axis (default: to the end)\n"
    "  --threads N      CPU threads (default: H5Z_FZ_THREADS, else all cores)\n"
    "  --device D       auto (default), cpu, cuda or cuda:N\n";

}  // namespace

int run_write(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const ParsedArgs parsed = parse_args(args, {"--input", "--start", "--count", "--threads", "--device"}, {});
  if (parsed.positional.size() != 2) throw UsageError("write needs a file and a dataset");
  if (!parsed.has("--input")) throw UsageError("write needs --input RAW");
  BoxCommand opened = open_box_command(parsed, H5F_ACC_RDWR);
  const Handle& file = opened.file;
  const Handle& type = opened.type;
  WriteBox box{opened.start, opened.count};
  const size_t element = H5Tget_size(type.get());
  const uint64_t bytes = box_bytes(box.count, element, parsed.positional[1]);
  const fz::Bytes input = read_whole_file(parsed.get("--input"));
  if (input.size() != bytes)
    throw ToolError(parsed.get("--input") + " holds " + std::to_string(input.size()) + " bytes, the box [" +
                    shape_text(std::vector<uint64_t>(box.count.begin(), box.count.end())) + "] of " +
                    std::to_string(element) + "-byte elements " + std::to_string(bytes));
  Stopwatch clock;
  const WriteStats stats = write_box(opened.dataset.get(), box, input.data(), opened.policy);
  require_hdf5(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "cannot flush " + parsed.positional[0]);
  const double seconds = clock.seconds();
  std::printf("wrote %s [%s] (%zu-byte elements): %s as %s in %llu chunks (%llu merged into what they held), %.3f s, "
              "%.0f MB/s\n",
              parsed.positional[1].c_str(), shape_text(std::vector<uint64_t>(box.count.begin(), box.count.end())).c_str(),
              element, human_bytes(bytes).c_str(), human_bytes(stats.frame_bytes).c_str(),
              static_cast<unsigned long long>(stats.chunks), static_cast<unsigned long long>(stats.merged), seconds,
              megabytes_per_second(bytes, seconds));
  return 0;
}

}  // namespace h5fz
