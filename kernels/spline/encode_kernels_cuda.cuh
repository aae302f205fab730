// Kernels of the SPLINE CUDA encoder (dispatch: encode_cuda.cu; format:
// spline.hpp). Internal to encode_cuda.cu.
//   tune_level      one block per sample tile: the tile's points loaded once,
//                   rebuilt from its anchors through the coarser levels with
//                   their chosen flags, then level l run once per flag choice
//                   on the same buffer (a level's run writes only its own
//                   points, each before anything reads it, so the runs need no
//                   restore between them); each choice's integer sum of costs
//                   is added to totals[l][choice] (integer atomics: any order,
//                   the same sum);
//   choose_flags    one thread: the flags with the smallest total, ties to the
//                   lowest (tune_cpu.cpp's rule);
//   encode_tiles    one block per tile: the tile's points loaded once into
//                   shared memory, the levels run there, the owned points'
//                   codes staged in shared memory and written to their places
//                   in the three group streams (groups_cuda.cuh's row
//                   places); outliers (code 0 at a point
//                   that is not an anchor) set their bit in an element-order
//                   bitmap;
//   count_outliers  per span of kSpanElements elements: the bitmap's bits;
//   side_length     the side stream's length, from the outlier count (the
//                   caller may read it back and size the stream's room);
//   write_outliers  each outlier's index and value at its span's offset (an
//                   exclusive scan of the counts) plus its rank in the span, so
//                   the list is in index order whatever the schedule;
//   write_header    rank, L, radius, per level flags and step, K;
// (these three write nothing when the length exceeds the stream's room)
//   write_anchors   one thread per stored anchor (all, or the root alone
//                   with coarse levels), in anchor-grid order.
// With coarse levels encode_coarse (coarse_cuda.cuh) runs first, one block:
// the anchors' values and codes, which tune_level and encode_tiles read.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "spline/coarse_cuda.cuh"
#include "spline/groups_cuda.cuh"
#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

constexpr unsigned kSpanThreads = 256;
constexpr unsigned kSpanPerThread = 8;
constexpr size_t kSpanElements = size_t{kSpanThreads} * kSpanPerThread;
constexpr size_t kSpanWords = kSpanElements / 32;  // of the outlier bitmap

// What every encoder kernel knows: the grid, the input, the per-level
// quantizers (steps and inverses computed on the host, as the CPU does).
template <typename T>
struct EncodeParams {
  Grid grid;
  const uint8_t* input;
  const uint8_t* fill_mask;  // or nullptr (spline.hpp, fill elements)
  uint32_t radius;
  unsigned code_bytes;
  LevelQuantizer<T> quantizers[kMaxLevels];
  // With coarse levels (coarse_cuda.cuh): the anchors' values and codes;
  // nullptr without (the corners are the input's, their codes 0).
  const T* anchors = nullptr;
  const uint16_t* anchor_codes = nullptr;
};

// The coarse levels' steps for write_header (C of them, by m).
template <typename T>
struct CoarseSteps {
  unsigned levels = 0;
  T steps[kMaxDeviceCoarseLevels];
};

// rules::quantize, then rules::code_fill when the point is a fill element
// (read from the chunk's mask: one byte load per point, only for chunks
// with a fill mask).
template <typename T>
__device__ __forceinline__ uint32_t quantize_point(const EncodeParams<T>& job, const TileFrame& f, T x, T p,
                                                   const LevelQuantizer<T>& lq, T& value, int32_t& q, unsigned z,
                                                   unsigned y, unsigned w) {
  uint32_t code = quantize(x, p, lq, value, q);
  if (job.fill_mask != nullptr && is_fill(job.fill_mask, global_index(job.grid, f, z, y, w)))
    code_fill(p, lq, value, code, q);
  return code;
}

// Dynamic shared memory of the kernels: the working buffer, and
//   tune_level:   a second buffer with the tile's input values;
//   encode_tiles: the owned points' codes (u16, B^rank).
template <typename T>
inline size_t tune_shared_bytes(unsigned rank) {
  return 2 * tile_buffer_size(rank) * sizeof(T);
}
inline size_t owned_points(unsigned rank) { return rank == 3 ? 16 * 16 * 16 : rank == 2 ? 64 * 64 : 256; }
template <typename T>
inline size_t encode_shared_bytes(unsigned rank) {
  return tile_buffer_size(rank) * sizeof(T) + owned_points(rank) * sizeof(uint16_t);
}

// One block per sample tile (gridDim.x samples).
template <typename T>
__global__ void __launch_bounds__(kTileThreads, kTuneBlocks<T>)
    tune_level(const __grid_constant__ EncodeParams<T> job, unsigned level, const uint8_t* flags, unsigned long long* totals) {
  __shared__ unsigned long long block_cost[kFlagChoices];
  const Grid& grid = job.grid;
  T* buffer = tile_buffer<T>();
  T* input = buffer + tile_buffer_size(grid.rank);
  const TileFrame f(grid, sample_tile(blockIdx.x, grid.tile_count));
  const TileGeometry t = geometry_of(grid, f);
  if (threadIdx.x < kFlagChoices) block_cost[threadIdx.x] = 0;
  load_region(grid, f, t, job.input, buffer, input, job.anchors);
  __syncthreads();
  {
    const LevelPlans coarser(t, [&](unsigned l) { return l > level ? flags[l] : uint8_t{0}; });
    for (unsigned l = level_count(grid.rank) - 1; l > level; --l) {
      const LevelQuantizer<T>& lq = job.quantizers[l];
      walk_level(t, buffer, l, flags[l], coarser, [&](unsigned slot, T p, unsigned z, unsigned y, unsigned x) {
        int32_t q;
        quantize_point(job, f, input[slot], p, lq, buffer[slot], q, z, y, x);
      });
    }
  }
  const LevelQuantizer<T>& lq = job.quantizers[level];
  const uint32_t outlier_cost = job.radius;
#pragma unroll 1
  for (unsigned choice = 0; choice < kFlagChoices; ++choice) {
    uint32_t cost = 0;  // at most 17 points a thread a pass-set, each below 2^15: no overflow, per warp either
    const uint8_t tried = static_cast<uint8_t>(choice);
    const LevelPlans plans(t, [&](unsigned) { return tried; });  // only `level`'s passes are walked
    walk_level(t, buffer, level, tried, plans, [&](unsigned slot, T p, unsigned z, unsigned y, unsigned x) {
      int32_t q;
      const uint32_t code = quantize_point(job, f, input[slot], p, lq, buffer[slot], q, z, y, x);
      cost += code == 0 ? outlier_cost : static_cast<uint32_t>(q < 0 ? -q : q);
    });
    const uint32_t warp_cost = warp_sum(cost);
    if ((threadIdx.x & 31u) == 0 && warp_cost != 0) atomicAdd(&block_cost[choice], static_cast<unsigned long long>(warp_cost));
  }
  __syncthreads();
  if (threadIdx.x < kFlagChoices && block_cost[threadIdx.x] != 0)
    atomicAdd(&totals[level * kFlagChoices + threadIdx.x], block_cost[threadIdx.x]);
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

// Where encode_tiles writes: the group streams in the stored form.
struct CodeOut {
  GroupStreams streams;
  CodeGroups groups;
  unsigned form;  // a CodeForm's value
  uint32_t* outliers;  // bitmap, element order, cleared by the caller
};

// One block per tile: anchors, then the levels coarsest to finest; codes of
// the owned points (the tile's own anchor, never visited, has code 0, or its
// coarse levels' code; a coarse outlier's bit is encode_coarse's).
template <typename T>
__global__ void __launch_bounds__(kTileThreads, kTileBlocks<T>)
    encode_tiles(const __grid_constant__ EncodeParams<T> job, const uint8_t* flags, const __grid_constant__ CodeOut out) {
  const Grid& grid = job.grid;
  T* buffer = tile_buffer<T>();
  auto* codes = reinterpret_cast<uint16_t*>(buffer + tile_buffer_size(grid.rank));
  const TileFrame f(grid, blockIdx.x);
  const TileGeometry t = geometry_of(grid, f);
  const LevelPlans plans(t, [&](unsigned level) { return flags[level]; });
  load_region(grid, f, t, job.input, buffer, static_cast<T*>(nullptr), job.anchors);
  if (threadIdx.x == 0) codes[0] = job.anchor_codes != nullptr ? job.anchor_codes[blockIdx.x] : uint16_t{0};
  __syncthreads();
  const unsigned B = t.tile;
  for (unsigned level = level_count(grid.rank); level-- > 0;) {
    const LevelQuantizer<T>& lq = job.quantizers[level];
    walk_level(t, buffer, level, flags[level], plans,
                       [&](unsigned slot, T p, unsigned z, unsigned y, unsigned x) {
      int32_t q;
      const uint32_t code = quantize_point(job, f, buffer[slot], p, lq, buffer[slot], q, z, y, x);
      if (z < B && y < B && x < B) {
        codes[(z * B + y) * B + x] = static_cast<uint16_t>(code);
        if (code == 0) {
          const size_t g = global_index(grid, f, z, y, x);
          atomicOr(out.outliers + (g >> 5), 1u << (g & 31));
        }
      }
    });
  }
  // walk_level's last barrier: every code is staged, and the working buffer
  // is free for the rows' places.
  auto* rows = reinterpret_cast<RowPlaces*>(buffer);
  fill_row_places(grid, out.groups, f, t, rows);
  __syncthreads();
  const unsigned code_bytes = job.code_bytes;
  const uint32_t radius = job.radius;
  for_each_owned_point(t, [&](unsigned z, unsigned y, unsigned x, unsigned i) {
    uint8_t* at = row_code_address(t, rows, out.streams, code_bytes, z, y, x);
    store_code_word(at, code_bytes, stored_code(codes[i], radius, out.form, code_bytes));
  });
}

// Thread t of span b holds elements b * kSpanElements + t * kSpanPerThread
// + 0 .. kSpanPerThread-1: consecutive, so ranks in thread order are index
// order. Their bits, from the bitmap (cleared past N).
__device__ __forceinline__ unsigned thread_outliers(const uint32_t* bitmap, size_t first) {
  static_assert(kSpanPerThread == 8, "a thread's elements are one byte of the bitmap");
  return (bitmap[first >> 5] >> (first & 31)) & 0xFFu;
}

__global__ void __launch_bounds__(kSpanThreads) count_outliers(const uint32_t* bitmap, uint64_t* counts) {
  using Reduce = cub::BlockReduce<unsigned, kSpanThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const size_t first = static_cast<size_t>(blockIdx.x) * kSpanElements + size_t{threadIdx.x} * kSpanPerThread;
  const unsigned total = Reduce(temp).Sum(__popc(thread_outliers(bitmap, first)));
  if (threadIdx.x == 0) counts[blockIdx.x] = total;
}

// K: the spans' offsets and counts end at the outlier count.
__device__ __forceinline__ uint64_t outlier_total(const uint64_t* counts, const uint64_t* offsets, size_t spans) {
  return spans == 0 ? 0 : offsets[spans - 1] + counts[spans - 1];
}

template <typename T>
__global__ void __launch_bounds__(kSpanThreads)
    write_outliers(Grid grid, const uint8_t* input, const uint32_t* bitmap, const uint64_t* counts,
                   const uint64_t* offsets, size_t spans, size_t indices_at, uint8_t* side, const uint64_t* side_size,
                   size_t capacity) {
  using Scan = cub::BlockScan<unsigned, kSpanThreads>;
  __shared__ typename Scan::TempStorage temp;
  if (counts[blockIdx.x] == 0 || *side_size > capacity) return;  // uniform over the block
  const size_t first = static_cast<size_t>(blockIdx.x) * kSpanElements + size_t{threadIdx.x} * kSpanPerThread;
  unsigned bits = thread_outliers(bitmap, first);
  unsigned rank = 0;
  Scan(temp).ExclusiveSum(static_cast<unsigned>(__popc(bits)), rank);
  const size_t index_width = index_width_of(grid.elements);
  const uint64_t outliers = outlier_total(counts, offsets, spans);
  uint8_t* values = side + indices_at + outliers * index_width;
  uint64_t k = offsets[blockIdx.x] + rank;
  for (; bits != 0; bits &= bits - 1, ++k) {
    const size_t g = first + static_cast<unsigned>(__ffs(bits) - 1);
    if (index_width == 4) store_word<uint32_t>(side + indices_at + 4 * k, static_cast<uint32_t>(g));
    else store_word<uint64_t>(side + indices_at + 8 * k, static_cast<uint64_t>(g));
    copy_value<T>(input + g * sizeof(T), values + k * sizeof(T));
  }
}

// Everything of the side stream but the anchors and the outliers; one
// thread. The coarse levels (coarse_steps[m], level L + m; none without
// coarse levels) with flags 0 above the tile levels.
template <typename T>
__global__ void write_header(const __grid_constant__ EncodeParams<T> job, const uint8_t* flags,
                             const uint64_t* counts, const uint64_t* offsets, size_t spans, SideLayout layout,
                             const __grid_constant__ CoarseSteps<T> coarse_steps, uint8_t* side,
                             const uint64_t* side_size, size_t capacity) {
  if (*side_size > capacity) return;  // not written: the length says why
  const unsigned tile_levels = level_count(job.grid.rank);
  const unsigned levels = tile_levels + coarse_steps.levels;
  side[0] = static_cast<uint8_t>(job.grid.rank);
  side[1] = static_cast<uint8_t>(levels);
  store_word<uint32_t>(side + 2, job.radius);
  for (unsigned k = 0; k < levels; ++k) {
    const unsigned level = levels - 1 - k;  // stored coarsest first
    uint8_t* at = side + layout.levels_at + k * layout.level_bytes;
    at[0] = level < tile_levels ? flags[level] : uint8_t{0};
    const T step = level < tile_levels ? job.quantizers[level].step : coarse_steps.steps[level - tile_levels];
    Bits<T> bits;
    memcpy(&bits, &step, sizeof(T));
    store_word<Bits<T>>(at + 1, bits);
  }
  store_word<uint64_t>(side + layout.count_at, outlier_total(counts, offsets, spans));
}

// The side stream's length, from the outlier count; one thread.
template <typename T>
__global__ void side_length(Grid grid, const uint64_t* counts, const uint64_t* offsets, size_t spans,
                            SideLayout layout, uint64_t* side_size) {
  const uint64_t outliers = outlier_total(counts, offsets, spans);
  *side_size = layout.values_at(outliers, index_width_of(grid.elements)) + outliers * sizeof(T);
}

// The first `count` anchors: all of them, or the root alone (coarse levels).
template <typename T>
__global__ void write_anchors(Grid grid, const uint8_t* input, size_t anchors_at, size_t count, uint8_t* side,
                              const uint64_t* side_size, size_t capacity) {
  const size_t a = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= count || *side_size > capacity) return;
  copy_value<T>(input + anchor_index(grid, a) * sizeof(T), side + anchors_at + a * sizeof(T));
}

}  // namespace fz::spline::cuda::detail
