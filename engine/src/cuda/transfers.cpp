#include "cuda/transfers.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "thread_pool.hpp"

namespace fz::engine {
namespace cuda {

// How chunks cross PCIe from and to the caller's (pageable) memory: through
// the lane's pinned staging buffer in pieces, the copy into pinned memory of
// piece k+1 overlapping the DMA of piece k ("staged", the default), or handed
// to the driver as they are, which stages them itself ("direct").
// fz::Options::gpu_copies chooses, for measurements (docs/PERFORMANCE.md).

// Staged copies move kPiece bytes per DMA. The copies into and out of pinned
// memory are one parallel loop over kCopyItem parts of the whole chunk, which
// the pool's threads take in order: on the way up, the thread that finishes a
// piece's last part enqueues that piece's DMA; on the way down, a part waits
// for its piece's DMA. So the host copies and the DMAs overlap all along, and
// only one piece's copy is left when the last DMA ends. (H100 host, 16 cores:
// one thread copies 10-18 GB/s, eight 43 GB/s; pinned DMA runs at 50-54 GB/s;
// the pool gives a thread 16 parts, so a piece reaches 4 threads and 4 MiB
// all 16.) Against copying a whole 4 MiB piece before its DMA, one 16 MiB
// fzgpu chunk compressed in 918 instead of 1355 us; 512 KiB to 4 MiB pieces
// and 32 or 64 KiB parts were measured too, and were slower.
namespace {

constexpr size_t kPiece = size_t{1} << 20;
constexpr size_t kCopyItem = size_t{16} << 10;
static_assert(kPiece % kCopyItem == 0, "a copy part never straddles two pieces");

size_t parts_of(size_t bytes) { return (bytes + kCopyItem - 1) / kCopyItem; }

}  // namespace

void parallel_copy(uint8_t* dst, const uint8_t* src, size_t bytes, const Executor& exec) {
  exec.parallel_for(parts_of(bytes), [&](size_t i) {
    const size_t at = i * kCopyItem;
    std::memcpy(dst + at, src + at, std::min(kCopyItem, bytes - at));
  });
}

void upload(Lane& lane, ByteSpan host, uint8_t* device, const Executor& exec, GpuCopies copies) {
  if (copies == GpuCopies::kDirect) {
    if (host.size)
      check(cudaMemcpyAsync(device, host.data, host.size, cudaMemcpyHostToDevice, lane.stream), "upload");
    return;
  }
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(host.size, 1));
  const size_t pieces = (host.size + kPiece - 1) / kPiece;
  std::vector<std::atomic<size_t>> parts_left(pieces);
  for (size_t k = 0; k < pieces; ++k) parts_left[k] = parts_of(std::min(kPiece, host.size - k * kPiece));
  // Pieces are enqueued in the order their copies finish: they are disjoint,
  // and everything later on the stream waits for all of them.
  exec.parallel_for(parts_of(host.size), [&](size_t i) {
    const size_t at = i * kCopyItem;
    std::memcpy(staging + at, host.data + at, std::min(kCopyItem, host.size - at));
    const size_t k = at / kPiece;
    if (parts_left[k].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      CurrentDeviceGuard guard(lane.device);  // a pool thread's current device may be another
      const size_t begin = k * kPiece;
      check(cudaMemcpyAsync(device + begin, staging + begin, std::min(kPiece, host.size - begin),
                                  cudaMemcpyHostToDevice, lane.stream),
                  "upload");
    }
  });
}

// Device memory into host memory through the staging buffer (see kPiece).
// Returns when everything enqueued on the lane's stream before it is done, too.
void download(Lane& lane, const uint8_t* device, size_t bytes, uint8_t* host, const Executor& exec,
              GpuCopies copies) {
  if (copies == GpuCopies::kDirect) {
    if (bytes) check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, lane.stream), "download");
    check(cudaStreamSynchronize(lane.stream), "download");
    return;
  }
  if (bytes > lane.staging.capacity()) check(cudaStreamSynchronize(lane.stream), "download");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(bytes, 1));
  if (bytes <= kPiece) {  // one piece: no events needed
    if (bytes) check(cudaMemcpyAsync(staging, device, bytes, cudaMemcpyDeviceToHost, lane.stream), "download");
    check(cudaStreamSynchronize(lane.stream), "download");
    parallel_copy(host, staging, bytes, exec);
    return;
  }
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  while (lane.piece_events.size() < pieces) {
    cudaEvent_t event;
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    lane.piece_events.push_back(event);
  }
  for (size_t k = 0; k < pieces; ++k) {
    const size_t at = k * kPiece;
    check(cudaMemcpyAsync(staging + at, device + at, std::min(kPiece, bytes - at), cudaMemcpyDeviceToHost,
                                lane.stream),
                "download");
    check(cudaEventRecord(lane.piece_events[k], lane.stream), "cudaEventRecord");
  }
  std::vector<std::atomic<bool>> arrived(pieces);  // (the first part to see its event done says so)
  exec.parallel_for(parts_of(bytes), [&](size_t i) {
    const size_t at = i * kCopyItem;
    const size_t k = at / kPiece;
    if (!arrived[k].load(std::memory_order_acquire)) {
      CurrentDeviceGuard guard(lane.device);  // a pool thread's current device may be another
      check(cudaEventSynchronize(lane.piece_events[k]), "download");
      arrived[k].store(true, std::memory_order_release);
    }
    std::memcpy(host + at, staging + at, std::min(kCopyItem, bytes - at));
  });
  // The last event follows everything enqueued before the download.
}

}  // namespace cuda

namespace {

// Whether `host` is page-locked memory the driver knows (cudaHostAlloc,
// cudaHostRegister, CuPy's pinned memory): the DMA then goes there directly.
bool page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();  // (not sticky: clear it)
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

}  // namespace

// On a lane's stream, which never waits on other streams: the legacy default
// stream of a plain cudaMemcpy would wait for every other call's kernels on
// the device, and serialise the chunks a batch has in flight.
void copy_device_to_host(const uint8_t* device_src, size_t bytes, uint8_t* host_dst, int device) {
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = cuda::DeviceContext::of(device).lease();
  const GpuCopies how = page_locked(host_dst) ? GpuCopies::kDirect : GpuCopies::kStaged;
  cuda::download(*lane, device_src, bytes, host_dst, *make_pool_executor(1), how);
}

void copy_host_to_device(const uint8_t* host_src, size_t bytes, uint8_t* device_dst, int device) {
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = cuda::DeviceContext::of(device).lease();
  const GpuCopies how = page_locked(host_src) ? GpuCopies::kDirect : GpuCopies::kStaged;
  cuda::upload(*lane, {host_src, bytes}, device_dst, *make_pool_executor(1), how);
  cuda::check(cudaStreamSynchronize(lane->stream), "host to device copy");
}

uint8_t* allocate_device(size_t bytes, int device) {
  cuda::CurrentDeviceGuard guard(device);
  void* pointer = nullptr;
  cuda::check(cudaMalloc(&pointer, std::max<size_t>(bytes, 1)), "cudaMalloc (frames from the host)");
  return static_cast<uint8_t*>(pointer);
}

void free_device(uint8_t* pointer, int device) {
  if (pointer == nullptr) return;
  cuda::CurrentDeviceGuard guard(device);
  (void)cudaFree(pointer);
}

}  // namespace fz::engine
