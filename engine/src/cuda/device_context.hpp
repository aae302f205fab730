// The CUDA backend's per-device state (README.md, "Environment variables"):
// created lazily, once per device and process, and shared by every engine call
// on that device, from any thread.
//
//   - Lanes: a CUDA stream with its pinned host staging buffer, lent to one
//     engine call at a time (so concurrent calls from several threads never
//     share a stream) and returned for the next; more are made when all are
//     out. Staging buffers grow to the largest chunk seen and stay.
//   - Device memory comes from the device's stream-ordered pool with its
//     release threshold at the maximum, so memory freed by one chunk is reused
//     by the next without cudaMalloc/cudaFree (or an implicit trim) per chunk.
//   - Every call restores the caller's current device (CurrentDeviceGuard).
//   - A sticky CUDA error (the context is unusable until the process ends)
//     marks the context broken: the engine then runs on the CPU for the rest
//     of the process. Other errors (out of memory, say) fail only the call.
// Only compiled with CUDA (FZ_HAVE_CUDA); kernels never see this header.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fz::engine::cuda {

// A failed CUDA call. `sticky` errors leave the device context unusable.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what);
  cudaError_t code() const { return code_; }
  bool sticky() const { return sticky_; }

 private:
  cudaError_t code_;
  bool sticky_;
};

// True for errors after which the CUDA context cannot be used again (a kernel
// fault, a lost device); false for the ones a later call may not see again.
bool is_sticky(cudaError_t code);

// Throws CudaError naming `what` unless code is cudaSuccess.
void check(cudaError_t code, const char* what);

// Makes `device` current for its lifetime and restores the caller's device.
class CurrentDeviceGuard {
 public:
  explicit CurrentDeviceGuard(int device);
  ~CurrentDeviceGuard();
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int saved_ = -1;
  bool changed_ = false;
};

// Page-locked host memory that grows (never per chunk once warm).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  // At least `bytes` of pinned memory; the contents are not kept when it grows.
  uint8_t* reserve(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// A pipeline's forward captured as a CUDA graph (defined where it is used,
// engine/src/cuda/forward_graphs.hpp).
struct CapturedForward;

struct Lane {
  int device = 0;  // the stream's; pool threads that enqueue on it make it current
  cudaStream_t stream = nullptr;
  PinnedBuffer staging;  // chunks and streams on their way up or down
  PinnedBuffer scalars;  // small values read back (sizes, ranges, checksums, headers)
  // Events marking the pieces of a staged download, made when first needed and
  // reused by every later download on this lane.
  std::vector<cudaEvent_t> piece_events;
  // Device memory lent to one chunk at a time, in order, and taken back whole
  // when the chunk is done (cuda/chunk_work.hpp's ChunkWork), so a chunk's
  // buffers cost no pool allocation and release each (1.4 us a pair on the
  // H100 machine, a dozen or more per chunk). It grows, before a chunk starts,
  // to what the most demanding chunk so far needed, up to a cap; buffers
  // beyond it come from the pool.
  uint8_t* arena = nullptr;
  size_t arena_capacity = 0;
  size_t arena_wanted = 0;
  // Forward pipelines this lane captured as CUDA graphs, least recently used
  // first, and the keys of the pipelines it ran lately (a pipeline is captured
  // when it comes again).
  std::vector<std::shared_ptr<CapturedForward>> captured;
  std::vector<std::string> recent_keys;
};

class DeviceContext;

// A lane lent to one engine call; given back when the lease ends.
class LaneLease {
 public:
  LaneLease(DeviceContext& context, std::unique_ptr<Lane> lane) : context_(&context), lane_(std::move(lane)) {}
  LaneLease(LaneLease&&) = default;
  LaneLease& operator=(LaneLease&&) = default;
  ~LaneLease();
  Lane& operator*() const { return *lane_; }
  Lane* operator->() const { return lane_.get(); }

 private:
  DeviceContext* context_;
  std::unique_ptr<Lane> lane_;
};

class DeviceContext {
 public:
  // The context of `device`, made on first use; throws CudaError when the
  // device cannot be used (no such device, no driver).
  static DeviceContext& of(int device);

  int device() const { return device_; }
  const std::string& name() const { return name_; }

  LaneLease lease();

  // Stream-ordered device memory from the device's pool. allocate throws
  // CudaError (cudaErrorMemoryAllocation when the device is full).
  void* allocate(size_t bytes, cudaStream_t stream);
  void release(void* pointer, cudaStream_t stream);
  // Throws CudaError (cudaErrorMemoryAllocation) when a test injected an
  // allocation failure (fault_injection.hpp); allocate() and every other way
  // a chunk gets device memory (a lane's arena) call it.
  static void take_injected_allocation_failure();

  // A sticky error was seen on this device: do not use it again.
  bool broken() const { return broken_.load(); }
  void mark_broken() { broken_.store(true); }

  // Lanes made so far (tests: concurrency makes more, reuse does not).
  size_t lanes_made() const;

  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

 private:
  explicit DeviceContext(int device);
  friend class LaneLease;
  void give_back(std::unique_ptr<Lane> lane);

  int device_;
  std::string name_;
  cudaMemPool_t pool_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Lane>> idle_;
  size_t lanes_made_ = 0;
  std::atomic<bool> broken_{false};
};

}  // namespace fz::engine::cuda
