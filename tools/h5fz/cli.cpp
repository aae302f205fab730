#include "cli.hpp"
#include "presets_text.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

namespace h5fz {

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<std::string>& valued,
                      const std::vector<std::string>& flags) {
  auto contains = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  ParsedArgs parsed;
  bool options_ended = false;  // after "--" everything is a file name, even "-x"
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_ended || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (contains(valued, name)) {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option " + name + " needs a value");
        value = args[++i];
      }
      if (parsed.values.count(name)) throw UsageError("option " + name + " given twice");
      parsed.values[name] = value;
    } else if (contains(flags, name)) {
      if (inline_value) throw UsageError("option " + name + " takes no value");
      parsed.flags[name] = true;
    } else {
      throw UsageError("unknown option " + name);
    }
  }
  return parsed;
}

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

fz::DataType parse_dtype(const std::string& text) {
  using fz::ElementClass;
  static const std::map<std::string, fz::DataType> known = {
      {"f16", {ElementClass::Float, 2}},    {"float16", {ElementClass::Float, 2}},
      {"f32", {ElementClass::Float, 4}},    {"float32", {ElementClass::Float, 4}},
      {"f64", {ElementClass::Float, 8}},    {"float64", {ElementClass::Float, 8}},
      {"i8", {ElementClass::Signed, 1}},    {"int8", {ElementClass::Signed, 1}},
      {"i16", {ElementClass::Signed, 2}},   {"int16", {ElementClass::Signed, 2}},
      {"i32", {ElementClass::Signed, 4}},   {"int32", {ElementClass::Signed, 4}},
      {"i64", {ElementClass::Signed, 8}},   {"int64", {ElementClass::Signed, 8}},
      {"u8", {ElementClass::Unsigned, 1}},  {"uint8", {ElementClass::Unsigned, 1}},
      {"u16", {ElementClass::Unsigned, 2}}, {"uint16", {ElementClass::Unsigned, 2}},
      {"u32", {ElementClass::Unsigned, 4}}, {"uint32", {ElementClass::Unsigned, 4}},
      {"u64", {ElementClass::Unsigned, 8}}, {"uint64", {ElementClass::Unsigned, 8}},
  };
  auto it = known.find(text);
  if (it != known.end()) return it->second;
  if (text.rfind("bytes", 0) == 0 && text.size() > 5) {
    unsigned size = parse_unsigned("--dtype bytesN", text.substr(5));
    if (size == 0) throw UsageError("--dtype bytesN needs N >= 1");
    return {ElementClass::Opaque, size};
  }
  throw UsageError("unknown --dtype '" + text + "' (f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bytesN)");
}

std::string dtype_name(const fz::DataType& dtype) {
  std::string name;
  switch (dtype.element_class) {
    case fz::ElementClass::Float: name = "float" + std::to_string(dtype.size * 8); break;
    case fz::ElementClass::Signed: name = "int" + std::to_string(dtype.size * 8); break;
    case fz::ElementClass::Unsigned: name = "uint" + std::to_string(dtype.size * 8); break;
    default: name = "bytes" + std::to_string(dtype.size); break;
  }
  // Byte order only means something for multi-byte numbers.
  if (dtype.size > 1 && dtype.element_class != fz::ElementClass::Opaque)
    name += dtype.order == fz::ByteOrder::Big ? " big-endian" : " little-endian";
  return name;
}

std::vector<uint64_t> parse_shape(const std::string& text) {
  std::vector<uint64_t> dims;
  std::string item;
  std::string normalized = text;
  std::replace(normalized.begin(), normalized.end(), 'x', ',');
  std::stringstream stream(normalized);
  while (std::getline(stream, item, ',')) {
    if (item.empty()) throw UsageError("--shape '" + text + "' has an empty extent");
    if (item.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--shape '" + text + "': '" + item + "' is not a whole number");
    errno = 0;
    unsigned long long value = std::strtoull(item.c_str(), nullptr, 10);
    if (errno == ERANGE) throw UsageError("--shape extent '" + item + "' is too large");
    if (value == 0) throw UsageError("--shape '" + text + "' has a zero extent");
    dims.push_back(value);
  }
  if (dims.empty()) throw UsageError("--shape is empty");
  return dims;
}

std::string shape_text(const std::vector<uint64_t>& dims) {
  if (dims.empty()) return "(scalar)";
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? " x " : "") + std::to_string(dims[i]);
  return text;
}

uint64_t element_count(const std::vector<uint64_t>& dims) {
  uint64_t count = 1;
  for (uint64_t d : dims) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / d)
      throw UsageError("shape " + shape_text(dims) + " overflows 64 bits");
    count *= d;
  }
  return count;
}

fz::Preset parse_preset(const std::string& text) {
  if (const fz::PresetInfo* named = fz::find_preset(text)) return named->id;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const unsigned id = parse_unsigned("--preset", text);
    if (id <= 0xFF && fz::find_preset(static_cast<fz::Preset>(id))) return static_cast<fz::Preset>(id);
  }
  throw UsageError("unknown --preset '" + text + "' (" + preset_choices_text() + ")");
}

fz::ErrorMode parse_mode(const std::string& text) {
  if (text == "abs" || text == "ABS" || text == "0") return fz::ErrorMode::Abs;
  if (text == "noa" || text == "NOA" || text == "1") return fz::ErrorMode::Noa;
  if (text == "rel" || text == "REL" || text == "2") return fz::ErrorMode::Rel;
  throw UsageError("unknown --mode '" + text + "' (abs, noa = relative to the value range, rel = point-wise)");
}

double parse_positive_double(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value))
    throw UsageError(option + " '" + text + "' is not a finite number");
  if (!(value > 0)) throw UsageError(option + " must be positive, got " + text);
  return value;
}

fz::SplineTuning parse_spline_tuning(const std::string& text) {
  for (unsigned id = 0; id <= static_cast<unsigned>(fz::SplineTuning::kManual); ++id) {
    const auto tuning = static_cast<fz::SplineTuning>(id);
    if (text == fz::spline_tuning_name(tuning) || text == std::to_string(id)) return tuning;
  }
  throw UsageError("unknown --tuning '" + text + "' (off, ratio-first, quality-first, manual, or 0..3)");
}

namespace {

bool is_spline_preset(fz::Preset preset) {
  return preset == fz::Preset::CuszHiTp || preset == fz::Preset::CuszHiCr;
}

double parse_alpha_beta(const ParsedArgs& parsed, const std::string& option) {
  const double value = parse_positive_double(option, parsed.get(option));
  if (!(value >= 1.0 && value <= fz::kMaxSplineAlphaBeta)) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", fz::kMaxSplineAlphaBeta);
    throw UsageError(option + " " + parsed.get(option) + " is outside [1, " + limit + "]");
  }
  return value;
}

}  // namespace

bool apply_spline_tuning(const ParsedArgs& parsed, fz::Options& options) {
  const bool tuning = parsed.has("--tuning");
  const bool alpha = parsed.has("--alpha");
  const bool beta = parsed.has("--beta");
  if (!tuning && !alpha && !beta) return false;
  if (!is_spline_preset(options.preset)) {
    throw UsageError(std::string("--tuning/--alpha/--beta apply to presets cuszhi-tp and cuszhi-cr (the spline "
                                 "predictor); preset '") + fz::preset_name(options.preset) + "' has none");
  }
  if (!tuning) throw UsageError("--alpha/--beta go with --tuning manual");
  options.spline_tuning = parse_spline_tuning(parsed.get("--tuning"));
  const bool manual = options.spline_tuning == fz::SplineTuning::kManual;
  if (!manual && (alpha || beta)) {
    throw UsageError(std::string("--alpha/--beta go with --tuning manual, not --tuning ") +
                     fz::spline_tuning_name(options.spline_tuning));
  }
  if (manual && !(alpha && beta)) throw UsageError("--tuning manual needs both --alpha and --beta");
  if (manual) {
    options.spline_alpha = parse_alpha_beta(parsed, "--alpha");
    options.spline_beta = parse_alpha_beta(parsed, "--beta");
  }
  return true;
}

std::string spline_tuning_help_text() {
  return "  --tuning T   cuszhi-tp and cuszhi-cr only: how the spline predictor is tuned\n"
         "               off            no tuning, alpha = beta = 1: the fastest encoder\n"
         "               ratio-first    (default) each level's interpolation and axis order\n"
         "                              chosen on a sample of tiles; alpha = beta = 1 up to\n"
         "                              bound / range 1e-3, 1.25 and 2 from 1e-2 (more PSNR\n"
         "                              at loose bounds for about the same ratio)\n"
         "               quality-first  as ratio-first with tighter coarse levels (alpha 1..2\n"
         "                              from the NOA bound, 1.5 for abs; beta 4): higher PSNR\n"
         "                              at the same bound, lower ratio\n"
         "               manual         as ratio-first with --alpha and --beta: level l (0 the\n"
         "                              finest) gets the bound eb / min(alpha^l, beta)\n"
         "  --alpha A    --tuning manual: alpha in [1, 1024]\n"
         "  --beta B     --tuning manual: beta in [1, 1024]\n";
}

std::string spline_tuning_text(const fz::Options& options) {
  if (!is_spline_preset(options.preset)) return "";
  std::string text = std::string(", tuning ") + fz::spline_tuning_name(options.spline_tuning);
  if (options.spline_tuning == fz::SplineTuning::kManual) {
    text += " alpha " + shortest_double(options.spline_alpha) + " beta " + shortest_double(options.spline_beta);
  }
  return text;
}

std::string shortest_double(double value) {
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string plugin_dir_beside_program() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string dir(self, static_cast<size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  const std::string parent = dir.substr(0, dir.rfind('/'));
  for (const std::string& candidate : {parent + "/plugin", parent + "/lib/h5z-fz/plugin"}) {
    if (access((candidate + "/libH5Zfz.so").c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) parts.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

unsigned parse_unsigned(const std::string& option, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(option + " '" + text + "' is not a whole number");
  errno = 0;
  unsigned long value = std::strtoul(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value > std::numeric_limits<unsigned>::max())
    throw UsageError(option + " '" + text + "' is too large");
  return static_cast<unsigned>(value);
}

fz::Bytes read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw ToolError("cannot open '" + path + "': " + std::strerror(errno));
  std::streamoff size = in.tellg();
  if (size < 0) throw ToolError("cannot determine the size of '" + path + "'");
  fz::Bytes bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw ToolError("cannot read '" + path + "'");
  return bytes;
}

void write_whole_file(const std::string& path, const fz::Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ToolError("cannot create '" + path + "': " + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw ToolError("cannot write '" + path + "' (disk full?)");
}

std::string hex_bytes(const fz::Bytes& bytes, size_t limit) {
  if (bytes.empty()) return "(none)";
  std::string text;
  char cell[4];
  for (size_t i = 0; i < bytes.size() && i < limit; ++i) {
    std::snprintf(cell, sizeof cell, "%02x", bytes[i]);
    text += (i ? " " : "") + std::string(cell);
  }
  if (bytes.size() > limit) text += " ... (" + std::to_string(bytes.size()) + " bytes)";
  return text;
}

std::string human_bytes(uint64_t bytes) {
  char text[64];
  if (bytes < 10000)
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else if (bytes < 10000000)
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  else
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  return text;
}

double megabytes_per_second(uint64_t bytes, double seconds) {
  return seconds > 0 ? bytes / 1e6 / seconds : std::numeric_limits<double>::infinity();
}

}  // namespace h5fz
