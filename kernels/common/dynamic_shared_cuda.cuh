// Consent for a kernel to take more than the default 48 KiB of dynamic
// shared memory, given safely while several threads launch it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

namespace fz::cuda_common {

// Lets `kernel` take `bytes` of dynamic shared memory on the current device.
// The limit is a property of the kernel in the device's context, shared by
// every thread: set per launch, one thread's smaller limit could land between
// another thread's setting and its launch (seen as
// cudaErrorLaunchOutOfResources when several chunks decoded at once with
// different Huffman block sizes). So it only ever grows, under a lock; a
// higher limit than a launch needs changes nothing for that launch.
template <typename Kernel>
cudaError_t allow_dynamic_shared_memory(Kernel kernel, size_t bytes) {
  // Per kernel and device: kernels of one signature share this instantiation.
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, size_t> allowed;
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  std::lock_guard<std::mutex> lock(mutex);
  size_t& limit = allowed[{reinterpret_cast<const void*>(kernel), device}];
  if (bytes <= limit) return cudaSuccess;
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err == cudaSuccess) limit = bytes;
  return err;
}

}  // namespace fz::cuda_common
