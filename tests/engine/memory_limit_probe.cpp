// A read near the memory limit gets the engine's clear error, never the OOM
// killer (issue 28 item 11). The engine checks the memory a decode needs
// against its cgroup's limit less its usage (memory_budget.cpp); this puts
// each decode in a cgroup of its own whose limit leaves `headroom` x the
// chunk beyond what the process already holds (the frame and the output
// buffer, as HDF5 holds them), and decodes:
//
//   fz_memory_limit_probe PRESET MiB      the cases; exit 1 if any decode was
//                                         killed, failed otherwise than with
//                                         the clear error, decoded other bytes
//                                         than without a limit, or was refused
//                                         with the chunk's size free
//
// Each decode runs in a fresh process (this program re-executed: "child"),
// which moves itself into a new memory cgroup (v1 memory.limit_in_bytes, or
// v2 memory.max) under its own, then allocates and sets the limit. Needs root
// and a writable memory cgroup: otherwise 77 (skipped).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/testing/fnv1a.hpp"
#include "fz/fz.hpp"

namespace {

constexpr int kSkipped = 77;
constexpr int kClearError = 3;
constexpr int kOtherError = 4;
constexpr int kWrongBytes = 5;
constexpr int kNoCgroup = 6;

// The memory cgroup to put children under (this process's own), the file
// that takes a pid and the limit's and usage's names; empty when none.
struct Hierarchy {
  std::string dir, procs, limit, usage;
};

Hierarchy own_memory_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, v1, v2;
  bool has_v2 = false;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (("," + controllers + ",").find(",memory,") != std::string::npos) v1 = line.substr(b + 1);
    if (controllers.empty()) has_v2 = true, v2 = line.substr(b + 1);
  }
  struct stat st;
  if (!v1.empty() && stat(("/sys/fs/cgroup/memory" + v1 + "/memory.limit_in_bytes").c_str(), &st) == 0)
    return {"/sys/fs/cgroup/memory" + v1, "cgroup.procs", "memory.limit_in_bytes", "memory.usage_in_bytes"};
  if (has_v2 && stat(("/sys/fs/cgroup" + v2 + "/cgroup.controllers").c_str(), &st) == 0)
    return {"/sys/fs/cgroup" + v2, "cgroup.procs", "memory.max", "memory.current"};
  return {};
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

long long read_number(const std::string& path) {
  std::ifstream in(path);
  long long v = -1;
  in >> v;
  return v;
}

// "-land": a third of each plane is HDF5's fill value (-1e10), as land in
// an ocean field, so FILLMASK runs before the predictor.
constexpr float kLandFill = -1e10f;
bool is_land(const std::string& name) { return name.size() > 5 && name.compare(name.size() - 5, 5, "-land") == 0; }

fz::Options preset_options(const std::string& with_suffix) {
  fz::Options o;
  o.mode = fz::ErrorMode::Noa;
  o.bound = 1e-3;
  const std::string name = is_land(with_suffix) ? with_suffix.substr(0, with_suffix.size() - 5) : with_suffix;
  if (name == "cuszhi-tp") o.preset = fz::Preset::CuszHiTp;
  else if (name == "cuszhi-cr") o.preset = fz::Preset::CuszHiCr;
  else if (name == "cusz") o.preset = fz::Preset::Cusz;
  else std::exit(2);
  if (is_land(with_suffix)) {
    o.fill_value.resize(sizeof kLandFill);
    std::memcpy(o.fill_value.data(), &kLandFill, sizeof kLandFill);
  }
  return o;
}

// A smooth float32 3-D field of about `mib` MiB (the spline's kind of data).
std::vector<float> field(size_t mib, std::vector<uint64_t>& dims, bool land) {
  const size_t plane = 256 * 256, planes = (mib << 20) / (plane * sizeof(float));
  std::vector<float> v(planes * plane);
  for (size_t z = 0; z < planes; ++z)
    for (size_t y = 0; y < 256; ++y)
      for (size_t x = 0; x < 256; ++x)
        v[(z * 256 + y) * 256 + x] =
            land && y < 85 ? kLandFill : static_cast<float>(std::sin(z * 0.05) * std::cos(y * 0.03) + x * 1e-3);
  dims = {planes, 256, 256};
  return v;
}

// The child compares the decoded bytes with the parent's decode by FNV-1a,
// without holding a second chunk inside its limit.
using fz::testing::fnv1a64;

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The child: joins cgroup `dir`, holds the frame and a touched output buffer,
// limits the cgroup to its usage + headroom x the chunk, decodes.
int child(const std::string& dir, const std::string& frame_path, uint64_t expected_hash, double headroom) {
  const Hierarchy h = own_memory_cgroup();
  if (!write_file(dir + "/" + h.procs, std::to_string(getpid()))) return kNoCgroup;
  const std::vector<uint8_t> frame = read_all(frame_path);
  const fz::FrameInfo info = fz::inspect(frame.data(), frame.size());
  std::vector<uint8_t> out(info.original_bytes, 1);  // touched: resident, as HDF5's buffer
  const long long usage = read_number(dir + "/" + h.usage);
  if (usage <= 0) return kNoCgroup;
  const long long limit = usage + static_cast<long long>(headroom * double(info.original_bytes));
  if (!write_file(dir + "/" + h.limit, std::to_string(limit))) return kNoCgroup;
  try {
    const size_t n = fz::decompress_into(frame.data(), frame.size(), out.data(), out.size());
    return n == out.size() && fnv1a64(out.data(), n) == expected_hash ? 0 : kWrongBytes;
  } catch (const fz::Error& e) {
    std::fprintf(stderr, "    %s\n", e.what());
    return std::strstr(e.what(), "not enough memory to decompress") ? kClearError : kOtherError;
  }
}

int run(const char* self, const std::string& preset, size_t mib) {
  const Hierarchy h = own_memory_cgroup();
  if (h.dir.empty() || geteuid() != 0) {
    std::printf("fz_memory_limit_probe: skipped (needs root and a memory cgroup)\n");
    return kSkipped;
  }
  std::vector<uint64_t> dims;
  const std::vector<float> values = field(mib, dims, is_land(preset));
  const size_t bytes = values.size() * sizeof(float);
  const fz::Bytes frame = fz::compress(values.data(), bytes, fz::DataType::of<float>(), dims, preset_options(preset));
  std::vector<uint8_t> expected(bytes);
  fz::decompress_into(frame.data(), frame.size(), expected.data(), bytes);
  const std::string tag = "fz_limit_" + std::to_string(getpid());
  const std::string frame_path = "/tmp/" + tag + ".frame";
  std::ofstream(frame_path, std::ios::binary).write(reinterpret_cast<const char*>(frame.data()), frame.size());
  const std::string expected_hash = std::to_string(fnv1a64(expected.data(), bytes));
  std::printf("%s, float32 chunk of %zu MiB, frame %.1f MiB; the cgroup's limit leaves headroom x the chunk\n",
              preset.c_str(), bytes >> 20, frame.size() / 1048576.0);
  int failures = 0, skipped = 0;
  for (const double headroom : {0.25, 0.55, 0.8, 0.95, 1.1, 1.3, 1.6, 2.2}) {
    const std::string dir = h.dir + "/" + tag + "_" + std::to_string(int(headroom * 100));
    if (mkdir(dir.c_str(), 0755) != 0) {
      ++skipped;
      break;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string headroom_text = std::to_string(headroom);
      execl(self, self, "child", dir.c_str(), frame_path.c_str(), expected_hash.c_str(), headroom_text.c_str(),
            static_cast<char*>(nullptr));
      _exit(kNoCgroup);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    rmdir(dir.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const char* outcome = WIFSIGNALED(status) ? "KILLED (signal)"
                          : code == 0         ? "decoded, the same bytes"
                          : code == kClearError ? "refused: not enough memory (clear error)"
                          : code == kNoCgroup   ? "no cgroup"
                          : code == kWrongBytes ? "WRONG BYTES"
                                                : "OTHER ERROR";
    std::printf("  headroom %.2fx: %s%s\n", headroom, outcome,
                WIFSIGNALED(status) ? (" " + std::to_string(WTERMSIG(status))).c_str() : "");
    if (code == kNoCgroup) {
      ++skipped;
      break;
    }
    // Never killed or wrong; with the chunk's size free (and some MiB for
    // the threads) the decode must go through.
    if (WIFSIGNALED(status) || (code != 0 && code != kClearError) || (headroom >= 1.1 && code != 0)) ++failures;
  }
  std::remove(frame_path.c_str());
  if (skipped) {
    std::printf("fz_memory_limit_probe: skipped (cannot create or join a memory cgroup)\n");
    return kSkipped;
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__SANITIZE_ADDRESS__)
  std::printf("fz_memory_limit_probe: skipped under sanitizers (their allocators hold freed memory)\n");
  return kSkipped;
#endif
  if (argc == 6 && std::string(argv[1]) == "child")
    return child(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10), std::strtod(argv[5], nullptr));
  if (argc != 3) {
    std::fprintf(stderr, "usage: fz_memory_limit_probe cuszhi-tp|cuszhi-cr|cusz[-land] MiB\n");
    return 2;
  }
  return run("/proc/self/exe", argv[1], std::strtoul(argv[2], nullptr, 10));
}
