// SPLINE on the GPU, encode: the host dispatch (scratch layout, launches) over
// encode_kernels_cuda.cuh. Stream format: spline/spline.hpp; host interface:
// spline/spline_cuda.hpp. The steps and their inverses are computed on the
// host by the CPU's own functions (spline_rules.hpp) and passed to every
// kernel, so the device only repeats the per-element arithmetic. Order:
//   1. the outlier bitmap, flags and tuning totals cleared; with coarse
//      levels, launch_encode_coarse (coarse_cuda.cuh: one block, then the
//      wide passes; the anchors' values and codes);
//   2. with Tuning::kRatioFirst, per level coarsest first: tune_level over the
//      sample tiles (every flag choice in one block), then choose_flags
//      (tune_cpu.cpp's rule); with Tuning::kOff the flags stay 0;
//   3. encode_tiles, one block per tile: the codes straight into their group
//      streams (fill elements, when a fill mask is given, coded q = 0), the
//      outliers into the bitmap;
//   4. count_outliers, an exclusive scan of the span counts, write_outliers;
//   5. write_header (K and the side stream's size), write_anchors (the
//      root alone with coarse levels).
// Nothing synchronises: the engine captures this in a CUDA graph.
#include <cub/device/device_scan.cuh>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/one_block_scan_cuda.cuh"
#include "spline/encode_kernels_cuda.cuh"
#include "spline/spline_cuda.hpp"

namespace fz::spline::cuda {
namespace {

using namespace detail;

inline size_t spans_of(size_t elements) { return (elements + kSpanElements - 1) / kSpanElements; }

struct EncodeLayout {
  uint8_t* flags;               // by level l (0 finest)
  unsigned long long* totals;   // [level][flags]: the tuning's summed costs
  uint64_t* counts;             // outliers per span
  uint64_t* offsets;            // their exclusive prefix sums
  uint32_t* outliers;           // bitmap, element order, kSpanWords words a span
  size_t outlier_bytes;
  void* anchors;                // coarse levels: the anchors' values (T), or nullptr
  uint16_t* anchor_codes;       // and their codes
  void* scan;
  size_t scan_bytes;
  size_t total;
};

EncodeLayout encode_layout(void* scratch, const Grid& grid, bool coarse) {
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t spans = spans_of(grid.elements);
  EncodeLayout l;
  size_t at = 0;
  l.anchors = nullptr;
  l.anchor_codes = nullptr;
  if (coarse) {
    l.anchors = base + at;
    at += aligned(grid.tile_count * sizeof(double));
    l.anchor_codes = reinterpret_cast<uint16_t*>(base + at);
    at += aligned(grid.tile_count * sizeof(uint16_t));
  }
  l.flags = base + at;
  at += aligned(kMaxLevels);
  l.totals = reinterpret_cast<unsigned long long*>(base + at);
  at += aligned(kMaxLevels * kFlagChoices * sizeof(unsigned long long));
  l.counts = reinterpret_cast<uint64_t*>(base + at);
  at += aligned(spans * 8);
  l.offsets = reinterpret_cast<uint64_t*>(base + at);
  at += aligned(spans * 8);
  l.outliers = reinterpret_cast<uint32_t*>(base + at);
  l.outlier_bytes = spans * kSpanWords * sizeof(uint32_t);
  at += aligned(l.outlier_bytes);
  l.scan = base + at;
  l.scan_bytes = 0;
  if (spans > cuda_detail::kOneBlockScanItems)
    cub::DeviceScan::ExclusiveSum(nullptr, l.scan_bytes, static_cast<const uint64_t*>(nullptr),
                                  static_cast<uint64_t*>(nullptr), static_cast<uint64_t>(spans));
  at += aligned(l.scan_bytes);
  l.total = at;
  return l;
}

// Exclusive sums of the span counts: one block when they are few, cub otherwise.
cudaError_t scan_spans(const EncodeLayout& l, size_t spans, cudaStream_t stream) {
  if (spans <= cuda_detail::kOneBlockScanItems) {
    cuda_detail::OneBlockScans scans;
    scans.in[0] = l.counts;
    scans.out[0] = l.offsets;
    scans.count = 1;
    cuda_detail::exclusive_sums_one_block<<<1, cuda_detail::kOneBlockScanThreads, 0, stream>>>(scans, spans, false);
    return cudaGetLastError();
  }
  size_t bytes = l.scan_bytes;
  return cub::DeviceScan::ExclusiveSum(l.scan, bytes, l.counts, l.offsets, static_cast<uint64_t>(spans), stream);
}

template <typename T>
cudaError_t encode_typed(const uint8_t* in, const uint8_t* fill_mask, const Grid& grid, const Config& config,
                         double eb, const CodeStreams& code_streams, const std::function<SideRoom()>& side_room,
                         uint64_t* side_size, void* scratch, cudaStream_t stream) {
  const unsigned levels = level_count(grid.rank);
  EncodeParams<T> job;
  job.grid = grid;
  job.input = in;
  job.fill_mask = fill_mask;
  job.radius = config.radius;
  job.code_bytes = config.code_bytes;
  const bool coarse = config.coarse_levels;
  CoarseParams<T> coarse_job;
  CoarseSteps<T> coarse_steps;
  coarse_job.levels = coarse_steps.levels = coarse ? coarse_level_count(grid) : 0;
  if (coarse_job.levels > kMaxDeviceCoarseLevels) return cudaErrorInvalidValue;
  T steps[kMaxSideLevels];
  level_steps<T>(config.step_bound > 0 ? config.step_bound : eb, config.alpha, config.beta, levels + coarse_job.levels,
                 steps);
  for (unsigned l = 0; l < levels; ++l) job.quantizers[l] = make_level_quantizer<T>(steps[l], config.radius, eb);
  for (unsigned m = 0; m < coarse_job.levels; ++m) {
    coarse_job.quantizers[m] = make_level_quantizer<T>(steps[levels + m], config.radius, eb);
    coarse_steps.steps[m] = steps[levels + m];
  }

  const size_t spans = spans_of(grid.elements);
  if (spans > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  const EncodeLayout l = encode_layout(scratch, grid, coarse);
  cudaError_t err = cudaMemsetAsync(l.flags, 0, kMaxLevels, stream);
  if (err == cudaSuccess)
    err = cudaMemsetAsync(l.totals, 0, kMaxLevels * kFlagChoices * sizeof(unsigned long long), stream);
  if (err == cudaSuccess && l.outlier_bytes > 0) err = cudaMemsetAsync(l.outliers, 0, l.outlier_bytes, stream);
  if (err != cudaSuccess) return err;

  const unsigned tiles = static_cast<unsigned>(grid.tile_count);  // device_grid_of bounds it
  if (coarse && tiles > 0) {
    coarse_job.values = static_cast<T*>(l.anchors);
    coarse_job.codes = l.anchor_codes;
    launch_encode_coarse<T>(job, coarse_job, l.outliers, stream);
    job.anchors = coarse_job.values;
    job.anchor_codes = coarse_job.codes;
  }
  if (config.tuning == Tuning::kRatioFirst && tiles > 0) {
    const size_t shared = tune_shared_bytes<T>(grid.rank);
    err = allow_shared(tune_level<T>, shared);
    if (err != cudaSuccess) return err;
    const unsigned samples = static_cast<unsigned>(sample_count(grid.tile_count));
    for (unsigned level = levels; level-- > 0;) {
      tune_level<T><<<samples, kTileThreads, shared, stream>>>(job, level, l.flags, l.totals);
      choose_flags<<<1, 1, 0, stream>>>(level, l.totals, l.flags);
    }
  }
  if (tiles > 0) {
    const size_t shared = encode_shared_bytes<T>(grid.rank);
    err = allow_shared(encode_tiles<T>, shared);
    if (err != cudaSuccess) return err;
    CodeOut out;
    for (unsigned g = 0; g < kCodeGroups; ++g) out.streams.at[g] = code_streams.at[g];
    out.groups = code_groups(grid);
    out.form = static_cast<unsigned>(config.code_form);
    out.outliers = l.outliers;
    encode_tiles<T><<<tiles, kTileThreads, shared, stream>>>(job, l.flags, out);
  }

  if (spans > 0) {
    count_outliers<<<static_cast<unsigned>(spans), kSpanThreads, 0, stream>>>(l.outliers, l.counts);
    err = scan_spans(l, spans, stream);
    if (err != cudaSuccess) return err;
  }
  const size_t stored_anchors = stored_anchor_count(grid, coarse);
  const SideLayout layout = side_layout(grid.rank, sizeof(T), stored_anchors, coarse_job.levels);
  side_length<T><<<1, 1, 0, stream>>>(grid, l.counts, l.offsets, spans, layout, side_size);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const SideRoom room = side_room();
  uint8_t* side = room.data;
  if (spans > 0)
    write_outliers<T><<<static_cast<unsigned>(spans), kSpanThreads, 0, stream>>>(
        grid, in, l.outliers, l.counts, l.offsets, spans, layout.indices_at, side, side_size, room.capacity);
  write_header<T><<<1, 1, 0, stream>>>(job, l.flags, l.counts, l.offsets, spans, layout, coarse_steps, side,
                                       side_size, room.capacity);
  if (stored_anchors > 0)
    write_anchors<T><<<static_cast<unsigned>((stored_anchors + kSpanThreads - 1) / kSpanThreads), kSpanThreads, 0,
                       stream>>>(grid, in, layout.anchors_at, stored_anchors, side, side_size, room.capacity);
  return cudaGetLastError();
}

}  // namespace

size_t max_side_bytes(const std::vector<size_t>& dims, unsigned width, bool coarse) {
  Grid grid;
  if (grid_of(dims, grid) != GridCheck::kOk) return 0;
  const SideLayout layout =
      side_layout(grid.rank, width, stored_anchor_count(grid, coarse), coarse ? coarse_level_count(grid) : 0);
  return layout.indices_at + grid.elements * (index_width_of(grid.elements) + width);
}

size_t encode_scratch_bytes(const std::vector<size_t>& dims, const Config& config) {
  Grid grid;
  if (grid_of(dims, grid) != GridCheck::kOk) return 0;
  return encode_layout(nullptr, grid, config.coarse_levels).total;
}

std::array<size_t, kCodeGroups> code_group_bytes(const std::vector<size_t>& dims, unsigned code_bytes) {
  Grid grid;
  std::array<size_t, kCodeGroups> bytes{};
  if (grid_of(dims, grid) != GridCheck::kOk) return bytes;
  const CodeGroups groups = code_groups(grid);
  for (unsigned g = 0; g < kCodeGroups; ++g) bytes[g] = groups.size[g] * code_bytes;
  return bytes;
}

cudaError_t encode_with_side_room(const uint8_t* in, const uint8_t* fill_mask, const std::vector<size_t>& dims,
                                  const Config& config, double eb, const CodeStreams& codes,
                                  const std::function<SideRoom()>& side_room, uint64_t* side_size, void* scratch,
                                  cudaStream_t stream) {
  if (config_problem(config) != nullptr) return cudaErrorInvalidValue;
  if (!(eb > 0) || !std::isfinite(eb)) return cudaErrorInvalidValue;
  Grid grid;
  if (!device_grid_of(dims, grid)) return cudaErrorInvalidValue;
  return config.width == 4
             ? encode_typed<float>(in, fill_mask, grid, config, eb, codes, side_room, side_size, scratch, stream)
             : encode_typed<double>(in, fill_mask, grid, config, eb, codes, side_room, side_size, scratch, stream);
}

cudaError_t encode(const uint8_t* in, const uint8_t* fill_mask, const std::vector<size_t>& dims,
                   const Config& config, double eb, const CodeStreams& codes, uint8_t* side, uint64_t* side_size,
                   void* scratch, cudaStream_t stream) {
  const size_t most = max_side_bytes(dims, config.width, config.coarse_levels);
  return encode_with_side_room(
      in, fill_mask, dims, config, eb, codes, [&] { return SideRoom{side, most}; }, side_size, scratch, stream);
}

}  // namespace fz::spline::cuda
