// Tuning::kRatioFirst on the CPU (spline.hpp): the per-level flags chosen
// level by level, coarsest first, on a fixed sample of tiles.
//
// Sample: rules::sample_tile (spline_side_rules.hpp, shared with the GPU).
// Cost of a flag pair at a level: over the sample tiles, with the coarser
// levels' chosen flags already applied, the sum of |q| over every point the
// tile computes at that level (its halo included), an outlier counting as
// the radius and a fill element (spline.hpp) as 0. Integer sums, so the
// choice does not depend on the thread count; ties go to the lowest flag
// value.
//
// Each sample tile keeps its working buffer (the coarser levels' values)
// and its input values beside it. A level runs once per flag choice on the
// same buffer: a run writes only the level's points, each before anything
// reads it (tile_cpu.hpp), so no restore is needed between the runs, and the
// buffer ends with the last choice's values; only when another choice wins
// does the level run once more with it, for the finer levels.
#include <cstdint>
#include <vector>

#include "common/float_state.hpp"
#include "spline/encode_cpu.hpp"

namespace fz::spline::detail {
namespace {

using rules::kFlagChoices;

std::vector<size_t> sample_tiles(size_t tile_count) {
  std::vector<size_t> tiles(rules::sample_count(tile_count));
  for (size_t j = 0; j < tiles.size(); ++j) tiles[j] = rules::sample_tile(j, tile_count);
  return tiles;
}

// Runs one level of a tile on `buffer`, each point's x from `input` (the
// same slots); returns the sum of |q| (outliers count as radius).
template <typename T>
uint64_t level_cost(const EncodeJob<T>& job, const TileFrame& frame, const T* input, T* buffer, const uint8_t* fills,
                    unsigned level, uint8_t flags) {
  const LevelQuantizer<T> lq = job.quantizers[level];
  const uint32_t radius = job.radius;
  uint64_t cost = 0;
  PointBatch<T> batch;
  run_level_batched(job.grid, frame, input, buffer, level, flags, batch, [&](PointBatch<T>& b) {
    quantize_points(b, lq, job.avx2, fills);
    for (size_t k = 0; k < b.size; ++k) {
      buffer[b.slot[k]] = b.value[k];
      const uint32_t code = b.code[k];
      cost += code == 0 ? radius : code < radius ? radius - code : code - radius;
    }
  });
  return cost;
}

}  // namespace

template <typename T>
void tune_ratio_first(EncodeJob<T>& job, const Executor& exec) {
  const std::vector<size_t> tiles = sample_tiles(job.grid.tile_count);
  const size_t buffer_size = rules::tile_buffer_size(job.grid.rank);
  // Per sample tile: its working buffer, then its input values.
  std::vector<T> states(tiles.size() * 2 * buffer_size);
  auto buffer_of = [&](size_t s) { return states.data() + s * 2 * buffer_size; };
  // And its fill elements, when the job has a fill mask (they cost 0).
  std::vector<uint8_t> tile_fills(job.fill_mask != nullptr ? tiles.size() * buffer_size : 0);
  auto fills_of = [&](size_t s) { return job.fill_mask != nullptr ? tile_fills.data() + s * buffer_size : nullptr; };
  exec.parallel_for(tiles.size(), [&](size_t s) {
    const TileFrame frame(job.grid, tiles[s]);
    load_region(job, frame, buffer_of(s));
    load_region(job, frame, buffer_of(s) + buffer_size);
    if (job.fill_mask != nullptr) load_fills(job, frame, fills_of(s));
  });
  constexpr uint8_t kLastChoice = kFlagChoices - 1;
  std::vector<uint64_t> costs(tiles.size() * kFlagChoices);
  for (unsigned level = grid_levels(job.grid); level-- > 0;) {
    exec.parallel_for(tiles.size(), [&](size_t s) {
      FloatStateGuard guard;
      const TileFrame frame(job.grid, tiles[s]);
      for (uint8_t flags = 0; flags <= kLastChoice; ++flags)
        costs[s * kFlagChoices + flags] =
            level_cost(job, frame, buffer_of(s) + buffer_size, buffer_of(s), fills_of(s), level, flags);
    });
    uint64_t best_cost = UINT64_MAX;
    for (unsigned flags = 0; flags < kFlagChoices; ++flags) {
      uint64_t total = 0;
      for (size_t s = 0; s < tiles.size(); ++s) total += costs[s * kFlagChoices + flags];
      if (total < best_cost) {
        best_cost = total;
        job.flags[level] = static_cast<uint8_t>(flags);
      }
    }
    if (level == 0 || job.flags[level] == kLastChoice) continue;  // no finer level, or the buffers hold the choice
    exec.parallel_for(tiles.size(), [&](size_t s) {
      FloatStateGuard guard;
      level_cost(job, TileFrame(job.grid, tiles[s]), buffer_of(s) + buffer_size, buffer_of(s), fills_of(s), level,
                 job.flags[level]);
    });
  }
}

template void tune_ratio_first<float>(EncodeJob<float>&, const Executor&);
template void tune_ratio_first<double>(EncodeJob<double>&, const Executor&);

}  // namespace fz::spline::detail
