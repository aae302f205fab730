// fz_bench: lossless throughput and ratio of the engine on the real fields.
// A benchmark program, not a test: it prints a markdown table (recorded in
// docs/PERFORMANCE.md). Each field is compressed whole, as one chunk, with one
// CPU thread and with all of them; the best of N repetitions is reported, and
// every round trip is checked bit for bit (exit 1 if any differs).
//
//   fz_bench [--data DIR] [--reps N] [--threads N] [--preset P]
//   data directory: --data, else $FZ_DATA, else ../shared/data beside the repo
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "fz/fz.hpp"

namespace {

// The real fields of ../shared/data/README.md (C order, slowest extent first).
struct Field {
  const char* file;
  fz::DataType dtype;
  std::vector<uint64_t> dims;
};

const std::vector<Field>& real_fields() {
  static const std::vector<Field> fields = {
      {"vorticity.128_128_41", fz::DataType::of<float>(), {41, 128, 128}},
      {"vorticity.512_512", fz::DataType::of<float>(), {512, 512}},
      {"wmag91.float", fz::DataType::of<float>(), {91, 91, 91}},
      {"999x999.float", fz::DataType::of<float>(), {999, 999}},
      {"const32x32x59.float", fz::DataType::of<float>(), {59, 32, 32}},
      {"pressure.384_384.f64", fz::DataType::of<double>(), {384, 384}},
  };
  return fields;
}

bool read_file(const std::string& path, fz::Bytes& bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Measurement {
  double compress_seconds = std::numeric_limits<double>::infinity();
  double decompress_seconds = std::numeric_limits<double>::infinity();
  size_t frame_bytes = 0;
  bool exact = true;
};

Measurement measure(const Field& field, const fz::Bytes& data, const fz::Options& options, int repetitions) {
  Measurement m;
  fz::Bytes decoded(data.size());
  for (int rep = 0; rep < repetitions; ++rep) {
    auto start = std::chrono::steady_clock::now();
    fz::Bytes frame = fz::compress(data.data(), data.size(), field.dtype, field.dims, options);
    m.compress_seconds = std::min(m.compress_seconds, seconds_since(start));
    m.frame_bytes = frame.size();

    // Poison the output so a decoder that writes nothing cannot pass.
    std::fill(decoded.begin(), decoded.end(), 0xA5);
    start = std::chrono::steady_clock::now();
    size_t length = fz::decompress_into(frame.data(), frame.size(), decoded.data(), decoded.size());
    m.decompress_seconds = std::min(m.decompress_seconds, seconds_since(start));
    if (length != data.size() || std::memcmp(decoded.data(), data.data(), data.size()) != 0) m.exact = false;
  }
  return m;
}

double mb_per_s(size_t bytes, double seconds) { return bytes / 1e6 / seconds; }

std::string shape_text(const std::vector<uint64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text;
}

int usage(const char* message) {
  std::fprintf(stderr, "fz_bench: %s\nusage: fz_bench [--data DIR] [--reps N] [--threads N]\n", message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = std::getenv("FZ_DATA") ? std::getenv("FZ_DATA") : FZ_DEFAULT_DATA_DIR;
  int repetitions = 5;
  unsigned all_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--data") data_dir = value();
      else if (arg == "--reps") repetitions = std::stoi(value());
      else if (arg == "--threads") all_threads = static_cast<unsigned>(std::stoul(value()));
      else if (arg == "--help" || arg == "-h") {
        std::printf("usage: fz_bench [--data DIR] [--reps N] [--threads N]\n");
        return 0;
      }
      else return usage(("unknown argument " + arg).c_str());
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (repetitions < 1 || all_threads < 1) return usage("--reps and --threads must be >= 1");

  std::printf("fz_bench: engine %s, preset lossless, whole field = one chunk, best of %d, "
              "MB = 1e6 bytes of uncompressed data, threads 1 and %u\n\n",
              fz::version(), repetitions, all_threads);
  std::printf("| field | dtype | shape | MB | ratio | comp MB/s 1T | decomp MB/s 1T | comp MB/s %uT | decomp MB/s %uT | round trip |\n",
              all_threads, all_threads);
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");

  int failures = 0;
  size_t total_raw = 0, total_frames = 0;
  for (const Field& field : real_fields()) {
    std::string path = data_dir + "/" + field.file;
    fz::Bytes data;
    if (!read_file(path, data)) {
      std::fprintf(stderr, "fz_bench: cannot read %s (set --data or FZ_DATA)\n", path.c_str());
      ++failures;
      continue;
    }
    uint64_t expected = field.dtype.size;
    for (uint64_t d : field.dims) expected *= d;
    if (data.size() != expected) {
      std::fprintf(stderr, "fz_bench: %s has %zu bytes, expected %llu\n", path.c_str(), data.size(),
                   static_cast<unsigned long long>(expected));
      ++failures;
      continue;
    }
    fz::Options options;
    options.preset = fz::Preset::Lossless;
    try {
      options.threads = 1;
      Measurement one = measure(field, data, options, repetitions);
      options.threads = all_threads;
      Measurement all = measure(field, data, options, repetitions);
      bool exact = one.exact && all.exact;
      if (!exact || one.frame_bytes != all.frame_bytes) ++failures;  // frames must not depend on threads
      std::printf("| %s | %s | %s | %.2f | %.3f | %.1f | %.1f | %.1f | %.1f | %s |\n", field.file,
                  field.dtype.size == 8 ? "f64" : "f32", shape_text(field.dims).c_str(), data.size() / 1e6,
                  static_cast<double>(data.size()) / one.frame_bytes, mb_per_s(data.size(), one.compress_seconds),
                  mb_per_s(data.size(), one.decompress_seconds), mb_per_s(data.size(), all.compress_seconds),
                  mb_per_s(data.size(), all.decompress_seconds),
                  !exact ? "MISMATCH" : one.frame_bytes != all.frame_bytes ? "frame size depends on threads" : "bit-exact");
      total_raw += data.size();
      total_frames += one.frame_bytes;
    } catch (const fz::Error& e) {
      std::printf("| %s | | | | | | | | | engine error: %s |\n", field.file, e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  if (total_frames)
    std::printf("\nall fields: %zu -> %zu bytes, overall ratio %.3f\n", total_raw, total_frames,
                static_cast<double>(total_raw) / total_frames);
  if (failures) std::printf("%d field(s) FAILED (missing data, engine error or round-trip mismatch)\n", failures);
  return failures ? 1 : 0;
}
