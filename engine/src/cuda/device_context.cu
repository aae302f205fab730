#include "cuda/device_context.hpp"

#include <array>
#include <limits>

#include "fault_injection.hpp"

namespace fz::engine::cuda {

bool is_sticky(cudaError_t code) {
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

CudaError::CudaError(cudaError_t code, const std::string& what)
    : std::runtime_error(what + ": " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")"),
      code_(code),
      sticky_(is_sticky(code)) {}

void check(cudaError_t code, const char* what) {
  if (code == cudaSuccess) return;
  if (!is_sticky(code)) (void)cudaGetLastError();  // clear it, so the next call does not see it
  throw CudaError(code, what);
}

CurrentDeviceGuard::CurrentDeviceGuard(int device) {
  check(cudaGetDevice(&saved_), "cudaGetDevice");
  if (saved_ != device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    changed_ = true;
  }
}

CurrentDeviceGuard::~CurrentDeviceGuard() {
  if (changed_) (void)cudaSetDevice(saved_);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) (void)cudaFreeHost(data_);
}

uint8_t* PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_ && data_) return data_;
  // Small buffers grow by half again, so a slowly growing size does not
  // reallocate each time. Large ones (a chunk's staging) take what is asked,
  // in whole MiB: half again of a 1 GiB frame's staging is 512 MiB of pinned
  // memory the chunk never uses.
  constexpr size_t kExactAbove = size_t{64} << 20, kGranule = size_t{1} << 20;
  const size_t wanted = bytes > kExactAbove ? (bytes + kGranule - 1) / kGranule * kGranule
                                            : std::max(bytes, capacity_ + capacity_ / 2);
  // The old buffer goes first (its contents are not kept): the new one
  // never coexists with it, which would take both sizes at once.
  if (data_) (void)cudaFreeHost(data_);
  data_ = nullptr;
  capacity_ = 0;
  void* fresh = nullptr;
  check(cudaHostAlloc(&fresh, wanted, cudaHostAllocDefault), "cudaHostAlloc (pinned staging)");
  data_ = static_cast<uint8_t*>(fresh);
  capacity_ = wanted;
  return data_;
}

LaneLease::~LaneLease() {
  if (lane_) context_->give_back(std::move(lane_));
}

namespace {
constexpr int kMaxDevices = 64;
}  // namespace

DeviceContext& DeviceContext::of(int device) {
  // Made once per device and kept for the process (the plugin is never
  // unloaded: -z nodelete); a failed start is retried by a later call. The
  // lock is held only while looking up (and, once, making) the context.
  static std::array<DeviceContext*, kMaxDevices> contexts{};
  static std::mutex retry_mutex;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count || device >= kMaxDevices)
    throw CudaError(cudaErrorInvalidDevice, "CUDA device " + std::to_string(device) + " does not exist (" +
                                                std::to_string(count) + " seen)");
  std::lock_guard<std::mutex> lock(retry_mutex);
  if (!contexts[device]) contexts[device] = new DeviceContext(device);  // throws CudaError: retried next time
  return *contexts[device];
}

DeviceContext::DeviceContext(int device) : device_(device) {
  CurrentDeviceGuard guard(device);
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  name_ = properties.name;
  check(cudaDeviceGetDefaultMemPool(&pool_, device), "cudaDeviceGetDefaultMemPool");
  // Keep freed memory in the pool instead of handing it back at each
  // synchronisation: chunk after chunk then allocates nothing new.
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

DeviceContext::~DeviceContext() = default;  // never runs: contexts live as long as the process

LaneLease DeviceContext::lease() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Lane> lane = std::move(idle_.back());
      idle_.pop_back();
      return LaneLease(*this, std::move(lane));
    }
  }
  CurrentDeviceGuard guard(device_);
  auto lane = std::make_unique<Lane>();
  lane->device = device_;
  check(cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::lock_guard<std::mutex> lock(mutex_);
  ++lanes_made_;
  return LaneLease(*this, std::move(lane));
}

void DeviceContext::give_back(std::unique_ptr<Lane> lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(lane));
}

size_t DeviceContext::lanes_made() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lanes_made_;
}

void DeviceContext::take_injected_allocation_failure() {
  if (fault_injection::take(fault_injection::device_allocation_failures))
    throw CudaError(cudaErrorMemoryAllocation, "injected device allocation failure");
}

void* DeviceContext::allocate(size_t bytes, cudaStream_t stream) {
  take_injected_allocation_failure();
  void* pointer = nullptr;
  check(cudaMallocFromPoolAsync(&pointer, bytes == 0 ? 1 : bytes, pool_, stream), "cudaMallocFromPoolAsync");
  return pointer;
}

void DeviceContext::release(void* pointer, cudaStream_t stream) {
  if (pointer) (void)cudaFreeAsync(pointer, stream);
}

}  // namespace fz::engine::cuda
