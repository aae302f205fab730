// Which backend runs a chunk: H5Z_FZ_DEVICE=auto|cpu|cuda|cuda:N (default auto).
// This build runs every stage on the CPU; the CUDA backend arrives with its own
// issue. The choice and the reason are said once on stderr when H5Z_FZ_VERBOSE is set.
#pragma once

#include <string>

namespace fz::engine {

enum class Backend { Cpu, Cuda };

struct BackendChoice {
  Backend backend = Backend::Cpu;
  int device = -1;
  std::string reason;
};

// Reads the environment once per process; throws fz::Error for a malformed value.
const BackendChoice& chosen_backend();

int cuda_device_count();  // 0 when CUDA is not built in or not usable

}  // namespace fz::engine
