// Kernels of the SPLINE CUDA encoder (dispatch: encode_cuda.cu; format:
// spline.hpp). Internal to encode_cuda.cu.
//   tune_level      block (sample j, flags f): the sample tile rebuilt from its
//                   anchors through the coarser levels with their chosen flags,
//                   then level l with f; the integer sum of its costs is added
//                   to totals[l][f] (integer atomics: any order, the same sum);
//   choose_flags    one thread: the flags with the smallest total, ties to the
//                   lowest (tune_cpu.cpp's rule);
//   encode_tiles    one block per tile: the codes of the points it owns;
//   count_outliers  per span of kSpanElements elements: how many are outliers
//                   (code 0, not an anchor);
//   write_outliers  each outlier's index and value at its span's offset (an
//                   exclusive scan of the counts) plus its rank in the span, so
//                   the list is in index order whatever the schedule;
//   write_header    rank, L, radius, per level flags and step, K, the size;
//   write_anchors   one thread per anchor, in anchor-grid order.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

constexpr unsigned kSpanThreads = 256;
constexpr unsigned kSpanPerThread = 8;
constexpr size_t kSpanElements = size_t{kSpanThreads} * kSpanPerThread;

// What every encoder kernel knows: the grid, the input, the per-level
// quantizers (steps and inverses computed on the host, as the CPU does).
template <typename T>
struct EncodeParams {
  Grid grid;
  const uint8_t* input;
  uint32_t radius;
  unsigned code_bytes;
  LevelQuantizer<T> quantizers[kMaxLevels];
};

// tune_level's blocks: gridDim.x samples, gridDim.y = kFlagChoices.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    tune_level(EncodeParams<T> job, unsigned level, const uint8_t* flags, unsigned long long* totals) {
  __shared__ unsigned long long block_cost;
  T* buffer = tile_buffer<T>();
  const Grid& grid = job.grid;
  const TileFrame f(grid, sample_tile(blockIdx.x, grid.tile_count));
  if (threadIdx.x == 0) block_cost = 0;
  load_corners(grid, f, job.input, buffer);
  auto apply = [&](unsigned l, uint8_t choice, bool count) {
    const LevelQuantizer<T>& lq = job.quantizers[l];
    unsigned long long cost = 0;
    run_level_block(grid, f, buffer, l, choice, [&](T* at, T p, size_t z, size_t y, size_t x) {
      int32_t q;
      const uint32_t code = quantize(load_value<T>(job.input, global_index(grid, f, z, y, x)), p, lq, *at, q);
      cost += code == 0 ? job.radius : static_cast<uint32_t>(q < 0 ? -q : q);
    });
    if (count && cost != 0) atomicAdd(&block_cost, cost);
  };
  for (unsigned l = level_count(grid.rank) - 1; l > level; --l) apply(l, flags[l], false);
  apply(level, static_cast<uint8_t>(blockIdx.y), true);
  __syncthreads();
  if (threadIdx.x == 0 && block_cost != 0) atomicAdd(&totals[level * kFlagChoices + blockIdx.y], block_cost);
}

__global__ void choose_flags(unsigned level, const unsigned long long* totals, uint8_t* flags) {
  unsigned long long best = ~0ull;
  for (unsigned choice = 0; choice < kFlagChoices; ++choice) {
    const unsigned long long total = totals[level * kFlagChoices + choice];
    if (total < best) {
      best = total;
      flags[level] = static_cast<uint8_t>(choice);
    }
  }
}

// One block per tile: anchors, then the levels coarsest to finest; codes of
// the owned points (anchors keep the 0 the caller cleared them to).
template <typename T>
__global__ void __launch_bounds__(kTileThreads) encode_tiles(EncodeParams<T> job, const uint8_t* flags, uint8_t* codes) {
  T* buffer = tile_buffer<T>();
  const Grid& grid = job.grid;
  const TileFrame f(grid, blockIdx.x);
  load_corners(grid, f, job.input, buffer);
  for (unsigned level = level_count(grid.rank); level-- > 0;) {
    const LevelQuantizer<T>& lq = job.quantizers[level];
    run_level_block(grid, f, buffer, level, flags[level], [&](T* at, T p, size_t z, size_t y, size_t x) {
      const size_t g = global_index(grid, f, z, y, x);
      int32_t q;
      const uint32_t code = quantize(load_value<T>(job.input, g), p, lq, *at, q);
      if (!owns(grid, z, y, x)) return;
      if (job.code_bytes == 1) codes[g] = static_cast<uint8_t>(code);
      else store_word<uint16_t>(codes + 2 * g, static_cast<uint16_t>(code));
    });
  }
}

// Thread t of span b holds elements b * kSpanElements + t * kSpanPerThread
// + 0 .. kSpanPerThread-1: consecutive, so ranks in thread order are index order.
__device__ __forceinline__ unsigned thread_outliers(const Grid& grid, const uint8_t* codes, unsigned code_bytes,
                                                   size_t first, bool* is_outlier) {
  unsigned count = 0;
#pragma unroll
  for (unsigned k = 0; k < kSpanPerThread; ++k) {
    const size_t g = first + k;
    is_outlier[k] = g < grid.elements && code_at(codes, code_bytes, g) == 0 && !is_anchor_index(grid, g);
    count += is_outlier[k];
  }
  return count;
}

__global__ void __launch_bounds__(kSpanThreads)
    count_outliers(Grid grid, const uint8_t* codes, unsigned code_bytes, uint64_t* counts) {
  using Reduce = cub::BlockReduce<unsigned, kSpanThreads>;
  __shared__ typename Reduce::TempStorage temp;
  bool is_outlier[kSpanPerThread];
  const size_t first = static_cast<size_t>(blockIdx.x) * kSpanElements + size_t{threadIdx.x} * kSpanPerThread;
  const unsigned total = Reduce(temp).Sum(thread_outliers(grid, codes, code_bytes, first, is_outlier));
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// K: the spans' offsets and counts end at the outlier count.
__device__ __forceinline__ uint64_t outlier_total(const uint64_t* counts, const uint64_t* offsets, size_t spans) {
  return spans == 0 ? 0 : offsets[spans - 1] + counts[spans - 1];
}

template <typename T>
__global__ void __launch_bounds__(kSpanThreads)
    write_outliers(Grid grid, const uint8_t* input, const uint8_t* codes, unsigned code_bytes,
                   const uint64_t* counts, const uint64_t* offsets, size_t spans, size_t indices_at, uint8_t* side) {
  using Scan = cub::BlockScan<unsigned, kSpanThreads>;
  __shared__ typename Scan::TempStorage temp;
  if (counts[blockIdx.x] == 0) return;  // uniform over the block
  bool is_outlier[kSpanPerThread];
  const size_t first = static_cast<size_t>(blockIdx.x) * kSpanElements + size_t{threadIdx.x} * kSpanPerThread;
  unsigned rank = 0;
  Scan(temp).ExclusiveSum(thread_outliers(grid, codes, code_bytes, first, is_outlier), rank);
  const size_t index_width = index_width_of(grid.elements);
  const uint64_t outliers = outlier_total(counts, offsets, spans);
  uint8_t* values = side + indices_at + outliers * index_width;
  uint64_t k = offsets[blockIdx.x] + rank;
#pragma unroll
  for (unsigned j = 0; j < kSpanPerThread; ++j) {
    if (!is_outlier[j]) continue;
    const size_t g = first + j;
    if (index_width == 4) store_word<uint32_t>(side + indices_at + 4 * k, static_cast<uint32_t>(g));
    else store_word<uint64_t>(side + indices_at + 8 * k, static_cast<uint64_t>(g));
    copy_value<T>(input + g * sizeof(T), values + k * sizeof(T));
    ++k;
  }
}

// Everything of the side stream but the anchors and the outliers; one thread.
template <typename T>
__global__ void write_header(EncodeParams<T> job, const uint8_t* flags, const uint64_t* counts,
                             const uint64_t* offsets, size_t spans, SideLayout layout, uint8_t* side,
                             uint64_t* side_size) {
  const unsigned levels = level_count(job.grid.rank);
  side[0] = static_cast<uint8_t>(job.grid.rank);
  side[1] = static_cast<uint8_t>(levels);
  store_word<uint32_t>(side + 2, job.radius);
  for (unsigned k = 0; k < levels; ++k) {
    const unsigned level = levels - 1 - k;  // stored coarsest first
    uint8_t* at = side + layout.levels_at + k * layout.level_bytes;
    at[0] = flags[level];
    Bits<T> bits;
    memcpy(&bits, &job.quantizers[level].step, sizeof(T));
    store_word<Bits<T>>(at + 1, bits);
  }
  const uint64_t outliers = outlier_total(counts, offsets, spans);
  store_word<uint64_t>(side + layout.count_at, outliers);
  *side_size = layout.values_at(outliers, index_width_of(job.grid.elements)) + outliers * sizeof(T);
}

template <typename T>
__global__ void write_anchors(Grid grid, const uint8_t* input, size_t anchors_at, uint8_t* side) {
  const size_t a = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= grid.tile_count) return;
  copy_value<T>(input + anchor_index(grid, a) * sizeof(T), side + anchors_at + a * sizeof(T));
}

}  // namespace fz::spline::cuda::detail
