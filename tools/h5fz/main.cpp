// h5fz: compress, decompress and inspect FZM frames and HDF5 files written with
// the H5Z-FZ filter, and print the filter parameters for h5repack and h5py.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"
#include "filter_params.hpp"
#include "presets_text.hpp"

namespace {

// The preset lines come from the engine's preset table (presets_text.hpp).
std::string usage_text() {
  return "usage: h5fz <command> [options]\n"
    "\n"
    "commands:\n"
    "  compress    raw array file -> FZM frame (one chunk through the engine); ratio and\n"
    "              MB/s, and with --verify the round trip's errors and bound check\n"
    "  decompress  FZM frame -> raw array file; with --compare ORIGINAL: bit-exactness, and\n"
    "              for float32/float64 max abs error, max point-wise relative error, PSNR,\n"
    "              NRMSE and the number of elements outside the bound (must be 0)\n"
    "  inspect     print the structure of an FZM frame or of every dataset in an HDF5 file\n"
    "  params      print the cd_values for h5repack -f UD=... and h5py compression_opts\n"
    "  presets     list the presets (--python: as tools/python/h5fz/presets_table.py)\n"
    "  repack      HDF5/netCDF-4 file -> a copy with its numeric datasets compressed,\n"
    "              many chunks at a time (GPU or all cores); progress, a table per\n"
    "              dataset, --verify\n"
    "  read        a box of a dataset, many chunks decoded at a time (as h5fz.read);\n"
    "              --compare with HDF5's read through the filter\n"
    "  write       a box of a dataset from a raw file, many chunks encoded at a time\n"
    "              (as h5fz.write): the filter's own frames, stored directly\n"
    "  compare     two HDF5 files, dataset by dataset: errors, PSNR, ratios (--plot: a\n"
    "              picture); runs the Python package h5fz\n"
    "\n"
    "presets: lossless (1, default); lossy for float32/float64 (other types stay lossless):\n"
    "  " + h5fz::lossy_presets_summary() + "\n"
    "  (noa: bound relative to the chunk's finite value range; rel: point-wise)\n"
    "\n"
    "  h5fz <command> --help   options of one command\n"
    "  h5fz --version          tool and engine versions\n"
    "\n"
    "exit status: 0 success, 1 failure (bad data, I/O, mismatch), 2 bad usage\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(usage_text().c_str(), stderr);
    return 2;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (command == "--help" || command == "-h" || command == "help") {
      std::fputs(usage_text().c_str(), stdout);
      return 0;
    }
    if (command == "--version" || command == "-V") {
      std::printf("h5fz %s (engine %s, H5Z-FZ filter id 32850)\n", H5FZ_VERSION, fz::version());
      return 0;
    }
    if (command == "compress") return h5fz::run_compress(rest);
    if (command == "decompress") return h5fz::run_decompress(rest);
    if (command == "inspect") return h5fz::run_inspect(rest);
    if (command == "params") return h5fz::run_params(rest);
    if (command == "presets") return h5fz::run_presets(rest);
    if (command == "compare") return h5fz::run_compare(rest);
    if (command == "repack") return h5fz::run_repack(rest);
    if (command == "read") return h5fz::run_read(rest);
    if (command == "write") return h5fz::run_write(rest);
    throw h5fz::UsageError("unknown command '" + command + "'");
  } catch (const h5fz::UsageError& e) {
    std::fprintf(stderr, "h5fz: %s\n(try 'h5fz --help' or 'h5fz <command> --help')\n", e.what());
    return 2;
  } catch (const fz::Error& e) {
    // The engine names the operation itself ("decompress: ..."); don't say it twice.
    std::string message = e.what();
    if (message.rfind(command + ": ", 0) == 0) message.erase(0, command.size() + 2);
    std::fprintf(stderr, "h5fz %s: %s\n", command.c_str(), message.c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "h5fz %s: out of memory\n", command.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h5fz %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
