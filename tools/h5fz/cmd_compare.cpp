// h5fz compare A B [--plot out.png]: the Python package's comparison
// (tools/python/h5fz/_compare.py: per dataset errors, PSNR, ratios and the
// picture, which needs numpy, h5py and matplotlib), run with the
// interpreter H5FZ_PYTHON names (default python3) and the package found
// where it is installed or in this clone's tools/python.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"

namespace h5fz {

namespace {

const char* kHelp =
    "usage: h5fz compare A B [--plot out.png]\n"
    "\n"
    "Compares every numeric dataset of A (the original) with the dataset of the same\n"
    "name and shape in B (compressed): largest absolute error, largest error relative\n"
    "to the element, PSNR over A's finite range, NaN/Inf elements changed, and both\n"
    "files' ratios (each file's elements' bytes over the bytes it stores); integers are\n"
    "compared exactly (uint64 differences above 2^53 included), and a dataset whose\n"
    "element type differs between A and B is flagged; datasets are read a block at a time. --plot writes a PNG per dataset: a slice of A, the same\n"
    "slice of B, their difference and the histogram of its errors.\n"
    "\n"
    "Runs the Python package h5fz (python -m h5fz compare): numpy and h5py, and\n"
    "matplotlib for --plot. H5FZ_PYTHON chooses the interpreter (default python3);\n"
    "the package is the installed one (pip install tools/python), else this clone's;\n"
    "the plugin HDF5_PLUGIN_PATH names, else the one built beside this program.\n";

}  // namespace

int run_compare(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  size_t files = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--plot") {
      if (i + 1 >= args.size()) throw UsageError("--plot needs a file name");
      ++i;
    } else if (args[i].rfind("--", 0) == 0) {
      throw UsageError("compare: unknown option '" + args[i] + "'");
    } else {
      ++files;
    }
  }
  if (files != 2) throw UsageError("compare takes two files, A (the original) and B");
  const char* python = std::getenv("H5FZ_PYTHON");
  const std::string interpreter = python && *python ? python : "python3";
#ifdef H5FZ_PYTHON_DIR
  // This clone's package, after whatever PYTHONPATH already holds (an
  // installed package, found first by the interpreter, wins anyway).
  std::string path = H5FZ_PYTHON_DIR;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path = std::string(old) + ":" + path;
  setenv("PYTHONPATH", path.c_str(), 1);
#endif
  // B's chunks need the plugin: the one built beside this program
  // (build/tools/h5fz -> build/plugin) when HDF5_PLUGIN_PATH says nothing.
  if (const char* given = std::getenv("HDF5_PLUGIN_PATH"); !given || !*given) {
    const std::string plugin = plugin_dir_beside_program();
    if (!plugin.empty()) setenv("HDF5_PLUGIN_PATH", plugin.c_str(), 1);
  }
  std::vector<std::string> argv_text = {interpreter, "-m", "h5fz", "compare"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "h5fz compare: cannot run %s: %s (set H5FZ_PYTHON to a Python with numpy and h5py)\n",
               interpreter.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace h5fz
