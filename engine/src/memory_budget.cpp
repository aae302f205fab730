#include "memory_budget.hpp"

#include <fstream>
#include <limits>
#include <string>

#include "fault_injection.hpp"
#include "fz/fz.hpp"

namespace fz::engine {
namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();

// A "Key:   123 kB" line of /proc/meminfo, in bytes.
uint64_t meminfo_bytes(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key) return kib * 1024;
  }
  return kUnknown;
}

// A file holding one number ("max" or a missing file: unknown).
uint64_t number_in(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text[0] < '0' || text[0] > '9') return kUnknown;
  try {
    return std::stoull(text);
  } catch (...) {
    return kUnknown;
  }
}

// This process's cgroup path in the hierarchy (`controller` "memory" for v1,
// "" for v2's unified line "0::PATH"), or "/" when not found.
std::string own_cgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool listed = !controller.empty() && ("," + controllers + ",").find("," + controller + ",") != std::string::npos;
    if (controllers == controller || listed) return line.substr(second + 1);
  }
  return "/";
}

// limit and usage read from `dir` (files `limit_name`, `usage_name`), when both are numbers.
bool read_limit(const std::string& dir, const char* limit_name, const char* usage_name, uint64_t& limit,
                uint64_t& usage) {
  limit = number_in((dir + "/" + limit_name).c_str());
  usage = number_in((dir + "/" + usage_name).c_str());
  return limit != kUnknown && usage != kUnknown;
}

// The cgroup's memory limit and usage (v2, else v1), in the process's own
// cgroup where the hierarchy shows it, else at the hierarchy's root (which a
// container's cgroup namespace makes its own); kUnknown when unlimited.
void cgroup_limit(uint64_t& limit, uint64_t& usage) {
  const std::string v2 = own_cgroup("");
  const std::string v1 = own_cgroup("memory");
  const std::string candidates[][3] = {
      {"/sys/fs/cgroup" + v2, "memory.max", "memory.current"},
      {"/sys/fs/cgroup/unified" + v2, "memory.max", "memory.current"},
      {"/sys/fs/cgroup", "memory.max", "memory.current"},
      {"/sys/fs/cgroup/memory" + v1, "memory.limit_in_bytes", "memory.usage_in_bytes"},
      {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"},
  };
  limit = usage = kUnknown;
  for (const auto& c : candidates) {
    uint64_t l = kUnknown, u = kUnknown;
    if (read_limit(c[0], c[1].c_str(), c[2].c_str(), l, u)) {
      limit = l;
      usage = u;
      break;
    }
  }
  // v1 reports "no limit" as a number near 2^63.
  if (limit >= (uint64_t{1} << 62)) limit = kUnknown;
}

uint64_t known_or_zero(uint64_t v) { return v == kUnknown ? 0 : v; }

}  // namespace

uint64_t available_memory_bytes() {
  const int64_t injected = fault_injection::available_memory.load();
  if (injected >= 0) return static_cast<uint64_t>(injected);
  uint64_t available = meminfo_bytes("MemAvailable:");
  uint64_t limit = kUnknown, usage = kUnknown;
  cgroup_limit(limit, usage);
  if (limit != kUnknown && usage != kUnknown) {
    const uint64_t left = usage < limit ? limit - usage : 0;
    if (available == kUnknown || left < available) available = left;
  }
  return known_or_zero(available);
}

uint64_t total_memory_bytes() {
  uint64_t total = meminfo_bytes("MemTotal:");
  uint64_t limit = kUnknown, usage = kUnknown;
  cgroup_limit(limit, usage);
  if (limit != kUnknown && (total == kUnknown || limit < total)) total = limit;
  return known_or_zero(total);
}

void require_memory(uint64_t chunk_bytes, uint64_t needed, const char* what) {
  if (chunk_bytes < kMemoryCheckMinBytes) return;
  const uint64_t available = available_memory_bytes();
  if (available == 0 || needed <= available) return;
  throw Error(std::string("not enough memory to ") + what + " a chunk of " + std::to_string(chunk_bytes >> 20) +
              " MiB: it needs about " + std::to_string(needed >> 20) + " MiB more, and " +
              std::to_string(available >> 20) + " MiB are available");
}

}  // namespace fz::engine
