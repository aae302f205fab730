// Tuning::kRatioFirst on the CPU (spline.hpp): the per-level flags chosen
// level by level, coarsest first, on a fixed sample of tiles.
//
// Sample: rules::sample_tile (spline_rules.hpp, shared with the GPU).
// Cost of a flag pair at a level: over the sample tiles, with the coarser
// levels' chosen flags already applied, the sum of |q| over every point the
// tile computes at that level (its halo included), an outlier counting as
// the radius. Integer sums, so the choice does not depend on the thread
// count; ties go to the lowest flag value.
#include <algorithm>
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

// Runs one level of a tile; returns the sum of |q| (outliers count as radius).
template <typename T>
uint64_t level_cost(const EncodeJob<T>& job, const TileFrame& frame, T* buffer, unsigned level, uint8_t flags) {
  const LevelQuantizer<T>& lq = job.quantizers[level];
  uint64_t cost = 0;
  run_level(job.grid, frame, buffer, size_t{1} << level, flags, [&](T* at, T p, size_t z, size_t y, size_t x) {
    int32_t q;
    const uint32_t code = rules::quantize(job.input_at(global_index(job.grid, frame, z, y, x)), p, lq, *at, q);
    cost += code == 0 ? job.radius : static_cast<uint32_t>(q < 0 ? -q : q);
  });
  return cost;
}

}  // namespace

template <typename T>
void tune_ratio_first(EncodeJob<T>& job, const Executor& exec) {
  const std::vector<size_t> tiles = sample_tiles(job.grid.tile_count);
  const size_t buffer_size = TileFrame(job.grid, 0).buffer_size;
  // Each sample tile's working buffer after the levels chosen so far.
  std::vector<T> states(tiles.size() * buffer_size);
  exec.parallel_for(tiles.size(), [&](size_t s) {
    FloatStateGuard guard;
    load_anchors(job, TileFrame(job.grid, tiles[s]), states.data() + s * buffer_size);
  });
  std::vector<uint64_t> costs(tiles.size() * kFlagChoices);
  for (unsigned level = grid_levels(job.grid); level-- > 0;) {
    exec.parallel_for(tiles.size(), [&](size_t s) {
      FloatStateGuard guard;
      const TileFrame frame(job.grid, tiles[s]);
      const T* state = states.data() + s * buffer_size;
      std::vector<T> trial(buffer_size);
      for (unsigned flags = 0; flags < kFlagChoices; ++flags) {
        std::copy(state, state + buffer_size, trial.begin());
        costs[s * kFlagChoices + flags] = level_cost(job, frame, trial.data(), level, static_cast<uint8_t>(flags));
      }
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
    if (level == 0) break;  // no finer level to prepare for
    exec.parallel_for(tiles.size(), [&](size_t s) {
      FloatStateGuard guard;
      level_cost(job, TileFrame(job.grid, tiles[s]), states.data() + s * buffer_size, level, job.flags[level]);
    });
  }
}

template void tune_ratio_first<float>(EncodeJob<float>&, const Executor&);
template void tune_ratio_first<double>(EncodeJob<double>&, const Executor&);

}  // namespace fz::spline::detail
