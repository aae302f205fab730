// CUDA fill-mask stage (stream format: fillmask.hpp, interface: fillmask_cuda.hpp).
//
// The value written for element i is x[L_i], where L_i is the index of the
// last non-fill element at or before i; where there is none, the first
// non-fill element of the chunk; where there is no non-fill element at all,
// 0. L is an inclusive max-scan of (i if x_i is not fill, else -1): max is
// exact and order-free, so the bytes never depend on the launch shape.
// Three kernels: (1) per tile of kTileElements, the last and first non-fill
// index; (2) one block scans the tiles: the incoming L of every tile and the
// chunk's first non-fill index; (3) per tile, a block scan seeded with the
// incoming L gives every L_i, and the tile's values and mask bytes are written.
// Decoding picks, per element, the fill bits or the stored value by its mask
// bit; the one data-dependent check (padding bits) runs on the device.
#include "fillmask/fillmask_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "common/words_cuda.cuh"

namespace fz::fillmask::cuda {
namespace {

using Index = long long;  // element indices, -1 for "none"

constexpr unsigned kThreads = 256;
constexpr unsigned kItems = 16;  // per thread: two whole mask bytes
constexpr size_t kTileElements = size_t{kThreads} * kItems;
constexpr unsigned kCarryThreads = 1024;
constexpr size_t kAlign = 256;

struct Max {
  __device__ Index operator()(Index a, Index b) const { return a > b ? a : b; }
};
struct Min {
  __device__ Index operator()(Index a, Index b) const { return a < b ? a : b; }
};

size_t tiles_of(size_t n) { return (n + kTileElements - 1) / kTileElements; }
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Scratch = tile_last[tiles] | tile_first[tiles] | carry_in[tiles] | first_any.
struct ScratchLayout {
  Index* tile_last;
  Index* tile_first;
  Index* carry_in;
  Index* first_any;
};

ScratchLayout layout(void* scratch, size_t tiles) {
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t array = aligned(tiles * sizeof(Index));
  return {reinterpret_cast<Index*>(base), reinterpret_cast<Index*>(base + array),
          reinterpret_cast<Index*>(base + 2 * array), reinterpret_cast<Index*>(base + 3 * array)};
}

// (1) The last and first non-fill index of each tile (-1 and n when none).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    summarize_tiles(const uint8_t* in, size_t n, T fill, Index* tile_last, Index* tile_first) {
  using Reduce = cub::BlockReduce<Index, kThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const size_t begin = static_cast<size_t>(blockIdx.x) * kTileElements + threadIdx.x * kItems;
  Index last = -1, first = static_cast<Index>(n);
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const size_t i = begin + j;
    if (i < n && cuda_detail::load_word<T>(in + i * sizeof(T)) != fill) {
      last = static_cast<Index>(i);
      if (first == static_cast<Index>(n)) first = static_cast<Index>(i);
    }
  }
  last = Reduce(reduce_storage).Reduce(last, Max());
  __syncthreads();
  first = Reduce(reduce_storage).Reduce(first, Min());
  if (threadIdx.x == 0) {
    tile_last[blockIdx.x] = last;
    tile_first[blockIdx.x] = first;
  }
}

// Carries the running maximum from one pass of the carry scan to the next.
struct RunningMax {
  Index running;
  __device__ Index operator()(Index block_aggregate) {
    const Index before = running;
    running = block_aggregate > running ? block_aggregate : running;
    return before;
  }
};

// (2) carry_in[t] = max(tile_last[0 .. t-1], -1); first_any = min(tile_first).
__global__ void __launch_bounds__(kCarryThreads)
    scan_tiles(const Index* tile_last, const Index* tile_first, size_t tiles, size_t n, Index* carry_in,
               Index* first_any) {
  using Scan = cub::BlockScan<Index, kCarryThreads>;
  using Reduce = cub::BlockReduce<Index, kCarryThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ typename Reduce::TempStorage reduce_storage;
  RunningMax prefix{-1};
  Index first = static_cast<Index>(n);
  for (size_t base = 0; base < tiles; base += kCarryThreads) {
    const size_t t = base + threadIdx.x;
    const Index last = t < tiles ? tile_last[t] : Index{-1};
    if (t < tiles && tile_first[t] < first) first = tile_first[t];
    Index before;
    Scan(scan_storage).ExclusiveScan(last, before, Max(), prefix);
    __syncthreads();  // scan_storage is reused by the next pass
    if (t < tiles) carry_in[t] = before;
  }
  first = Reduce(reduce_storage).Reduce(first, Min());
  if (threadIdx.x == 0) *first_any = first;
}

// (3) Every L_i of a tile, then its values and mask bytes.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    write_tiles(const uint8_t* in, size_t n, T fill, const Index* carry_in, const Index* first_any, uint8_t* values,
                uint8_t* mask) {
  using Scan = cub::BlockScan<Index, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  const size_t begin = static_cast<size_t>(blockIdx.x) * kTileElements + threadIdx.x * kItems;
  T x[kItems];
  unsigned fill_bits = 0;  // bit j: element begin + j is a fill element
  Index last = -1;
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const size_t i = begin + j;
    x[j] = 0;
    if (i < n) {
      x[j] = cuda_detail::load_word<T>(in + i * sizeof(T));
      if (x[j] == fill) fill_bits |= 1u << j;
      else last = static_cast<Index>(i);
    }
  }
  Index before;
  Scan(scan_storage).ExclusiveScan(last, before, carry_in[blockIdx.x], Max());
  const Index first = *first_any;
  Index current = before;
#pragma unroll
  for (unsigned j = 0; j < kItems; ++j) {
    const size_t i = begin + j;
    if (i >= n) break;
    T value = x[j];
    if (fill_bits & (1u << j)) {
      const Index source = current >= 0 ? current : first;
      value = source < static_cast<Index>(n) ? cuda_detail::load_word<T>(in + static_cast<size_t>(source) * sizeof(T))
                                             : T(0);
    } else {
      current = static_cast<Index>(i);
    }
    cuda_detail::store_word<T>(values + i * sizeof(T), value);
  }
  // Mask bits past n stay 0 (fill_bits only has bits of elements below n).
  if (begin < n) mask[begin / 8] = static_cast<uint8_t>(fill_bits);
  if (begin + 8 < n) mask[begin / 8 + 1] = static_cast<uint8_t>(fill_bits >> 8);
}

template <typename T>
void launch_encode(const uint8_t* in, size_t n, T fill, uint8_t* values, uint8_t* mask, void* scratch,
                   cudaStream_t stream) {
  const size_t tiles = tiles_of(n);
  const ScratchLayout s = layout(scratch, tiles);
  summarize_tiles<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, n, fill, s.tile_last, s.tile_first);
  scan_tiles<<<1, kCarryThreads, 0, stream>>>(s.tile_last, s.tile_first, tiles, n, s.carry_in, s.first_any);
  write_tiles<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, n, fill, s.carry_in, s.first_any, values,
                                                                        mask);
}

template <typename T>
__global__ void restore_fill(const uint8_t* values, const uint8_t* mask, size_t n, T fill, uint8_t* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const bool is_fill = (mask[i / 8] >> (i % 8)) & 1u;
    cuda_detail::store_word<T>(out + i * sizeof(T), is_fill ? fill : cuda_detail::load_word<T>(values + i * sizeof(T)));
  }
}

// The host's size checks and, when the mask has the right size, its padding bits.
__global__ void write_status(uint32_t host_status, const uint8_t* mask, size_t mask_size, unsigned used_bits,
                             uint32_t* status) {
  uint32_t s = host_status;
  if (used_bits != 0 && (mask[mask_size - 1] >> used_bits) != 0) s |= kPaddingBitsSet;
  *status = s;
}

template <typename T>
void launch_decode(const uint8_t* values, const uint8_t* mask, size_t n, T fill, uint8_t* out, cudaStream_t stream) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;  // grid-stride beyond this
  restore_fill<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(values, mask, n, fill, out);
}

bool valid_parameters(unsigned width, uint64_t fill) {
  if (width != 1 && width != 2 && width != 4 && width != 8) return false;
  return width == 8 || (fill >> (8 * width)) == 0;
}

}  // namespace

size_t mask_bytes(size_t elements) { return elements / 8 + (elements % 8 != 0 ? 1 : 0); }

size_t encode_scratch_bytes(size_t in_size, unsigned width) {
  const size_t tiles = width == 0 ? 0 : tiles_of(in_size / width);
  return 3 * aligned(tiles * sizeof(Index)) + sizeof(Index);
}

cudaError_t encode(const uint8_t* in, size_t in_size, unsigned width, uint64_t fill, uint8_t* values, uint8_t* mask,
                   void* scratch, cudaStream_t stream) {
  if (!valid_parameters(width, fill) || in_size % width != 0) return cudaErrorInvalidValue;
  const size_t n = in_size / width;
  if (n == 0) return cudaSuccess;
  switch (width) {
    case 1: launch_encode<uint8_t>(in, n, static_cast<uint8_t>(fill), values, mask, scratch, stream); break;
    case 2: launch_encode<uint16_t>(in, n, static_cast<uint16_t>(fill), values, mask, scratch, stream); break;
    case 4: launch_encode<uint32_t>(in, n, static_cast<uint32_t>(fill), values, mask, scratch, stream); break;
    default: launch_encode<uint64_t>(in, n, fill, values, mask, scratch, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t decode(const uint8_t* values, size_t values_size, const uint8_t* mask, size_t mask_size, unsigned width,
                   uint64_t fill, uint8_t* out, size_t max_out, uint32_t* status, cudaStream_t stream) {
  if (!valid_parameters(width, fill)) return cudaErrorInvalidValue;
  const size_t n = values_size / width;
  uint32_t host_status = 0;
  if (values_size % width != 0) host_status |= kValuesNotWholeElements;
  if (values_size > max_out) host_status |= kDecodedSizeTooLarge;
  if (mask_size != mask_bytes(n)) host_status |= kMaskSizeMismatch;
  const unsigned used_bits = host_status & kMaskSizeMismatch ? 0u : static_cast<unsigned>(n % 8);
  write_status<<<1, 1, 0, stream>>>(host_status, mask, mask_size, used_bits, status);
  if (host_status == 0 && n > 0) {
    switch (width) {
      case 1: launch_decode<uint8_t>(values, mask, n, static_cast<uint8_t>(fill), out, stream); break;
      case 2: launch_decode<uint16_t>(values, mask, n, static_cast<uint16_t>(fill), out, stream); break;
      case 4: launch_decode<uint32_t>(values, mask, n, static_cast<uint32_t>(fill), out, stream); break;
      default: launch_decode<uint64_t>(values, mask, n, fill, out, stream); break;
    }
  }
  return cudaGetLastError();
}

}  // namespace fz::fillmask::cuda
