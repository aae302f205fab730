// CUDA device discovery for backend selection. Kept apart from the kernels so the
// engine asks "is a usable device there?" without touching any stage.
#include <cuda_runtime.h>

#include "policy.hpp"

namespace fz::engine {

// Number of usable CUDA devices; 0 when there is no driver, no device, or the
// runtime cannot start (the CPU backend is used then).
int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the non-sticky error
    return 0;
  }
  return count;
}

}  // namespace fz::engine
