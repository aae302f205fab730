// Which backend runs a chunk: H5Z_FZ_DEVICE=auto|cpu|cuda|cuda:N (default auto:
// the first CUDA device when one is usable). A pipeline runs on the GPU only
// when every stage has a GPU version (device_forward.hpp); otherwise, and when
// the GPU fails, on the CPU. The choice and the reason are said once on stderr
// when H5Z_FZ_VERBOSE is set, and always when an explicit request cannot be met.
#pragma once

#include <string>

namespace fz::engine {

enum class Backend { Cpu, Cuda };

struct BackendChoice {
  Backend backend = Backend::Cpu;
  int device = -1;
  // H5Z_FZ_DEVICE named cuda or cuda:N: every chunk goes to the GPU. Under
  // auto, work the CPU does faster stays there (api.cpp, docs/PERFORMANCE.md).
  bool explicit_cuda = false;
  std::string reason;
};

// Reads the environment once per process; throws fz::Error for a malformed value.
const BackendChoice& chosen_backend();

int cuda_device_count();  // 0 when CUDA is not built in or not usable

}  // namespace fz::engine
