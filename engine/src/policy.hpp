// The policy fields of fz::Options (fz.hpp, "Policy") resolved for one engine
// call: the backend and device, the CPU threads and features, how GPU copies
// go, and where messages go. The engine reads no environment variable; the
// filter and the tools map H5Z_FZ_* onto Options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fz/fz.hpp"

namespace fz::engine {

enum class Backend { Cpu, Cuda };

// Under device "auto", chunks smaller than this stay on the CPU both ways:
// the GPU chunk path costs 50-300 us per chunk (H100, docs/PERFORMANCE.md),
// which one core beats on chunks of tens of KB.
constexpr uint64_t kAutoGpuMinChunkBytes = uint64_t{256} << 10;

struct Policy {
  Backend backend = Backend::Cpu;
  int device = -1;
  // The device string named cuda or cuda:N: every chunk goes to the GPU.
  // Under auto, work the CPU does faster stays there (kAutoGpuMinChunkBytes).
  bool explicit_cuda = false;
  unsigned threads = 0;  // as asked; 0 = all cores (thread_pool.hpp)
  CpuFeatures cpu_features = CpuFeatures::kAll;
  GpuCopies gpu_copies = GpuCopies::kStaged;
  LogCallback log;

  // Whether a chunk (compressed, or decoded into caller memory) of `bytes`
  // goes to the GPU: the auto-size rule, in this one place.
  bool gpu_for(uint64_t bytes) const {
    return backend == Backend::Cuda && (explicit_cuda || bytes >= kAutoGpuMinChunkBytes);
  }
  void say(LogLevel level, const std::string& message) const;
};

// Resolves `options`' policy fields. An unknown or unmeetable device string
// runs on the CPU and says why (a warning, once per distinct string); the
// backend chosen is said once per distinct string as information.
Policy resolve_policy(const Options& options);

// The same as a policy for the CPU only (the host fall-backs).
Policy cpu_only(Policy policy);

int cuda_device_count();  // 0 when CUDA is not built in or not usable

// Runs `body` with the CPU features `policy` allows on this thread; the pool
// executors made under it carry them to their workers (thread_pool.hpp).
class CpuFeaturesScope {
 public:
  explicit CpuFeaturesScope(CpuFeatures features);
  ~CpuFeaturesScope();
  CpuFeaturesScope(const CpuFeaturesScope&) = delete;
  CpuFeaturesScope& operator=(const CpuFeaturesScope&) = delete;

 private:
  int saved_;
};

}  // namespace fz::engine
