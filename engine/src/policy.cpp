#include "policy.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "common/cpu_features.hpp"

namespace fz::engine {
namespace {

struct DeviceRequest {
  bool cpu = false;
  bool explicit_cuda = false;
  int device = 0;
  std::string error;  // malformed
};

DeviceRequest parse_device(const std::string& wanted) {
  DeviceRequest r;
  if (wanted == "cpu") {
    r.cpu = true;
  } else if (wanted == "cuda") {
    r.explicit_cuda = true;
  } else if (wanted.rfind("cuda:", 0) == 0 || wanted.rfind("auto:", 0) == 0) {
    // cuda:N: every chunk on device N. auto:N: auto's size rule on device N
    // (the filter turns the MPI local rank into N, filter/environment.cpp).
    char* end = nullptr;
    const long n = std::strtol(wanted.c_str() + 5, &end, 10);
    if (end == wanted.c_str() + 5 || *end != '\0' || n < 0 || n > 1024)
      r.error = "device '" + wanted + "': N in " + wanted.substr(0, 5) + "N must be a device number";
    r.explicit_cuda = wanted[0] == 'c';
    r.device = static_cast<int>(n);
  } else if (wanted != "auto" && !wanted.empty()) {
    r.error = "device '" + wanted + "' is not one of auto, auto:N, cpu, cuda, cuda:N";
  }
  return r;
}

}  // namespace

void Policy::say(LogLevel level, const std::string& message) const {
  if (log) {
    log(level, message);
  } else if (level == LogLevel::kWarning) {
    std::fprintf(stderr, "fz: %s\n", message.c_str());
  }
}

namespace {

struct ResolvedDevice {
  Backend backend = Backend::Cpu;
  int device = -1;
  bool explicit_cuda = false;
};

// What a device string resolves to, and what to say about it the first time.
ResolvedDevice resolve_device(const std::string& wanted, std::string& info, std::string& warning) {
  ResolvedDevice r;
  const DeviceRequest request = parse_device(wanted);
  if (!request.error.empty()) {
    warning = request.error + "; using the CPU backend";
    return r;
  }
  if (request.cpu) {
    info = "CPU backend (device cpu)";
    return r;
  }
  const int devices = cuda_device_count();
  if (request.device < devices) {
    r.backend = Backend::Cuda;
    r.device = request.device;
    r.explicit_cuda = request.explicit_cuda;
    info = "CUDA device " + std::to_string(r.device) + " of " + std::to_string(devices) +
           " (stages without a GPU version, and chunks the GPU fails on, run on the CPU" +
           (r.explicit_cuda ? std::string(")") : "; under auto, chunks under 256 KiB run on the CPU, faster for them)");
  } else if (!request.explicit_cuda) {
    info = "CPU backend (" + std::to_string(devices) + " CUDA device(s) usable)";
  } else {  // asked for explicitly: a warning
    warning = "device " + wanted + " cannot be honoured: " + std::to_string(devices) +
              " CUDA device(s) usable; using the CPU backend";
  }
  return r;
}

}  // namespace

Policy resolve_policy(const Options& options) {
  Policy p;
  p.threads = options.threads;
  p.cpu_features = options.cpu_features;
  p.gpu_copies = options.gpu_copies;
  p.log = options.log;
  // Resolved once per distinct string and process (the devices do not change),
  // and said then: one short lock per engine call after that.
  static std::mutex mutex;
  static std::map<std::string, ResolvedDevice> resolved;
  std::string info, warning;
  ResolvedDevice device;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = resolved.find(options.device);
    if (found == resolved.end()) found = resolved.emplace(options.device, resolve_device(options.device, info, warning)).first;
    device = found->second;
  }
  if (!info.empty()) p.say(LogLevel::kInfo, info);
  if (!warning.empty()) p.say(LogLevel::kWarning, warning);
  p.backend = device.backend;
  p.device = device.device;
  p.explicit_cuda = device.explicit_cuda;
  return p;
}

Policy cpu_only(Policy policy) {
  policy.backend = Backend::Cpu;
  policy.device = -1;
  policy.explicit_cuda = false;
  return policy;
}

CpuFeaturesScope::CpuFeaturesScope(CpuFeatures features) : saved_(optional_isa_allowed_here() ? 1 : 0) {
  optional_isa_allowed_here() = saved_ == 1 && features == CpuFeatures::kAll;
}

CpuFeaturesScope::~CpuFeaturesScope() { optional_isa_allowed_here() = saved_ == 1; }

}  // namespace fz::engine
