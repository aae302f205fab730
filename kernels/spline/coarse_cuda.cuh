// The spline stage's coarse levels on the GPU (spline.hpp, "Coarse levels";
// the CPU's: coarse_cpu.cpp): the anchor grid predicted and quantized level
// by level from the root, in one block of kCoarseThreads threads, before the
// tiles (encode: before the tuning too; decode: after the scatter), and
// each pass of the finest coarse levels of a large chunk as a launch of its
// own. The points of one pass never read each other
// (spline_coarse_rules.hpp), so the threads take them in any order and get
// the CPU's values; a barrier (or the launch's end) separates the passes.
// Internal to encode_cuda.cu and decode_cuda.cu.
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

// A coarse pass of more points than kCoarseBlockPoints runs as a launch of
// its own, a thread per point (the finest coarse levels of a large chunk);
// the coarser levels all run in one block. 512 MiB of float32 on an H200
// (encode / decode with coarse levels, beside without): 3-D (32^3 anchors)
// 2.63 / 1.99 ms beside 2.54 / 1.94; 2-D 2.25 / 1.65 beside 2.16 / 1.57;
// 1-D (2^19 anchors) 7.29 / 6.99 beside 6.77 / 6.75, where all in one block
// took 8.19 / 7.93.
constexpr size_t kCoarseBlockPoints = 8192;
constexpr unsigned kCoarsePassThreads = 256;

// The coarse levels 0 .. W-1 with a pass wider than kCoarseBlockPoints (the
// finer a level, the more points its passes have). Host and device.
FZ_HOST_DEVICE inline unsigned wide_coarse_levels(const Grid& grid, unsigned levels) {
  unsigned wide = 0;
  for (; wide < levels; ++wide) {
    size_t widest = 0;
    for (int j = 0; j < 3; ++j) {
      const size_t points = coarse_pass_of(grid, wide, j).points;
      widest = points > widest ? points : widest;
    }
    if (widest <= kCoarseBlockPoints) break;
  }
  return wide;
}

// Point i of pass (m, j) of the encoder: quantized as any point (a fill
// element coded q = 0); its code 0 an outlier bit.
template <typename T, typename Job>
__device__ __forceinline__ void encode_coarse_point(const Job& job, const CoarseParams<T>& coarse,
                                                    const CoarsePass& pass, unsigned m, size_t i, uint32_t* outliers) {
  const Grid& grid = job.grid;
  size_t a[3];
  coarse_point(pass, i, a);
  const size_t at = anchor_of(grid, a), g = anchor_element(grid, a);
  const T p = coarse_predict(coarse.values, grid, pass, a, at);
  const LevelQuantizer<T>& lq = coarse.quantizers[m];
  T value;
  int32_t q;
  uint32_t code = quantize(load_value<T>(job.input, g), p, lq, value, q);
  if (job.fill_mask != nullptr && is_fill(job.fill_mask, g)) code_fill(p, lq, value, code, q);
  coarse.values[at] = value;
  coarse.codes[at] = static_cast<uint16_t>(code);
  if (code == 0) atomicOr(outliers + (g >> 5), 1u << (g & 31));
}

// Encoder, one block: the root exact (code 0), then the levels C-1 .. wide,
// a barrier after each pass.
template <typename T, typename Job>
__global__ void __launch_bounds__(kCoarseThreads)
    encode_coarse(const __grid_constant__ Job job, const __grid_constant__ CoarseParams<T> coarse, unsigned wide,
                  uint32_t* outliers) {
  if (threadIdx.x == 0) {
    coarse.values[0] = prediction_value(load_value<T>(job.input, 0));
    coarse.codes[0] = 0;
  }
  __syncthreads();
  for (unsigned m = coarse.levels; m-- > wide;)
    for (int j = 0; j < 3; ++j) {
      const CoarsePass pass = coarse_pass_of(job.grid, m, j);
      for (size_t i = threadIdx.x; i < pass.points; i += blockDim.x) encode_coarse_point(job, coarse, pass, m, i, outliers);
      __syncthreads();
    }
}

// Encoder, one wide pass: a thread per point.
template <typename T, typename Job>
__global__ void __launch_bounds__(kCoarsePassThreads)
    encode_coarse_pass(const __grid_constant__ Job job, const __grid_constant__ CoarseParams<T> coarse, unsigned m,
                       int j, uint32_t* outliers) {
  const CoarsePass pass = coarse_pass_of(job.grid, m, j);
  const size_t i = static_cast<size_t>(blockIdx.x) * kCoarsePassThreads + threadIdx.x;
  if (i < pass.points) encode_coarse_point(job, coarse, pass, m, i, outliers);
}

// Calls launch(m, j, blocks) for every wide pass, coarsest first.
template <typename Launch>
void for_each_wide_pass(const Grid& grid, unsigned wide, Launch&& launch) {
  for (unsigned m = wide; m-- > 0;)
    for (int j = 0; j < 3; ++j) {
      const size_t points = coarse_pass_of(grid, m, j).points;
      if (points > 0) launch(m, j, static_cast<unsigned>((points + kCoarsePassThreads - 1) / kCoarsePassThreads));
    }
}

// The encoder's coarse levels: the one block, then the wide passes.
template <typename T, typename Job>
void launch_encode_coarse(const Job& job, const CoarseParams<T>& coarse, uint32_t* outliers, cudaStream_t stream) {
  const unsigned wide = wide_coarse_levels(job.grid, coarse.levels);
  encode_coarse<T><<<1, kCoarseThreads, 0, stream>>>(job, coarse, wide, outliers);
  for_each_wide_pass(job.grid, wide, [&](unsigned m, int j, unsigned blocks) {
    encode_coarse_pass<T><<<blocks, kCoarsePassThreads, 0, stream>>>(job, coarse, m, j, outliers);
  });
}

// What the decoder's coarse kernels read.
template <typename T, typename Header>
struct CoarseDecode {
  Grid grid;
  CodeGroups groups;
  ConstGroupStreams streams;
  unsigned code_bytes;
  unsigned form;
  const Header* header;
  const uint8_t* out;  // the scattered root and outliers
  T* values;
};

// Point i of pass (m, j) of the decoder: a code 0 reads the scattered value
// (the tiles check the codes).
template <typename T, typename Header>
__device__ __forceinline__ void decode_coarse_point(const CoarseDecode<T, Header>& d, const CoarsePass& pass,
                                                    unsigned m, size_t i) {
  const Grid& grid = d.grid;
  size_t a[3];
  coarse_point(pass, i, a);
  const size_t at = anchor_of(grid, a), g = anchor_element(grid, a);
  const T p = coarse_predict(d.values, grid, pass, a, at);
  const uint8_t* code_at =
      code_address(grid, d.groups, d.streams, d.code_bytes, a[0] * grid.tile, a[1] * grid.tile, a[2] * grid.tile);
  const uint32_t radius = d.header->radius;
  const uint32_t code =
      code_of_stored(d.code_bytes == 1 ? *code_at : load_word<uint16_t>(code_at), radius, d.form, d.code_bytes);
  d.values[at] = code == 0 ? prediction_value(load_value<T>(d.out, g))
                           : reconstruct(p, static_cast<int32_t>(code) - static_cast<int32_t>(radius),
                                         d.header->steps[level_count(grid.rank) + m]);
}

// Decoder, one block, after the scatter: the root, then the levels C-1 .. wide.
template <typename T, typename Header>
__global__ void __launch_bounds__(kCoarseThreads)
    decode_coarse(const __grid_constant__ CoarseDecode<T, Header> d, unsigned levels, unsigned wide) {
  if (!d.header->ok) return;  // uniform over the block
  if (threadIdx.x == 0) d.values[0] = prediction_value(load_value<T>(d.out, 0));
  __syncthreads();
  for (unsigned m = levels; m-- > wide;)
    for (int j = 0; j < 3; ++j) {
      const CoarsePass pass = coarse_pass_of(d.grid, m, j);
      for (size_t i = threadIdx.x; i < pass.points; i += blockDim.x) decode_coarse_point(d, pass, m, i);
      __syncthreads();
    }
}

// Decoder, one wide pass: a thread per point.
template <typename T, typename Header>
__global__ void __launch_bounds__(kCoarsePassThreads)
    decode_coarse_pass(const __grid_constant__ CoarseDecode<T, Header> d, unsigned m, int j) {
  if (!d.header->ok) return;
  const CoarsePass pass = coarse_pass_of(d.grid, m, j);
  const size_t i = static_cast<size_t>(blockIdx.x) * kCoarsePassThreads + threadIdx.x;
  if (i < pass.points) decode_coarse_point(d, pass, m, i);
}

// The decoder's coarse levels: the one block, then the wide passes.
template <typename T, typename Header>
void launch_decode_coarse(const CoarseDecode<T, Header>& d, cudaStream_t stream) {
  const unsigned levels = coarse_level_count(d.grid);
  const unsigned wide = wide_coarse_levels(d.grid, levels);
  decode_coarse<T><<<1, kCoarseThreads, 0, stream>>>(d, levels, wide);
  for_each_wide_pass(d.grid, wide, [&](unsigned m, int j, unsigned blocks) {
    decode_coarse_pass<T><<<blocks, kCoarsePassThreads, 0, stream>>>(d, m, j);
  });
}

}  // namespace fz::spline::cuda::detail
