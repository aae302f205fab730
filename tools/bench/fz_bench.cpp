// fz_bench: throughput and ratio of the engine on the real fields, for any
// preset. A benchmark program, not a test: it prints markdown tables (recorded
// in docs/PERFORMANCE.md). Each field is compressed whole, as one chunk, with
// one CPU thread and with all of them; the best of N repetitions is reported.
// Every round trip is checked: bit for bit for the lossless preset, element by
// element against the bound for the lossy ones (exit 1 if any fails).
//
// A second table cuts each field into the chunk shape h5py picks by default
// (chunks=True), edge chunks padded to full size as HDF5 stores them. It shows
// the per-chunk cost of the engine alone, to set against what
// compare_filters.py measures through HDF5 with the same chunks.
//
//   fz_bench [--data DIR] [--reps N] [--threads N] [--whole-only | --chunks-only] [--field NAME]
//            [--preset NAME (any of fz::preset_table(): lossless, cusz, cuszhi-cr, ...)]
//            [--mode abs|noa|rel] [--bound B]
//   data directory: --data, else $FZ_DATA, else ../shared/data beside the repo
#include <algorithm>
#include <chrono>
#include <cmath>
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

// The real fields of ../shared/data/README.md (C order, slowest extent first),
// with the chunk shape h5py 3.16 chooses for them with chunks=True (as
// compare_filters.py prints it), so both benchmarks cut the same chunks.
struct Field {
  const char* file;
  fz::DataType dtype;
  std::vector<uint64_t> dims;
  std::vector<uint64_t> h5py_chunk;
};

const std::vector<Field>& real_fields() {
  static const std::vector<Field> fields = {
      {"vorticity.128_128_41", fz::DataType::of<float>(), {41, 128, 128}, {6, 32, 32}},
      {"vorticity.512_512", fz::DataType::of<float>(), {512, 512}, {64, 64}},
      {"wmag91.float", fz::DataType::of<float>(), {91, 91, 91}, {12, 23, 23}},
      {"999x999.float", fz::DataType::of<float>(), {999, 999}, {63, 125}},
      {"const32x32x59.float", fz::DataType::of<float>(), {59, 32, 32}, {15, 16, 16}},
      {"pressure.384_384.f64", fz::DataType::of<double>(), {384, 384}, {48, 48}},
  };
  return fields;
}

struct Chunk {
  fz::Bytes bytes;
  std::vector<uint64_t> dims;
};

bool read_file(const std::string& path, fz::Bytes& bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())));
}

// Cuts a C-order array into chunks of `chunk` extents. Edge chunks keep the full
// chunk shape with zeros beyond the data, as HDF5 stores them (fill value 0).
std::vector<Chunk> cut_into_chunks(const fz::Bytes& data, const std::vector<uint64_t>& dims,
                                   const std::vector<uint64_t>& chunk, size_t element_size) {
  const size_t rank = dims.size();
  std::vector<uint64_t> grid(rank);
  uint64_t chunk_elements = 1;
  for (size_t d = 0; d < rank; ++d) {
    grid[d] = (dims[d] + chunk[d] - 1) / chunk[d];
    chunk_elements *= chunk[d];
  }
  std::vector<Chunk> chunks;
  std::vector<uint64_t> chunk_index(rank, 0);
  while (true) {
    Chunk c;
    c.dims = chunk;
    c.bytes.assign(chunk_elements * element_size, 0);
    // Walk every row of the chunk (all axes but the fastest).
    std::vector<uint64_t> in_chunk(rank, 0);
    const uint64_t row_start = chunk_index[rank - 1] * chunk[rank - 1];
    const uint64_t row_length = std::min(chunk[rank - 1], dims[rank - 1] - row_start);
    while (true) {
      bool inside = true;
      uint64_t source = 0, target = 0;
      for (size_t d = 0; d < rank; ++d) {
        uint64_t coordinate = chunk_index[d] * chunk[d] + (d + 1 < rank ? in_chunk[d] : 0);
        if (coordinate >= dims[d]) inside = false;
        source = source * dims[d] + (d + 1 < rank ? coordinate : row_start);
        target = target * chunk[d] + (d + 1 < rank ? in_chunk[d] : 0);
      }
      if (inside)
        std::memcpy(c.bytes.data() + target * element_size, data.data() + source * element_size,
                    row_length * element_size);
      size_t d = rank - 1;  // next row: odometer over axes 0..rank-2
      while (d > 0 && ++in_chunk[d - 1] == chunk[d - 1]) in_chunk[--d] = 0;
      if (d == 0) break;
    }
    chunks.push_back(std::move(c));
    size_t d = rank;  // next chunk: odometer over the chunk grid
    while (d > 0 && ++chunk_index[d - 1] == grid[d - 1]) chunk_index[--d] = 0;
    if (d == 0) break;
  }
  return chunks;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Measurement {
  double compress_seconds = std::numeric_limits<double>::infinity();
  double decompress_seconds = std::numeric_limits<double>::infinity();
  size_t raw_bytes = 0, frame_bytes = 0;
  bool exact = true;  // bit-exact (lossless) or every element within the bound (lossy)
};

template <typename T>
bool within_bound_typed(const uint8_t* original_bytes, const uint8_t* decoded_bytes, size_t count,
                        const fz::Options& options) {
  const T* original = reinterpret_cast<const T*>(original_bytes);
  const T* decoded = reinterpret_cast<const T*>(decoded_bytes);
  // NOA: the bound is relative to the chunk's finite value range. The engine
  // leaves fill values and +0.0 out of that range, which can only narrow it, so
  // checking against the full finite range here is the looser, simpler check;
  // the tests check the strict one.
  long double allowed = options.bound;
  if (options.mode == fz::ErrorMode::Noa) {
    long double low = INFINITY, high = -INFINITY;
    for (size_t i = 0; i < count; ++i)
      if (std::isfinite(original[i])) low = std::min<long double>(low, original[i]), high = std::max<long double>(high, original[i]);
    allowed = high >= low ? options.bound * (high - low) : 0;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(original[i]) || options.mode == fz::ErrorMode::Abs || options.mode == fz::ErrorMode::Noa) {
      if (!std::isfinite(original[i])) {
        if (std::memcmp(&original[i], &decoded[i], sizeof(T)) != 0) return false;
        continue;
      }
      if (std::fabs(static_cast<long double>(original[i]) - decoded[i]) > allowed) return false;
    } else if (std::fabs(static_cast<long double>(original[i]) - decoded[i]) >
               options.bound * std::fabs(static_cast<long double>(original[i]))) {
      return false;
    }
  }
  return true;
}

bool round_trip_ok(const fz::Bytes& original, const fz::Bytes& decoded, size_t length, const fz::DataType& dtype,
                   const fz::Options& options) {
  if (length != original.size()) return false;
  if (!fz::preset_is_lossy(options.preset) || dtype.element_class != fz::ElementClass::Float)
    return std::memcmp(decoded.data(), original.data(), length) == 0;
  if (dtype.size == 4) return within_bound_typed<float>(original.data(), decoded.data(), length / 4, options);
  return within_bound_typed<double>(original.data(), decoded.data(), length / 8, options);
}

// Compresses then decompresses every chunk, `repetitions` times; keeps the best
// total time of each direction.
Measurement measure(const std::vector<Chunk>& chunks, const fz::DataType& dtype, const fz::Options& options,
                    int repetitions) {
  Measurement m;
  std::vector<fz::Bytes> frames(chunks.size());
  std::vector<fz::Bytes> decoded(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    decoded[i].resize(chunks[i].bytes.size());
    m.raw_bytes += chunks[i].bytes.size();
  }
  for (int rep = 0; rep < repetitions; ++rep) {
    auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < chunks.size(); ++i)
      frames[i] = fz::compress(chunks[i].bytes.data(), chunks[i].bytes.size(), dtype, chunks[i].dims, options);
    m.compress_seconds = std::min(m.compress_seconds, seconds_since(start));
    m.frame_bytes = 0;
    for (const auto& f : frames) m.frame_bytes += f.size();

    // Poison the outputs so a decoder that writes nothing cannot pass.
    for (auto& d : decoded) std::fill(d.begin(), d.end(), 0xA5);
    std::vector<size_t> lengths(chunks.size());
    start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < chunks.size(); ++i)
      lengths[i] =
          fz::decompress_into(frames[i].data(), frames[i].size(), decoded[i].data(), decoded[i].size(), options);
    m.decompress_seconds = std::min(m.decompress_seconds, seconds_since(start));
    for (size_t i = 0; i < chunks.size(); ++i)
      if (!round_trip_ok(chunks[i].bytes, decoded[i], lengths[i], dtype, options)) m.exact = false;
  }
  return m;
}

double mb_per_s(size_t bytes, double seconds) { return bytes / 1e6 / seconds; }

std::string shape_text(const std::vector<uint64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text;
}

const char* const kUsage =
    "usage: fz_bench [--data DIR] [--reps N] [--threads N] [--whole-only | --chunks-only] [--field NAME]\n"
    "                [--preset lossless|pfpl|fzgpu|cusz|cuszhi-tp|cuszhi-cr] [--mode abs|noa|rel] [--bound B]\n";

int usage(const std::string& message) {
  std::fprintf(stderr, "fz_bench: %s\n%s", message.c_str(), kUsage);
  return 2;
}

struct Loaded {
  const Field* field;
  fz::Bytes data;
};

// One table: each field whole, or cut into h5py's chunks.
// Returns the number of failures.
int run_table(const std::vector<Loaded>& fields, bool whole, unsigned all_threads, int repetitions,
              const fz::Options& base_options) {
  std::printf("| field | dtype | %s | MB | ratio | comp MB/s 1T | decomp MB/s 1T | comp MB/s %uT | decomp MB/s %uT | round trip |\n",
              whole ? "shape (one chunk)" : "chunks (h5py default)", all_threads, all_threads);
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  int failures = 0;
  size_t total_raw = 0, total_frames = 0;
  for (const Loaded& loaded : fields) {
    const Field& field = *loaded.field;
    std::vector<Chunk> chunks;
    std::string shape;
    if (whole) {
      chunks.push_back({loaded.data, field.dims});
      shape = shape_text(field.dims);
    } else {
      chunks = cut_into_chunks(loaded.data, field.dims, field.h5py_chunk, field.dtype.size);
      shape = std::to_string(chunks.size()) + " x " + shape_text(field.h5py_chunk);
    }
    fz::Options options = base_options;
    try {
      options.threads = 1;
      Measurement one = measure(chunks, field.dtype, options, repetitions);
      options.threads = all_threads;
      Measurement all = measure(chunks, field.dtype, options, repetitions);
      bool exact = one.exact && all.exact;
      bool same_frames = one.frame_bytes == all.frame_bytes;  // frames must not depend on threads
      if (!exact || !same_frames) ++failures;
      // Throughput counts the field's own bytes, not the padding of edge chunks,
      // as HDF5 applications see it; the ratio counts them the same way.
      size_t field_bytes = loaded.data.size();
      const bool lossy = fz::preset_is_lossy(options.preset);
      std::printf("| %s | %s | %s | %.2f | %.3f | %.1f | %.1f | %.1f | %.1f | %s |\n", field.file,
                  field.dtype.size == 8 ? "f64" : "f32", shape.c_str(), field_bytes / 1e6,
                  static_cast<double>(field_bytes) / one.frame_bytes, mb_per_s(field_bytes, one.compress_seconds),
                  mb_per_s(field_bytes, one.decompress_seconds), mb_per_s(field_bytes, all.compress_seconds),
                  mb_per_s(field_bytes, all.decompress_seconds),
                  !exact ? (lossy ? "BOUND VIOLATED" : "MISMATCH")
                         : !same_frames ? "frame size depends on threads"
                                        : (lossy ? "within bound" : "bit-exact"));
      total_raw += field_bytes;
      total_frames += one.frame_bytes;
    } catch (const fz::Error& e) {
      std::printf("| %s | | | | | | | | | engine error: %s |\n", field.file, e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  if (total_frames)
    std::printf("\nall fields: %zu -> %zu bytes, overall ratio %.3f\n\n", total_raw, total_frames,
                static_cast<double>(total_raw) / total_frames);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = std::getenv("FZ_DATA") ? std::getenv("FZ_DATA") : FZ_DEFAULT_DATA_DIR;
  int repetitions = 5;
  bool whole_only = false;
  bool chunks_only = false;  // with --field: one table of one field, for a profiler (perf record)
  std::string only_field;
  fz::Options options;  // preset lossless unless --preset says otherwise
  unsigned all_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    try {
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--data") {
        data_dir = value();
      } else if (arg == "--reps") {
        repetitions = std::stoi(value());
      } else if (arg == "--threads") {
        all_threads = static_cast<unsigned>(std::stoul(value()));
      } else if (arg == "--preset") {
        const std::string name = value();
        const fz::PresetInfo* info = fz::find_preset(name);  // any preset of the table (cuszhi-cr: issue 30)
        if (!info || !info->available) throw std::runtime_error("unknown preset " + name);
        options.preset = info->id;
      } else if (arg == "--mode") {
        std::string name = value();
        bool found = false;
        for (fz::ErrorMode m : {fz::ErrorMode::Abs, fz::ErrorMode::Noa, fz::ErrorMode::Rel})
          if (name == fz::mode_name(m)) options.mode = m, found = true;
        if (!found) throw std::runtime_error("unknown mode " + name);
      } else if (arg == "--bound") {
        options.bound = std::stod(value());
      } else if (arg == "--whole-only") {
        whole_only = true;
      } else if (arg == "--chunks-only") {
        chunks_only = true;
      } else if (arg == "--field") {
        only_field = value();
      } else if (arg == "--help" || arg == "-h") {
        std::printf("%s", kUsage);
        return 0;
      } else {
        return usage("unknown argument " + arg);
      }
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (repetitions < 1 || all_threads < 1) return usage("--reps and --threads must be >= 1");
  if (fz::preset_is_lossy(options.preset) && !(options.bound > 0))
    return usage(std::string("preset ") + fz::preset_name(options.preset) + " needs --bound > 0");

  int failures = 0;
  std::vector<Loaded> fields;
  for (const Field& field : real_fields()) {
    if (!only_field.empty() && only_field != field.file) continue;
    std::string path = data_dir + "/" + field.file;
    Loaded loaded{&field, {}};
    if (!read_file(path, loaded.data)) {
      std::fprintf(stderr, "fz_bench: cannot read %s (set --data or FZ_DATA)\n", path.c_str());
      ++failures;
      continue;
    }
    uint64_t expected = field.dtype.size;
    for (uint64_t d : field.dims) expected *= d;
    if (loaded.data.size() != expected) {
      std::fprintf(stderr, "fz_bench: %s has %zu bytes, expected %llu\n", path.c_str(), loaded.data.size(),
                   static_cast<unsigned long long>(expected));
      ++failures;
      continue;
    }
    fields.push_back(std::move(loaded));
  }

  std::string setting = fz::preset_name(options.preset);
  if (fz::preset_is_lossy(options.preset))
    setting += std::string(" ") + fz::mode_name(options.mode) + " " + std::to_string(options.bound);
  std::printf("fz_bench: engine %s, preset %s, best of %d, MB = 1e6 bytes of the field, "
              "threads 1 and %u (fz::Options::threads)\n\n",
              fz::version(), setting.c_str(), repetitions, all_threads);
  if (!only_field.empty() && fields.empty() && !failures) return usage("no field named " + only_field);
  if (!chunks_only) {
    std::printf("whole field as one chunk:\n\n");
    failures += run_table(fields, true, all_threads, repetitions, options);
  }
  if (!whole_only) {
    std::printf("h5py's default chunks (edge chunks padded), one engine call per chunk:\n\n");
    failures += run_table(fields, false, all_threads, repetitions, options);
  }
  if (failures) std::printf("%d FAILURE(S): missing data, engine error, round-trip mismatch or bound violated\n", failures);
  return failures ? 1 : 0;
}
