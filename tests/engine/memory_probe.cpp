// How much memory one chunk costs the engine beyond the chunk and its frame,
// both ways, measured as the filter uses it: compress_into over the chunk's
// own buffer (HDF5's), decompress_into a buffer of one chunk.
//
//   fz_memory_probe                       a table for every preset (each case in
//                                         a process of its own), on a tiled real field
//   fz_memory_probe PRESET DIRECTION MiB LIMIT
//                                         one case; exit 1 when the extra peak
//                                         exceeds LIMIT x the chunk plus 4 MiB per
//                                         engine thread (ctest runs these)
//
// Extra = the process's peak resident memory during the call (VmHWM, reset
// through /proc/self/clear_refs just before) minus its resident memory just
// before (chunk, frame and output buffers already written, so counted there).
// Each process first round-trips a 1 MiB chunk, so that what a backend sets
// up once (a CUDA context) is not counted. The backend is the engine's choice
// (H5Z_FZ_DEVICE; ctest pins the CPU). Sanitizer builds report 77 (skipped):
// their allocators keep freed memory.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

#if defined(__SANITIZE_ADDRESS__)
#define FZ_PROBE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_PROBE_SANITIZED 1
#endif
#endif

namespace {

constexpr int kSkipped = 77;

long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::strtol(line.c_str() + n, nullptr, 10);
  return -1;
}

bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

struct Case {
  const char* preset_name;
  fz::Preset preset;
  fz::ErrorMode mode;
  double bound;
  // The chunk's values: the tiled field; random values in [1, 2) (nothing
  // compresses, every Lorenzo delta an outlier); or NaN (every element a
  // special value, stored bit-exactly).
  // kLand: the field with a fill value (HDF5's, -1e10) in a third of each
  // plane, as land in an ocean field: the preset's FILLMASK stage runs.
  enum Data { kField, kNoise, kNaN, kLand } data;
};
constexpr float kLandFill = -1e10f;
const Case kCases[] = {
    {"lossless", fz::Preset::Lossless, fz::ErrorMode::Abs, 0, Case::kField},
    {"pfpl", fz::Preset::Pfpl, fz::ErrorMode::Noa, 1e-3, Case::kField},
    {"fzgpu", fz::Preset::Fzgpu, fz::ErrorMode::Noa, 1e-3, Case::kField},
    {"cusz", fz::Preset::Cusz, fz::ErrorMode::Noa, 1e-4, Case::kField},
    {"lossless-noise", fz::Preset::Lossless, fz::ErrorMode::Abs, 0, Case::kNoise},
    {"pfpl-noise", fz::Preset::Pfpl, fz::ErrorMode::Noa, 1e-3, Case::kNoise},
    {"fzgpu-noise", fz::Preset::Fzgpu, fz::ErrorMode::Noa, 1e-3, Case::kNoise},
    {"cusz-noise", fz::Preset::Cusz, fz::ErrorMode::Noa, 1e-4, Case::kNoise},
    {"cusz-nan", fz::Preset::Cusz, fz::ErrorMode::Abs, 1e-4, Case::kNaN},
    // cusz at 1e-3 on noise: fewer outliers than at 1e-4, so the encoder
    // holds more codes and outlier records before it gives up (issue 28).
    {"cusz-noise-1e-3", fz::Preset::Cusz, fz::ErrorMode::Noa, 1e-3, Case::kNoise},
    // The spline presets (issue 28 item 11): codes of 2 bytes per element.
    {"cuszhi-tp", fz::Preset::CuszHiTp, fz::ErrorMode::Noa, 1e-3, Case::kField},
    {"cuszhi-cr", fz::Preset::CuszHiCr, fz::ErrorMode::Noa, 1e-3, Case::kField},
    {"cuszhi-tp-noise", fz::Preset::CuszHiTp, fz::ErrorMode::Noa, 1e-3, Case::kNoise},
    {"cuszhi-cr-noise", fz::Preset::CuszHiCr, fz::ErrorMode::Noa, 1e-3, Case::kNoise},
    {"cuszhi-tp-land", fz::Preset::CuszHiTp, fz::ErrorMode::Noa, 1e-3, Case::kLand},
    {"cuszhi-cr-land", fz::Preset::CuszHiCr, fz::ErrorMode::Noa, 1e-3, Case::kLand},
    {"cusz-land", fz::Preset::Cusz, fz::ErrorMode::Noa, 1e-3, Case::kLand},
};

std::string data_dir() {
  const char* env = std::getenv("FZ_DATA");
  return env && *env ? env : FZ_DEFAULT_DATA_DIR;
}

// A float32 chunk of about `mib` MiB: wmag91 (91^3, a real turbulence field)
// repeated along the slowest axis, as a 3-D chunk; or noise or NaN of that shape.
std::vector<float> tiled_field(size_t mib, std::vector<uint64_t>& dims, Case::Data data) {
  const std::string path = data_dir() + "/wmag91.float";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fz_memory_probe: cannot read %s (set FZ_DATA)\n", path.c_str());
    std::exit(2);
  }
  std::vector<float> field(91 * 91 * 91);
  in.read(reinterpret_cast<char*>(field.data()), static_cast<std::streamsize>(field.size() * sizeof(float)));
  const size_t plane = 91 * 91;
  const size_t planes = (mib << 20) / (plane * sizeof(float));
  std::vector<float> chunk(planes * plane);
  for (size_t z = 0; z < planes; ++z)
    std::memcpy(chunk.data() + z * plane, field.data() + (z % 91) * plane, plane * sizeof(float));
  if (data == Case::kNaN) std::fill(chunk.begin(), chunk.end(), std::numeric_limits<float>::quiet_NaN());
  if (data == Case::kLand)
    for (size_t i = 0; i < chunk.size(); ++i)
      if (i % plane < plane / 3) chunk[i] = kLandFill;
  if (data == Case::kNoise) {
    uint64_t state = 0x9E3779B97F4A7C15ull;  // xorshift64*: values in [1, 2) with random mantissas
    for (float& v : chunk) {
      state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
      const uint32_t bits = 0x3F800000u | static_cast<uint32_t>((state * 0x2545F4914F6CDD1Dull) >> 41);
      std::memcpy(&v, &bits, sizeof v);
    }
  }
  dims = {planes, 91, 91};
  return chunk;
}

// One direction of one case: the extra peak during the call and what stayed
// resident after it (buffers the engine keeps for the next chunk).
struct Measured {
  double extra = 0, held = 0;  // bytes
  size_t chunk_bytes = 0, frame_bytes = 0;
};

// The engine's threads (H5Z_FZ_THREADS, else the hardware's), as it counts them.
unsigned engine_threads() {
  const char* env = std::getenv("H5Z_FZ_THREADS");
  const long threads = env ? std::strtol(env, nullptr, 10) : 0;
  return threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
}

// The probe's policy: H5Z_FZ_DEVICE (ctest pins the CPU) and H5Z_FZ_THREADS,
// mapped as the filter maps them.
fz::Options policy() {
  fz::Options options;
  const char* device = std::getenv("H5Z_FZ_DEVICE");
  if (device && *device) options.device = device;
  options.threads = engine_threads();
  return options;
}

fz::Options options_of(const Case& c) {
  fz::Options options = policy();
  options.preset = c.preset;
  options.mode = c.mode;
  options.bound = c.bound;
  if (c.data == Case::kLand) {
    options.fill_value.resize(sizeof kLandFill);
    std::memcpy(options.fill_value.data(), &kLandFill, sizeof kLandFill);
  }
  return options;
}

// Compresses over the chunk's own buffer, as the filter does with HDF5's;
// measured when `m` is given. Returns the frame.
// The buffer has room for a raw frame's header beyond the chunk, as the
// filter gives HDF5's buffer of a large chunk (filter/plugin.cpp,
// make_room_for_raw_frame), so an incompressible chunk's raw frame is built
// in place there too.
std::vector<uint8_t> compress_chunk(const Case& c, std::vector<float>& chunk, const std::vector<uint64_t>& dims,
                                    Measured* m) {
  const size_t bytes = chunk.size() * sizeof(float);
  const size_t capacity = fz::max_frame_bytes(bytes, dims.size());
  chunk.resize((capacity + sizeof(float) - 1) / sizeof(float));  // before the baseline: HDF5's own buffer
  const long before = status_kib("VmRSS:");
  if (m && !reset_peak()) std::exit(kSkipped);
  fz::Bytes spill;
  const size_t written = fz::compress_into(chunk.data(), bytes, fz::DataType::of<float>(), dims, options_of(c),
                                           chunk.data(), capacity, &spill);
  if (m) {
    m->extra = double(status_kib("VmHWM:") - before) * 1024;
    m->held = double(status_kib("VmRSS:") - before) * 1024;
  }
  if (!written) return spill;
  const auto* frame = reinterpret_cast<const uint8_t*>(chunk.data());
  return std::vector<uint8_t>(frame, frame + written);
}

// One round trip of a 1 MiB chunk, so that what the backend sets up once per
// process (a CUDA context, pinned staging of that size) is not counted.
void warm_up(const Case& c) {
  std::vector<float> small((size_t{1} << 20) / sizeof(float), 1.5f);
  for (size_t i = 0; i < small.size(); ++i) small[i] += float(i % 97) * 0.01f;
  const size_t bytes = small.size() * sizeof(float);
  const fz::Bytes frame = fz::compress(small.data(), bytes, fz::DataType::of<float>(), {small.size()}, options_of(c));
  fz::decompress_into(frame.data(), frame.size(), small.data(), bytes, policy());
}

Measured measure(const Case& c, const std::string& direction, size_t mib) {
  std::vector<uint64_t> dims;
  std::vector<float> chunk = tiled_field(mib, dims, c.data);
  const size_t bytes = chunk.size() * sizeof(float);
  Measured m;
  m.chunk_bytes = bytes;
  if (direction == "compress") {
    warm_up(c);
    m.frame_bytes = compress_chunk(c, chunk, dims, &m).size();
    return m;
  }
  // The frame comes from a child process, so that this one decodes with
  // nothing left over from compressing (the engine keeps buffers per thread).
  // It is forked before this process uses the engine: its worker threads
  // would not exist in the child.
  const std::vector<float> original = chunk;
  int fds[2];
  if (pipe(fds) != 0) std::exit(2);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::vector<uint8_t> frame = compress_chunk(c, chunk, dims, nullptr);
    const uint64_t size = frame.size();
    bool ok = write(fds[1], &size, sizeof size) == static_cast<ssize_t>(sizeof size);
    for (size_t at = 0; ok && at < frame.size();) {
      const ssize_t n = write(fds[1], frame.data() + at, frame.size() - at);
      ok = n > 0;
      at += ok ? static_cast<size_t>(n) : 0;
    }
    _exit(ok ? 0 : 2);
  }
  close(fds[1]);
  std::vector<float>().swap(chunk);
  uint64_t size = 0;
  bool ok = read(fds[0], &size, sizeof size) == static_cast<ssize_t>(sizeof size) && size <= 2 * bytes + 4096;
  std::vector<uint8_t> frame(ok ? size : 0);
  for (size_t at = 0; ok && at < frame.size();) {
    const ssize_t n = read(fds[0], frame.data() + at, frame.size() - at);
    ok = n > 0;
    at += ok ? static_cast<size_t>(n) : 0;
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "fz_memory_probe: compressing in the child failed\n");
    std::exit(2);
  }
  m.frame_bytes = frame.size();

  // Decompress into a buffer of one chunk (the filter's output buffer).
  warm_up(c);
  std::vector<float> out(original.size(), 1.0f);
  const long before = status_kib("VmRSS:");
  if (!reset_peak()) std::exit(kSkipped);
  const size_t decoded = fz::decompress_into(frame.data(), frame.size(), out.data(), bytes, policy());
  m.extra = double(status_kib("VmHWM:") - before) * 1024;
  m.held = double(status_kib("VmRSS:") - before) * 1024;
  if (decoded != bytes) {
    std::fprintf(stderr, "fz_memory_probe: decoded %zu bytes of %zu\n", decoded, bytes);
    std::exit(2);
  }
  if (c.preset == fz::Preset::Lossless && std::memcmp(out.data(), original.data(), bytes) != 0) {
    std::fprintf(stderr, "fz_memory_probe: lossless round trip differs\n");
    std::exit(2);
  }
  return m;
}

const Case* find_case(const std::string& name) {
  for (const Case& c : kCases)
    if (name == c.preset_name) return &c;
  return nullptr;
}


// Working memory that grows with the threads, not the chunk: per thread, a
// Lorenzo group's share (prequantized values, codes and special values of
// four 2^15-element blocks: 1.8 MiB for float32), RZE's slots and scratch
// records. The limit allows this much per thread beyond limit x the chunk.
constexpr double kWorkspacePerThread = 4.0 * 1048576;

int run_one(const Case& c, const std::string& direction, size_t mib, double limit) {
  const Measured m = measure(c, direction, mib);
  const double ratio = m.extra / double(m.chunk_bytes);
  const unsigned threads = engine_threads();
  const double allowed = limit * double(m.chunk_bytes) + threads * kWorkspacePerThread;
  std::printf("%s %s: chunk %.0f MiB, frame %.1f MiB, extra peak %.1f MiB = %.2fx the chunk (limit %.2fx + %u "
              "threads x 4 MiB = %.1f MiB), %.1f MiB still held after\n",
              c.preset_name, direction.c_str(), m.chunk_bytes / 1048576.0, m.frame_bytes / 1048576.0,
              m.extra / 1048576.0, ratio, limit, threads, allowed / 1048576.0, m.held / 1048576.0);
  return m.extra <= allowed ? 0 : 1;
}

// Runs one case in a child process (no case inherits another's buffers or
// peak) and returns what it measured.
bool measure_in_child(const Case& c, const std::string& direction, size_t mib, Measured& m) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const Measured child = measure(c, direction, mib);
    _exit(write(fds[1], &child, sizeof child) == static_cast<ssize_t>(sizeof child) ? 0 : 2);
  }
  close(fds[1]);
  const bool got = read(fds[0], &m, sizeof m) == static_cast<ssize_t>(sizeof m);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int table(size_t mib) {
  const char* device = std::getenv("H5Z_FZ_DEVICE");
  std::printf("float32 chunk of %zu MiB (wmag91 tiled, random values in [1, 2), or NaN); H5Z_FZ_DEVICE=%s\n\n", mib,
              device && *device ? device : "auto");
  std::printf("| preset | chunk MiB | frame MiB | compress: extra peak | held after | decompress: extra peak | "
              "held after |\n|---|---|---|---|---|---|---|\n");
  const auto mb = [](double b) { return b / 1048576.0; };
  for (const Case& c : kCases) {
    Measured w, r;
    if (!measure_in_child(c, "compress", mib, w) || !measure_in_child(c, "decompress", mib, r)) {
      std::printf("| %s | failed | | | | | |\n", c.preset_name);
      continue;
    }
    std::printf("| %s | %.0f | %.1f | %.0f MiB (%.2fx) | %.0f MiB | %.0f MiB (%.2fx) | %.0f MiB |\n", c.preset_name,
                mb(w.chunk_bytes), mb(w.frame_bytes), mb(w.extra), w.extra / w.chunk_bytes, mb(w.held), mb(r.extra),
                r.extra / r.chunk_bytes, mb(r.held));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef FZ_PROBE_SANITIZED
  std::printf("fz_memory_probe: skipped under sanitizers (their allocators hold freed memory)\n");
  return kSkipped;
#endif
  if (argc <= 2) {
    const size_t mib = argc == 2 ? std::strtoul(argv[1], nullptr, 10) : 256;
    return table(mib ? mib : 256);
  }
  if (argc != 5) {
    std::fprintf(stderr, "usage: fz_memory_probe [MiB] | PRESET compress|decompress MiB LIMIT\n");
    return 2;
  }
  const Case* c = find_case(argv[1]);
  const std::string direction = argv[2];
  if (!c || (direction != "compress" && direction != "decompress")) {
    std::fprintf(stderr, "fz_memory_probe: unknown preset or direction\n");
    return 2;
  }
  return run_one(*c, direction, std::strtoul(argv[3], nullptr, 10), std::strtod(argv[4], nullptr));
}
