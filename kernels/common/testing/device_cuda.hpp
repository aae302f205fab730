// Helpers for the GPU stage tests: skip without a device, device buffers that
// free themselves, copies to and from host Bytes, and guard bytes around an
// output buffer to catch writes past its end.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common/bytes.hpp"

namespace fz::testing {

inline bool cuda_device_present() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: leave no error behind
    return false;
  }
  return count > 0;
}

#define FZ_SKIP_WITHOUT_CUDA()                                         \
  do {                                                                 \
    if (!::fz::testing::cuda_device_present()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

#define FZ_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

// Device memory of `bytes` bytes (at least one, so that empty buffers still
// have a distinct valid address), filled with `fill`.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, uint8_t fill = 0xCD) : size_(bytes) {
    if (cudaMalloc(&data_, bytes > 0 ? bytes : 1) != cudaSuccess) {
      data_ = nullptr;
      return;
    }
    cudaMemset(data_, fill, bytes > 0 ? bytes : 1);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }

  bool ok() const { return data_ != nullptr; }
  uint8_t* data() const { return static_cast<uint8_t*>(data_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

  void upload(const Bytes& host, size_t offset = 0) const {
    if (!host.empty()) cudaMemcpy(data() + offset, host.data(), host.size(), cudaMemcpyHostToDevice);
  }
  Bytes download(size_t count, size_t offset = 0) const {
    Bytes host(count);
    if (count > 0) cudaMemcpy(host.data(), data() + offset, count, cudaMemcpyDeviceToHost);
    return host;
  }
  template <typename T>
  T read(size_t offset = 0) const {
    T v{};
    cudaMemcpy(&v, data() + offset, sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

inline DeviceBuffer to_device(const Bytes& host) {
  DeviceBuffer buffer(host.size());
  buffer.upload(host);
  return buffer;
}

// Bytes past an output region, set before a kernel and checked after it.
constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardFill = 0xCD;

inline bool guard_intact(const DeviceBuffer& buffer, size_t used) {
  const Bytes tail = buffer.download(buffer.size() - used, used);
  for (uint8_t b : tail)
    if (b != kGuardFill) return false;
  return true;
}

}  // namespace fz::testing
