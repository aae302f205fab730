// What the CPU spline encoder (encode_cpu.cpp) and its tuner (tune_cpu.cpp)
// share: the job (input, grid, per-level flags and quantizers, code output)
// and the start of every tile, its anchors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline::detail {

using rules::LevelQuantizer;

inline unsigned grid_levels(const rules::Grid& grid) { return rules::level_count(grid.rank); }

template <typename T>
struct EncodeJob {
  rules::Grid grid;
  const uint8_t* input = nullptr;
  uint32_t radius = 0;
  unsigned code_bytes = 2;
  uint8_t flags[rules::kMaxLevels] = {};              // by level l (0 finest)
  LevelQuantizer<T> quantizers[rules::kMaxLevels] = {};  // by level l
  uint8_t* codes = nullptr;

  T input_at(size_t g) const { return load_le<T>(input + g * sizeof(T)); }
};

// Puts the tile's anchors into its working buffer: the exact values, 0 for
// those that are not finite (what predictions read, spline.hpp).
template <typename T>
void load_anchors(const EncodeJob<T>& job, const TileFrame& frame, T* buffer) {
  for_each_corner(job.grid, frame, [&](size_t slot, size_t z, size_t y, size_t x) {
    buffer[slot] = rules::prediction_value(job.input_at(global_index(job.grid, frame, z, y, x)));
  });
}

// Encodes one tile (codes of the points it owns) in `buffer` (its buffer_size values).
template <typename T>
void encode_tile(const EncodeJob<T>& job, size_t tile_index, T* buffer);

// Sets job.flags by Tuning::kRatioFirst (tune_cpu.cpp); job.grid has tiles.
template <typename T>
void tune_ratio_first(EncodeJob<T>& job, const Executor& exec);

}  // namespace fz::spline::detail
