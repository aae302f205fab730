// The spline stage's coarse levels on the GPU (spline.hpp, "Coarse levels";
// the CPU's: coarse_cpu.cpp): the anchor grid predicted and quantized level
// by level from the root, in one block of kCoarseThreads threads, before the
// tiles (encode: before the tuning too; decode: after the scatter). The
// points of one pass never read each other (spline_coarse_rules.hpp), so the
// block strides over them in any order and gets the CPU's values; a barrier
// separates the passes. The anchor grid has N / 4096 points (3-D): one block
// is enough for the chunks the engine makes; a very large grid (a chunk of
// several GiB) would want a launch per pass. Internal to encode_cuda.cu and
// decode_cuda.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spline/groups_cuda.cuh"
#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

constexpr unsigned kCoarseThreads = 1024;
// The device's grids have at most 2^31 tiles, so fewer than 32 coarse levels.
constexpr unsigned kMaxDeviceCoarseLevels = 32;

// The coarse levels' quantizers (by m, level l = L + m), computed on the host
// as the CPU computes them, and the anchor arrays in scratch memory: the
// values predictions read (anchor-grid C order) and the anchors' codes.
template <typename T>
struct CoarseParams {
  unsigned levels = 0;  // C
  LevelQuantizer<T> quantizers[kMaxDeviceCoarseLevels];
  T* values = nullptr;
  uint16_t* codes = nullptr;
};

// Calls visit(m, anchor coordinates, anchor, element, prediction) for this
// thread's points of every coarse level, coarsest first, pass by pass, with
// a barrier after each pass (and before the first: values[0] is set).
template <typename T, typename Visit>
__device__ __forceinline__ void walk_coarse(const Grid& grid, unsigned levels, const T* values, Visit&& visit) {
  __syncthreads();
  for (unsigned m = levels; m-- > 0;)
    for (int j = 0; j < 3; ++j) {
      const CoarsePass pass = coarse_pass_of(grid, m, j);
      for (size_t i = threadIdx.x; i < pass.points; i += blockDim.x) {
        size_t a[3];
        coarse_point(pass, i, a);
        const size_t at = anchor_of(grid, a);
        visit(m, a, at, anchor_element(grid, a), coarse_predict(values, grid, pass, a, at));
      }
      __syncthreads();
    }
}

// Encoder: one block. The root exact (code 0); every other anchor quantized
// as any point (a fill element coded q = 0), its code 0 an outlier bit.
template <typename T, typename Job>
__global__ void __launch_bounds__(kCoarseThreads)
    encode_coarse(const __grid_constant__ Job job, const __grid_constant__ CoarseParams<T> coarse,
                  uint32_t* outliers) {
  const Grid& grid = job.grid;
  if (grid.tile_count == 0) return;
  if (threadIdx.x == 0) {
    coarse.values[0] = prediction_value(load_value<T>(job.input, 0));
    coarse.codes[0] = 0;
  }
  walk_coarse(grid, coarse.levels, coarse.values, [&](unsigned m, const size_t(&)[3], size_t at, size_t g, T p) {
    const LevelQuantizer<T>& lq = coarse.quantizers[m];
    T value;
    int32_t q;
    uint32_t code = quantize(load_value<T>(job.input, g), p, lq, value, q);
    if (job.fill_mask != nullptr && is_fill(job.fill_mask, g)) code_fill(p, lq, value, code, q);
    coarse.values[at] = value;
    coarse.codes[at] = static_cast<uint16_t>(code);
    if (code == 0) atomicOr(outliers + (g >> 5), 1u << (g & 31));
  });
}

// Decoder: one block, after the scatter (the root and the outliers are in
// `out`). A code 0 reads the scattered value; the tiles check the codes.
template <typename T, typename Header>
__global__ void __launch_bounds__(kCoarseThreads)
    decode_coarse(Grid grid, CodeGroups groups, const __grid_constant__ ConstGroupStreams streams,
                  unsigned code_bytes, unsigned form, const Header* header, const uint8_t* out, T* values) {
  if (!header->ok || grid.tile_count == 0) return;  // uniform over the block
  if (threadIdx.x == 0) values[0] = prediction_value(load_value<T>(out, 0));
  const unsigned tile_levels = level_count(grid.rank);
  const int32_t radius = static_cast<int32_t>(header->radius);
  walk_coarse(grid, coarse_level_count(grid), values, [&](unsigned m, const size_t(&a)[3], size_t at, size_t g, T p) {
    const uint8_t* code_at =
        code_address(grid, groups, streams, code_bytes, a[0] * grid.tile, a[1] * grid.tile, a[2] * grid.tile);
    const uint32_t code =
        code_of_stored(code_bytes == 1 ? *code_at : load_word<uint16_t>(code_at), header->radius, form, code_bytes);
    values[at] = code == 0 ? prediction_value(load_value<T>(out, g))
                           : reconstruct(p, static_cast<int32_t>(code) - radius, header->steps[tile_levels + m]);
  });
}

}  // namespace fz::spline::cuda::detail
