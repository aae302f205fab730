// Shared pieces of the h5fz subcommands: argument parsing, type and shape
// spelling, whole-file I/O, timing and number formatting.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

// A mistake in how the tool was called: main prints it with a hint to --help and
// exits 2, so scripts can tell bad usage (2) from bad data (1).
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// Anything else that stops a subcommand (missing file, size mismatch, ...): exit 1.
class ToolError : public std::runtime_error {
 public:
  explicit ToolError(const std::string& what) : std::runtime_error(what) {}
};

// Options of one subcommand: `valued` take an argument (`--x V` or `--x=V`),
// `flags` do not. Anything else starting with "--" is refused by name, so a typo
// never turns into a positional file name.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
  std::map<std::string, bool> flags;

  bool has(const std::string& name) const { return values.count(name) || flags.count(name); }
  std::string get(const std::string& name, const std::string& fallback = "") const;
};
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<std::string>& valued,
                      const std::vector<std::string>& flags);

// --dtype spellings: f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bytesN (also the
// numpy-like float32, int16, ...). Little-endian: raw files here are little-endian.
fz::DataType parse_dtype(const std::string& text);
std::string dtype_name(const fz::DataType& dtype);

// "91,91,91" or "91x91x91", slowest first.
std::vector<uint64_t> parse_shape(const std::string& text);
std::string shape_text(const std::vector<uint64_t>& dims);
uint64_t element_count(const std::vector<uint64_t>& dims);

fz::Preset parse_preset(const std::string& text);  // name or numeric id
fz::ErrorMode parse_mode(const std::string& text);  // abs | noa | rel (or 0/1/2)
double parse_positive_double(const std::string& option, const std::string& text);

// The spline tuning of presets 5 and 6 (cuszhi-tp, cuszhi-cr):
// --tuning off|ratio-first|quality-first|manual (or 0..3), and with manual
// both --alpha A and --beta B (finite, in [1, fz::kMaxSplineAlphaBeta]).
// Sets options.spline_* from `parsed` (options.preset already set) and
// returns whether --tuning was given. Throws UsageError for --tuning on
// another preset, --alpha/--beta without manual, manual without both.
constexpr const char* kSplineTuningOptions[] = {"--tuning", "--alpha", "--beta"};
fz::SplineTuning parse_spline_tuning(const std::string& text);
bool apply_spline_tuning(const ParsedArgs& parsed, fz::Options& options);
// "  --tuning T ..." lines for a subcommand's help.
std::string spline_tuning_help_text();
// ", tuning quality-first" / ", tuning manual alpha 1.5 beta 4" for presets 5 and 6, else "".
std::string spline_tuning_text(const fz::Options& options);
// The fewest digits (%g) that give `value` back: "1.5", "0.001", "1.1".
std::string shortest_double(double value);
unsigned parse_unsigned(const std::string& option, const std::string& text);
// The plugin folder that belongs to this program: build/plugin beside
// build/tools/h5fz, or lib/h5z-fz/plugin beside an installed bin/h5fz; ""
// when neither holds libH5Zfz.so.
std::string plugin_dir_beside_program();
// "a,b,,c" -> {"a", "b", "c"}: the comma-separated items, empty ones left out.
std::vector<std::string> split_commas(const std::string& text);

fz::Bytes read_whole_file(const std::string& path);
void write_whole_file(const std::string& path, const fz::Bytes& bytes);

std::string hex_bytes(const fz::Bytes& bytes, size_t limit = 64);
std::string human_bytes(uint64_t bytes);

// MB/s with MB = 1e6 bytes, measured on the uncompressed size both ways so the
// compress and decompress figures are comparable.
double megabytes_per_second(uint64_t bytes, double seconds);

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Subcommands: each returns the process exit status.
int run_compress(const std::vector<std::string>& args);
int run_decompress(const std::vector<std::string>& args);
int run_inspect(const std::vector<std::string>& args);
int run_params(const std::vector<std::string>& args);
int run_compare(const std::vector<std::string>& args);
int run_repack(const std::vector<std::string>& args);
int run_read(const std::vector<std::string>& args);
int run_write(const std::vector<std::string>& args);

// inspect's two halves.
int inspect_frame_file(const std::string& path, const fz::Bytes& bytes);
void print_frame_info(const fz::FrameInfo& info, const std::string& indent);
int inspect_hdf5_file(const std::string& path, bool with_chunks);

bool wants_help(const std::vector<std::string>& args);

}  // namespace h5fz
