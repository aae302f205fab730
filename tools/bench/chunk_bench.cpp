// fz_chunk_bench: the engine's chunk path (a host buffer in, a frame out; the
// frame in, a host buffer out) at HDF5-sized chunks, through the public API
// only (fz/fz.hpp). A benchmark program, not a test: it prints markdown tables
// (recorded in docs/PERFORMANCE.md). The backend is the engine's choice under
// H5Z_FZ_DEVICE (auto|cpu|cuda|cuda:N), printed in the header line.
//
// Data: the real float32 field wmag91 (91^3) tiled by mirroring, so that the
// joins between tiles stay as smooth as the field itself: the dataset value at
// (z, y, x) is wmag91[m(z)][m(y)][m(x)] with m(i) = i mod 182 for i mod 182 <
// 91, else 181 - i mod 182. A chunk of S bytes is S/4 floats shaped
// (S/16384, 64, 64): planes of 64 x 64 (a corner of the field's own planes),
// stacked along z, where the field repeats mirrored every 91 planes (1.4 MiB).
// Chunks of whole MiB cannot have extents that are multiples of 91, and wider
// mirrored planes (256 x 256, say) repeat rows within a few KiB, which LZ77
// coders such as gzip exploit and real data would not offer (gzip -1: 2.39 on
// 256 x 256 mirrored planes, 1.13 on these, 1.11 on the field itself). The
// same layout serves h5py_bench.py. Chunks whose S/4 is not a multiple of 4096
// are near-cube power-of-two boxes ((16, 8, 8) for 4 KiB). The chunks of the
// in-flight table are consecutive slabs of one such dataset, so each holds
// different values.
//
// Tables:
//   1. one chunk at a time, one caller: ratio, compress and decompress GB/s
//      (1e9 bytes of the original chunk per second; best of --reps after one
//      warm-up of each direction), the largest absolute error and what the
//      bound allows;
//   2. --inflight K: K caller threads at once, each compressing (then
//      decompressing) its share of --total-mib of chunks; aggregate GB/s,
//      best of --reps. This is the figure for "several chunks in flight";
//   3. the fixed cost per chunk: median microseconds of a 4 KiB and a 64 KiB
//      chunk, the same chunk every call and a new chunk (own values and range)
//      every call.
// Every round trip is checked, bit for bit for lossless, every element within
// the bound for the lossy presets (NOA against the chunk's whole finite value
// range, which the engine's range can only narrow): exit 1 otherwise.
//
// --api chooses how chunks reach the engine: "chunk" (compress() and
// decompress_into() per chunk) or "batch" (compress_batch() and
// decompress_batch() over each caller's share). Another API is one more Api
// value and one more case in compress_share() and decompress_share().
//
//   fz_chunk_bench [--data DIR] [--sizes 1,4,16,64] [--presets lossless,pfpl,fzgpu,cusz]
//                  [--reps N] [--inflight 1,4] [--total-mib 1024] [--api chunk|batch]
//                  [--small-reps N] [--no-small]
//   data directory: --data, else $FZ_DATA, else ../shared/data beside the repo
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chunk_bench_data.hpp"
#include "environment.hpp"
#include "fz/fz.hpp"

namespace {

using namespace chunk_bench;

// ---- how chunks reach the engine --------------------------------------------

enum class Api { Chunk, Batch };

const char* api_name(Api api) { return api == Api::Chunk ? "chunk" : "batch"; }

// One caller's share of the chunks: indices first, first + step, ... < count.
std::vector<size_t> share_of(size_t count, size_t first, size_t step) {
  std::vector<size_t> indices;
  for (size_t i = first; i < count; i += step) indices.push_back(i);
  return indices;
}

void compress_share(Api api, const Dataset& d, const std::vector<size_t>& share, const fz::Options& options,
                    std::vector<fz::Bytes>& frames) {
  const fz::DataType dtype = fz::DataType::of<float>();
  switch (api) {
    case Api::Chunk:
      for (size_t i : share) frames[i] = fz::compress(d.chunk_data(i), d.chunk_bytes, dtype, d.chunk, options);
      return;
    case Api::Batch: {
      std::vector<fz::ChunkView> views;
      for (size_t i : share) views.push_back({d.chunk_data(i), d.chunk_bytes, d.chunk});
      std::vector<fz::Bytes> out = fz::compress_batch(views, dtype, options);
      for (size_t k = 0; k < share.size(); ++k) frames[share[k]] = std::move(out[k]);
      return;
    }
  }
}

void decompress_share(Api api, const std::vector<fz::Bytes>& frames, const std::vector<size_t>& share,
                      std::vector<std::vector<float>>& decoded, std::vector<size_t>& lengths) {
  switch (api) {
    case Api::Chunk:
      for (size_t i : share)
        lengths[i] = fz::decompress_into(frames[i].data(), frames[i].size(), decoded[i].data(), decoded[i].size() * 4,
                                          fz::filter::policy_from_environment());
      return;
    case Api::Batch: {
      std::vector<fz::FrameView> views;
      for (size_t i : share) views.push_back({frames[i].data(), frames[i].size(), decoded[i].data(), decoded[i].size() * 4});
      const std::vector<size_t> out = fz::decompress_batch(views, fz::filter::policy_from_environment());
      for (size_t k = 0; k < share.size(); ++k) lengths[share[k]] = out[k];
      return;
    }
  }
}

// ---- measurements ----------------------------------------------------------

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Result {
  double compress_s = std::numeric_limits<double>::infinity();
  double decompress_s = std::numeric_limits<double>::infinity();
  uint64_t original = 0, stored = 0;
  Check check;
  std::string error;
};

// Several chunks: all must pass; the figures shown are those of the chunk
// whose error comes closest to what its own bound allows (NOA bounds differ
// from chunk to chunk with their value ranges).
void merge_check(Check& into, const Check& c) {
  auto share = [](const Check& k) { return k.allowed > 0 ? k.max_error / k.allowed : k.max_error; };
  if (share(c) > share(into)) into.max_error = c.max_error, into.allowed = c.allowed;
  into.ok = into.ok && c.ok;
}

// `callers` threads at once, caller t taking chunks t, t + callers, ...; the
// time of a direction is from the start of all callers to the end of the last.
// warm_up: one untimed pass of each direction first.
Result measure(Api api, const Dataset& d, const fz::Options& options, unsigned callers, int reps, bool warm_up) {
  Result r;
  r.original = d.chunk_bytes * d.count;
  std::vector<fz::Bytes> frames(d.count);
  std::vector<std::vector<float>> decoded(d.count, std::vector<float>(d.chunk_bytes / 4));
  std::vector<size_t> lengths(d.count, 0);
  std::vector<std::vector<size_t>> shares;
  for (unsigned t = 0; t < callers; ++t) shares.push_back(share_of(d.count, t, callers));
  std::vector<std::string> errors(callers);

  auto run_callers = [&](auto body) {
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < callers; ++t) threads.emplace_back(body, t);
    body(0u);
    for (auto& th : threads) th.join();
    return seconds_since(start);
  };
  auto compress_body = [&](unsigned t) {
    try {
      compress_share(api, d, shares[t], options, frames);
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  auto decompress_body = [&](unsigned t) {
    try {
      decompress_share(api, frames, shares[t], decoded, lengths);
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  auto failed = [&]() {
    for (const auto& e : errors)
      if (!e.empty()) {
        r.error = e;
        return true;
      }
    return false;
  };

  if (warm_up) {
    run_callers(compress_body);
    if (failed()) return r;
    run_callers(decompress_body);
    if (failed()) return r;
  }
  for (int rep = 0; rep < reps; ++rep) {
    r.compress_s = std::min(r.compress_s, run_callers(compress_body));
    if (failed()) return r;
    if (rep == reps - 1)  // the checked round trip: a decoder that writes nothing must fail
      for (auto& out : decoded) std::fill(out.begin(), out.end(), -12345.0f);
    r.decompress_s = std::min(r.decompress_s, run_callers(decompress_body));
    if (failed()) return r;
  }
  r.stored = 0;
  for (const auto& f : frames) r.stored += f.size();
  // The last round trip, checked on the callers' threads.
  std::vector<Check> checks(callers);
  run_callers([&](unsigned t) {
    for (size_t i : shares[t])
      merge_check(checks[t], check_chunk(d.chunk_data(i), decoded[i].data(), decoded[i].size(), lengths[i], options));
  });
  r.check = checks[0];
  for (unsigned t = 1; t < callers; ++t) merge_check(r.check, checks[t]);
  return r;
}

// Median microseconds per call of each direction on small chunks: call k
// compresses chunk k % d.count and decodes its frame (one chunk: the same
// chunk every call; many: a new chunk, with its own values and range, each).
struct SmallResult {
  double compress_us = 0, decompress_us = 0;
  uint64_t stored = 0;
  Check check;
  std::string error;
};

SmallResult measure_small(Api api, const Dataset& d, const fz::Options& options, int reps) {
  SmallResult s;
  std::vector<fz::Bytes> frames(d.count);
  std::vector<std::vector<float>> decoded(d.count, std::vector<float>(d.chunk_bytes / 4));
  std::vector<size_t> lengths(d.count);
  std::vector<double> c_times, d_times;
  size_t last = 0;
  try {
    for (int rep = -reps / 10 - 1, call = 0; rep < reps; ++rep, ++call) {  // the first tenth warms up
      last = static_cast<size_t>(call) % d.count;
      const std::vector<size_t> one = {last};
      Clock::time_point start = Clock::now();
      compress_share(api, d, one, options, frames);
      const double c = seconds_since(start);
      start = Clock::now();
      decompress_share(api, frames, one, decoded, lengths);
      const double t = seconds_since(start);
      if (rep >= 0) c_times.push_back(c), d_times.push_back(t);
    }
  } catch (const std::exception& e) {
    s.error = e.what();
    return s;
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e6;
  };
  s.compress_us = median(c_times);
  s.decompress_us = median(d_times);
  s.stored = frames[last].size();
  s.check = check_chunk(d.chunk_data(last), decoded[last].data(), decoded[last].size(), lengths[last], options);
  return s;
}

// ---- output -----------------------------------------------------------------

std::string size_text(uint64_t bytes) {
  char text[32];
  if (bytes >= kMiB && bytes % kMiB == 0)
    std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(bytes / kMiB));
  else
    std::snprintf(text, sizeof text, "%llu KiB", static_cast<unsigned long long>(bytes / 1024));
  return text;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text;
}

std::string check_text(const Check& c, bool lossy) {
  char text[96];
  if (!lossy)
    std::snprintf(text, sizeof text, "%s", c.ok ? "0 (bit-exact)" : "NOT EXACT");
  else
    std::snprintf(text, sizeof text, "%.4g <= %.4g%s", c.max_error, c.allowed, c.ok ? "" : " BOUND BROKEN");
  return text;
}

double gb_per_s(uint64_t bytes, double seconds) { return bytes / 1e9 / seconds; }

std::vector<uint64_t> parse_list(const std::string& text) {
  std::vector<uint64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    const unsigned long long v = std::stoull(item, &used);
    if (used != item.size()) throw std::runtime_error("not a number: " + item);
    values.push_back(v);
  }
  if (values.empty()) throw std::runtime_error("empty list");
  return values;
}


const char* const kUsage =
    "usage: fz_chunk_bench [--data DIR] [--sizes 1,4,16,64] [--presets lossless,pfpl,fzgpu,cusz]\n"
    "                      [--reps N] [--inflight 1,4] [--total-mib 1024] [--api chunk|batch]\n"
    "                      [--small-reps N] [--no-small]\n"
    "  --sizes: chunk sizes in MiB; --inflight: caller threads (0 = no in-flight table);\n"
    "  --total-mib: bytes of chunks per in-flight measurement; H5Z_FZ_DEVICE picks the backend\n";

int usage(const std::string& message) {
  std::fprintf(stderr, "fz_chunk_bench: %s\n%s", message.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = std::getenv("FZ_DATA") ? std::getenv("FZ_DATA") : FZ_DEFAULT_DATA_DIR;
  std::vector<uint64_t> sizes_mib = {1, 4, 16, 64}, inflight = {1, 4};
  uint64_t total_mib = 1024;
  int reps = 5, small_reps = 200;
  bool small = true;
  Api api = Api::Chunk;
  std::vector<Case> cases = known_cases();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    try {
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--data") {
        data_dir = value();
      } else if (arg == "--sizes") {
        sizes_mib = parse_list(value());
      } else if (arg == "--inflight") {
        inflight = parse_list(value());
      } else if (arg == "--total-mib") {
        total_mib = std::stoull(value());
      } else if (arg == "--reps") {
        reps = std::stoi(value());
      } else if (arg == "--small-reps") {
        small_reps = std::stoi(value());
      } else if (arg == "--no-small") {
        small = false;
      } else if (arg == "--api") {
        const std::string name = value();
        if (name == "chunk")
          api = Api::Chunk;
        else if (name == "batch")
          api = Api::Batch;
        else
          throw std::runtime_error("unknown api " + name);
      } else if (arg == "--presets") {
        std::vector<Case> chosen;
        std::stringstream in(value());
        std::string name;
        while (std::getline(in, name, ',')) {
          bool found = false;
          for (const Case& c : known_cases())
            if (c.label == name) chosen.push_back(c), found = true;
          if (!found) throw std::runtime_error("unknown preset " + name);
        }
        cases = chosen;
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
  if (reps < 1 || small_reps < 1 || cases.empty() || total_mib < 1) return usage("--reps, --small-reps, --total-mib must be >= 1");
  for (uint64_t s : sizes_mib)
    if (s < 1) return usage("--sizes must be >= 1 MiB");

  std::vector<float> cube;
  const std::string path = data_dir + "/wmag91.float";
  if (!read_field(path, cube)) {
    std::fprintf(stderr, "fz_chunk_bench: cannot read %s as 91^3 float32 (set --data or FZ_DATA)\n", path.c_str());
    return 1;
  }
  const TiledField field(std::move(cube));
  const char* device = std::getenv("H5Z_FZ_DEVICE");
  std::printf("fz_chunk_bench: engine %s, H5Z_FZ_DEVICE=%s, api %s, %u host threads, "
              "data wmag91 mirrored tiles (a chunk of S bytes: (S/16384, 64, 64) float32)\n",
              fz::version(), device && *device ? device : "(unset: auto)", api_name(api),
              std::thread::hardware_concurrency());
  std::printf("GB/s = 1e9 bytes of the original chunks per second; best of %d after one warm-up of each direction\n\n",
              reps);
  int failures = 0;

  // 1. One chunk at a time.
  std::printf("one chunk at a time, one caller:\n\n");
  std::printf("| chunk | shape | preset | ratio | compress GB/s | decompress GB/s | max abs error <= allowed |\n");
  std::printf("|---|---|---|---:|---:|---:|---|\n");
  for (uint64_t mib : sizes_mib) {
    const Dataset d = make_dataset(field, mib * kMiB, 1);
    for (const Case& c : cases) {
      const Result r = measure(api, d, c.options, 1, reps, true);
      const bool lossy = fz::preset_is_lossy(c.options.preset);
      if (!r.error.empty()) {
        std::printf("| %s | %s | %s | ENGINE ERROR: %s | | | |\n", size_text(d.chunk_bytes).c_str(),
                    dims_text(d.chunk).c_str(), case_text(c).c_str(), r.error.c_str());
        ++failures;
        continue;
      }
      if (!r.check.ok) ++failures;
      std::printf("| %s | %s | %s | %.3f | %.2f | %.2f | %s |\n", size_text(d.chunk_bytes).c_str(),
                  dims_text(d.chunk).c_str(), case_text(c).c_str(), double(r.original) / r.stored,
                  gb_per_s(r.original, r.compress_s), gb_per_s(r.original, r.decompress_s),
                  check_text(r.check, lossy).c_str());
      std::fflush(stdout);
    }
  }

  // 2. Several chunks in flight.
  for (uint64_t callers : inflight) {
    if (callers == 0) continue;
    std::printf("\n%llu caller thread(s) at once, %llu MiB of chunks per measurement (aggregate GB/s, best of %d):\n\n",
                static_cast<unsigned long long>(callers), static_cast<unsigned long long>(total_mib), reps);
    std::printf("| chunk | chunks | preset | ratio | compress GB/s | decompress GB/s | max abs error <= allowed |\n");
    std::printf("|---|---:|---|---:|---:|---:|---|\n");
    for (uint64_t mib : sizes_mib) {
      const size_t count = std::max<uint64_t>(callers, total_mib / mib);
      const Dataset d = make_dataset(field, mib * kMiB, count);
      for (const Case& c : cases) {
        // The one-chunk table already warmed up each size and preset.
        const Result r = measure(api, d, c.options, static_cast<unsigned>(callers), reps, false);
        const bool lossy = fz::preset_is_lossy(c.options.preset);
        if (!r.error.empty()) {
          std::printf("| %s | %zu | %s | ENGINE ERROR: %s | | | |\n", size_text(d.chunk_bytes).c_str(), count,
                      case_text(c).c_str(), r.error.c_str());
          ++failures;
          continue;
        }
        if (!r.check.ok) ++failures;
        std::printf("| %s | %zu | %s | %.3f | %.2f | %.2f | %s |\n", size_text(d.chunk_bytes).c_str(), count,
                    case_text(c).c_str(), double(r.original) / r.stored, gb_per_s(r.original, r.compress_s),
                    gb_per_s(r.original, r.decompress_s), check_text(r.check, lossy).c_str());
        std::fflush(stdout);
      }
    }
  }

  // 3. The fixed cost per chunk: the same chunk again and again (what a
  // repeated pipeline costs: on the GPU, a CUDA graph replayed), and a new
  // chunk each call (consecutive slabs of the dataset, each with its own value
  // range, so NOA pipelines differ from call to call).
  if (small) {
    std::printf("\nfixed cost per chunk: median of %d calls (after %d warm-up calls), one caller; the same chunk each "
                "call, then a new one each call:\n\n",
                small_reps, small_reps / 10 + 1);
    std::printf("| chunk | shape | preset | ratio | compress us | decompress us | compress us, new chunks | "
                "decompress us, new chunks | max abs error <= allowed |\n");
    std::printf("|---|---|---|---:|---:|---:|---:|---:|---|\n");
    for (uint64_t bytes : {uint64_t{4096}, uint64_t{65536}}) {
      const Dataset same = make_dataset(field, bytes, 1);
      const Dataset fresh = make_dataset(field, bytes, static_cast<size_t>(small_reps + small_reps / 10 + 1));
      for (const Case& c : cases) {
        const SmallResult s = measure_small(api, same, c.options, small_reps);
        const SmallResult n = s.error.empty() ? measure_small(api, fresh, c.options, small_reps) : s;
        if (!s.error.empty() || !n.error.empty()) {
          std::printf("| %s | %s | %s | ENGINE ERROR: %s | | | | | |\n", size_text(bytes).c_str(),
                      dims_text(same.chunk).c_str(), case_text(c).c_str(), (s.error.empty() ? n : s).error.c_str());
          ++failures;
          continue;
        }
        Check both = s.check;
        merge_check(both, n.check);
        if (!both.ok) ++failures;
        std::printf("| %s | %s | %s | %.3f | %.1f | %.1f | %.1f | %.1f | %s |\n", size_text(bytes).c_str(),
                    dims_text(same.chunk).c_str(), case_text(c).c_str(), double(bytes) / s.stored, s.compress_us,
                    s.decompress_us, n.compress_us, n.decompress_us,
                    check_text(both, fz::preset_is_lossy(c.options.preset)).c_str());
        std::fflush(stdout);
      }
    }
  }
  if (failures) std::printf("\n%d FAILURE(S): engine error, lossless not exact, or error bound broken\n", failures);
  return failures ? 1 : 0;
}
