// What the CPU spline encoder (encode_cpu.cpp) and its tuner (tune_cpu.cpp)
// share: the job (input, grid, per-level flags and quantizers), the start of
// every tile, its points loaded into the working buffer, and the level walk
// with its points quantized in batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/bytes.hpp"
#include "common/executor.hpp"
#include "spline/quantize_cpu.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline::detail {

using rules::LevelQuantizer;

inline unsigned grid_levels(const rules::Grid& grid) { return rules::level_count(grid.rank); }

template <typename T>
struct EncodeJob {
  rules::Grid grid;
  const uint8_t* input = nullptr;
  const uint8_t* fill_mask = nullptr;  // or nullptr (spline.hpp, fill elements)
  uint32_t radius = 0;
  uint8_t flags[rules::kMaxLevels] = {};              // by level l (0 finest)
  LevelQuantizer<T> quantizers[rules::kMaxLevels] = {};  // by level l
  bool avx2 = false;  // cpu_has_avx2() on the calling thread (quantize_batch)
  bool coarse = false;  // coarse levels (spline.hpp): only the root's code 0 is not an outlier
  const T* anchors = nullptr;             // what predictions read at each anchor (coarse_cpu.hpp)
  const uint16_t* anchor_codes = nullptr;  // and its code
};

// Puts the tile's points inside the chunk into its working buffer: the
// corners (anchors) as predictions read them (job.anchors: the exact values,
// 0 where not finite, or the coarse levels' x'), every other point as its
// input value, which the level walk reads
// as the point's x before it sets the slot to what predictions read (a
// point is computed once, and nothing reads it before).
template <typename T>
void load_region(const EncodeJob<T>& job, const TileFrame& f, T* buffer) {
  const rules::Grid& grid = job.grid;
  for (size_t z = 0; z < f.extent[0]; ++z)
    for (size_t y = 0; y < f.extent[1]; ++y)
      std::memcpy(buffer + f.slot(z, y, 0), job.input + rules::global_index(grid, f, z, y, 0) * sizeof(T),
                  f.extent[2] * sizeof(T));  // little-endian hosts only (common/bytes.hpp)
  for_each_corner(grid, f, [&](size_t slot, size_t z, size_t y, size_t x) {
    buffer[slot] = job.anchors[rules::corner_anchor(grid, f, z, y, x)];
  });
}

// The tile's fill elements (job.fill_mask): fills[slot] = 1 for every point
// of the tile inside the chunk that is a fill element, else 0. Anchors
// included: no level visits them.
template <typename T>
void load_fills(const EncodeJob<T>& job, const TileFrame& f, uint8_t* fills) {
  const rules::Grid& grid = job.grid;
  for (size_t z = 0; z < f.extent[0]; ++z)
    for (size_t y = 0; y < f.extent[1]; ++y) {
      const size_t base = rules::global_index(grid, f, z, y, 0);
      uint8_t* row = fills + f.slot(z, y, 0);
      for (size_t x = 0; x < f.extent[2]; ++x) row[x] = rules::is_fill(job.fill_mask, base + x) ? 1 : 0;
    }
}

// Points of a level collected for quantize_batch: their slots, predictions
// and x, then quantize_batch's values and codes.
template <typename T>
struct PointBatch {
  static constexpr size_t kCapacity = 2 * kMaxRowPoints;  // a row always fits
  size_t size = 0;
  uint32_t slot[kCapacity];
  T prediction[kCapacity];
  T x[kCapacity];
  T value[kCapacity];
  uint32_t code[kCapacity];
};

// quantize_batch over a batch, then rules::code_fill for its fill elements
// (fills: load_fills' bytes of the tile; nullptr without a mask).
template <typename T>
void quantize_points(PointBatch<T>& b, const LevelQuantizer<T>& lq, bool avx2, const uint8_t* fills) {
  quantize_batch(b.x, b.prediction, b.size, lq, avx2, b.value, b.code);
  if (fills == nullptr) return;
  for (size_t k = 0; k < b.size; ++k)
    if (fills[b.slot[k]] != 0) {
      int32_t q;
      rules::code_fill(b.prediction[k], lq, b.value[k], b.code[k], q);
    }
}

// run_level with the points quantized in batches: each point's slot,
// prediction and x (source[slot]: the encoder's own buffer, or the tuner's
// copy of the input) go to the batch, row by row; flush(batch) runs when a
// row would not fit and at the end of each pass, and must set buffer[slot]
// for each of the batch's points. The points of a pass never read each
// other (tile_cpu.hpp), so their slots may wait for the flush.
template <typename T, typename Flush>
void run_level_batched(const rules::Grid& grid, const TileFrame& f, const T* source, T* buffer, unsigned level,
                       uint8_t flags, PointBatch<T>& batch, Flush&& flush) {
  auto flush_batch = [&] {
    if (batch.size != 0) flush(batch);
    batch.size = 0;
  };
  batch.size = 0;
  run_level(
      grid, f, level, flags,
      [&](const auto& row) {
        if (batch.size + row.count > PointBatch<T>::kCapacity) flush_batch();
        uint32_t* slots = batch.slot + batch.size;
        T* predictions = batch.prediction + batch.size;
        T* xs = batch.x + batch.size;
        for (size_t k = 0; k < row.count; ++k) {
          const size_t slot = row.slot(k);
          slots[k] = static_cast<uint32_t>(slot);
          predictions[k] = row.predict(buffer, k);
          xs[k] = source[slot];
        }
        batch.size += row.count;
      },
      flush_batch);
}

// Sets job.flags by Tuning::kRatioFirst (tune_cpu.cpp); job.grid has tiles.
template <typename T>
void tune_ratio_first(EncodeJob<T>& job, const Executor& exec);

}  // namespace fz::spline::detail
