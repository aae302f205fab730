#include "environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fz::filter {
namespace {

const char* value_of(const char* name) {
  const char* value = std::getenv(name);
  return value && value[0] != '\0' ? value : nullptr;
}

void say(const std::string& message) { std::fprintf(stderr, "H5Z-FZ: %s\n", message.c_str()); }

Options read_environment() {
  Options policy;
  const bool verbose = verbose_environment();
  policy.log = [verbose](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning || verbose) say(message);
  };
  if (const char* device = value_of("H5Z_FZ_DEVICE")) policy.device = device;
  if (const char* threads = value_of("H5Z_FZ_THREADS")) {
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(threads, &end, 10);
    if (end == threads || *end != '\0' || parsed > 4096) {
      if (verbose) say(std::string("ignoring H5Z_FZ_THREADS=") + threads + " (not a thread count)");
    } else {
      policy.threads = static_cast<unsigned>(parsed);
    }
  }
  if (const char* cpu = value_of("H5Z_FZ_CPU")) {
    if (std::strcmp(cpu, "baseline") == 0)
      policy.cpu_features = CpuFeatures::kBaseline;
    else if (verbose)
      say(std::string("ignoring H5Z_FZ_CPU=") + cpu + " (only 'baseline' is known)");
  }
  if (const char* copies = value_of("H5Z_FZ_GPU_COPY")) {
    if (std::strcmp(copies, "direct") == 0)
      policy.gpu_copies = GpuCopies::kDirect;
    else if (std::strcmp(copies, "staged") != 0 && verbose)
      say(std::string("ignoring H5Z_FZ_GPU_COPY=") + copies + " (not staged or direct)");
  }
  return policy;
}

}  // namespace

bool verbose_environment() {
  static const bool enabled = [] {
    const char* value = std::getenv("H5Z_FZ_VERBOSE");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

const Options& policy_from_environment() {
  static const Options policy = read_environment();
  return policy;
}

void apply_policy(const Options& policy, Options& options) {
  options.threads = policy.threads;
  options.device = policy.device;
  options.cpu_features = policy.cpu_features;
  options.gpu_copies = policy.gpu_copies;
  options.log = policy.log;
}

}  // namespace fz::filter
