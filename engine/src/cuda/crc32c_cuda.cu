// CRC32C on the GPU (crc32c_cuda.hpp); the method is described in
// crc32c_parallel.hpp, whose functions the kernels call.
//
// Two kernels: one thread block per tile computes the tile's raw CRC moved to
// the end of the message (tile_values); one block XORs those values and
// applies the initial value and final XOR (finish). Spans travel in the
// kernel's parameters, up to kSpansPerLaunch per launch (more spans, more
// launches of the first kernel, one finish).
#include "cuda/crc32c_cuda.hpp"

#include "cuda/crc32c_parallel.hpp"

namespace fz::engine::cuda {
namespace {

namespace cp = crc32c_parallel;

// Built by the compiler (constexpr), so no device needs initialising.
__device__ const cp::Tables kDeviceTables = cp::make_tables();
// The host's copy, for the part of the result that depends on the initial
// value and the total length alone.
constexpr cp::Tables kHostTables = cp::make_tables();

constexpr unsigned kSpansPerLaunch = 32;
constexpr unsigned kFinishThreads = 1024;
constexpr uint64_t kMaxTilesPerLaunch = 0x7FFFFFFFu;  // grid limit

struct LaunchSpans {
  const uint8_t* data[kSpansPerLaunch];
  uint64_t size[kSpansPerLaunch];
  uint64_t bytes_after[kSpansPerLaunch];  // bytes of the whole message after this span
  uint32_t head[kSpansPerLaunch];
  uint32_t first_tile[kSpansPerLaunch + 1];  // within this launch; [count] = tiles of the launch
  uint32_t count;
  uint32_t tile_bytes;
};

// Aligned 16-byte loads of the rows (lane_share guarantees the alignment).
struct LoadVector {
  __host__ __device__ void operator()(const uint8_t* p, uint32_t* w) const {
#if defined(__CUDA_ARCH__)
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
#else
    (void)p;  // device code only
    (void)w;
#endif
  }
};

__device__ uint32_t warp_xor(uint32_t value) {
  for (int offset = 16; offset > 0; offset >>= 1) value ^= __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  return value;
}

__global__ void __launch_bounds__(cp::kLanes) tile_values(const LaunchSpans spans, uint32_t* values) {
  __shared__ __align__(16) uint32_t bytes[16][256];
  __shared__ __align__(16) uint32_t row_shift[4][256];
  __shared__ uint32_t warp_values[cp::kLanes / 32];
  {
    const uint4* src = reinterpret_cast<const uint4*>(&kDeviceTables.bytes[0][0]);
    uint4* dst = reinterpret_cast<uint4*>(&bytes[0][0]);
    for (unsigned i = threadIdx.x; i < 16 * 256 / 4; i += cp::kLanes) dst[i] = src[i];
    src = reinterpret_cast<const uint4*>(&kDeviceTables.row_shift[0][0]);
    dst = reinterpret_cast<uint4*>(&row_shift[0][0]);
    for (unsigned i = threadIdx.x; i < 4 * 256 / 4; i += cp::kLanes) dst[i] = src[i];
  }
  // The span holding this tile: the last one whose first tile is not after it
  // (every span of a launch has at least one tile).
  unsigned low = 0, high = spans.count;
  while (high - low > 1) {
    const unsigned middle = (low + high) / 2;
    if (spans.first_tile[middle] <= blockIdx.x)
      low = middle;
    else
      high = middle;
  }
  const unsigned s = low;
  uint64_t begin = 0;
  uint32_t length = 0;
  cp::tile_range(spans.size[s], spans.head[s], spans.tile_bytes, blockIdx.x - spans.first_tile[s], &begin, &length);
  __syncthreads();

  uint32_t share = cp::lane_share(spans.data[s] + begin, length, threadIdx.x, bytes, row_shift,
                                  kDeviceTables.zero_power, LoadVector{});
  share = warp_xor(share);
  if (threadIdx.x % 32 == 0) warp_values[threadIdx.x / 32] = share;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t tile = 0;
    for (unsigned w = 0; w < cp::kLanes / 32; ++w) tile ^= warp_values[w];
    const uint64_t after = spans.bytes_after[s] + (spans.size[s] - begin - length);
    values[blockIdx.x] = cp::append_zeros(tile, after, kDeviceTables.zero_power);
  }
}

// result = ~(start ^ XOR of the tile values); start = ~crc moved past the
// whole message (computed on the host).
__global__ void __launch_bounds__(kFinishThreads) finish(const uint32_t* values, size_t count, uint32_t start,
                                                        uint32_t* result) {
  __shared__ uint32_t warp_values[kFinishThreads / 32];
  uint32_t x = 0;
  for (size_t i = threadIdx.x; i < count; i += kFinishThreads) x ^= values[i];
  x = warp_xor(x);
  if (threadIdx.x % 32 == 0) warp_values[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t all = start;
    for (unsigned w = 0; w < kFinishThreads / 32; ++w) all ^= warp_values[w];
    *result = ~all;
  }
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t crc32c_scratch_bytes(size_t total_bytes, size_t span_count) {
  // One value per tile: a span of n bytes has at most 1 + floor(n / tile) + 1
  // tiles (head, whole tiles, a partial one), floors sum to at most the floor
  // of the sum, and total / tile_bytes_for(total) <= cp::max_whole_tiles(total),
  // which never falls as the total grows.
  const size_t tiles = cp::max_whole_tiles(total_bytes) + 2 * span_count;
  return round_up(tiles * sizeof(uint32_t), 256);
}

cudaError_t crc32c_spans(const DeviceSpan* spans, size_t count, uint32_t* result, void* scratch,
                         cudaStream_t stream, uint32_t crc) {
  if (result == nullptr || (count > 0 && spans == nullptr)) return cudaErrorInvalidValue;
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (spans[i].size > 0 && spans[i].data == nullptr) return cudaErrorInvalidValue;
    total += spans[i].size;
  }
  if (total > 0 && scratch == nullptr) return cudaErrorInvalidValue;

  uint32_t* values = static_cast<uint32_t*>(scratch);
  size_t tiles_done = 0;
  LaunchSpans launch{};
  launch.tile_bytes = cp::tile_bytes_for(total);
  auto launch_tiles = [&]() -> cudaError_t {
    if (launch.count == 0) return cudaSuccess;
    const uint32_t tiles = launch.first_tile[launch.count];
    tile_values<<<tiles, cp::kLanes, 0, stream>>>(launch, values + tiles_done);
    tiles_done += tiles;
    launch.count = 0;
    return cudaGetLastError();
  };

  uint64_t before = 0;  // bytes of the message before span i
  for (size_t i = 0; i < count; ++i) {
    const uint64_t size = spans[i].size;
    if (size == 0) continue;
    const auto* data = static_cast<const uint8_t*>(spans[i].data);
    const uint32_t head = cp::head_bytes(reinterpret_cast<uintptr_t>(data), size);
    const uint64_t tiles = cp::tile_count(size, head, launch.tile_bytes);
    if (tiles > kMaxTilesPerLaunch) return cudaErrorInvalidValue;
    if (launch.count == kSpansPerLaunch || launch.first_tile[launch.count] + tiles > kMaxTilesPerLaunch) {
      const cudaError_t status = launch_tiles();
      if (status != cudaSuccess) return status;
    }
    const unsigned k = launch.count;
    launch.data[k] = data;
    launch.size[k] = size;
    launch.bytes_after[k] = total - before - size;
    launch.head[k] = head;
    launch.first_tile[k + 1] = launch.first_tile[k] + static_cast<uint32_t>(tiles);
    launch.count = k + 1;
    before += size;
  }
  const cudaError_t status = launch_tiles();
  if (status != cudaSuccess) return status;

  const uint32_t start = cp::append_zeros(~crc, total, kHostTables.zero_power);
  finish<<<1, kFinishThreads, 0, stream>>>(values, tiles_done, start, result);
  return cudaGetLastError();
}

cudaError_t crc32c(const void* data, size_t size, uint32_t* result, void* scratch, cudaStream_t stream,
                   uint32_t crc) {
  const DeviceSpan span{data, size};
  return crc32c_spans(&span, 1, result, scratch, stream, crc);
}

}  // namespace fz::engine::cuda
