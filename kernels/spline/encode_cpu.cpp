// CPU spline encoder (stream format: spline.hpp).
//
// 0. The anchors: raw, or with coarse levels predicted and quantized from
//    the root (coarse_cpu.cpp); the tiles start from their x'.
// 1. The per-level flags: all 0 (kOff) or tuned on a sample of tiles
//    (tune_cpu.cpp).
// 2. Every tile, in parallel, in a private working buffer: its points, then
//    the levels coarsest to finest; each point is predicted from the buffer,
//    quantized with the strict check (in batches, quantize_cpu.hpp), and its
//    code kept beside the buffer. Then the codes of the points it owns go
//    straight to their places in the three group streams (groups_cpu.hpp),
//    and its outliers (code 0 at an owned point but its anchor) to the
//    tile's list, in element order. Tiles write disjoint codes, so the bytes
//    do not depend on the thread count.
// 3. The side stream, its outliers the tiles' lists merged into element
//    order (each list is in order; the merge walks the chunk's rows).
#include <cstring>
#include <string>
#include <vector>

#include "common/cpu_features.hpp"
#include "common/error.hpp"
#include "common/float_state.hpp"
#include "spline/coarse_cpu.hpp"
#include "spline/encode_cpu.hpp"
#include "spline/groups_cpu.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline {
namespace detail {
namespace {

// Encodes one tile: `buffer` and `codes` have its buffer_size slots; the
// indices of its owned outliers are appended to `outliers`.
// `fills` has buffer_size slots too when the job has a fill mask.
template <typename T>
void encode_tile(const EncodeJob<T>& job, const GroupStreams<uint8_t>& streams, size_t tile_index, T* buffer,
                 uint16_t* codes, uint8_t* fills, std::vector<size_t>& outliers) {
  const rules::Grid& grid = job.grid;
  const TileFrame frame(grid, tile_index);
  load_region(job, frame, buffer);
  if (job.fill_mask == nullptr) fills = nullptr;
  else load_fills(job, frame, fills);
  for_each_corner(grid, frame, [&](size_t slot, size_t z, size_t y, size_t x) {
    codes[slot] = job.anchor_codes[rules::corner_anchor(grid, frame, z, y, x)];
  });
  PointBatch<T> batch;
  for (unsigned level = grid_levels(grid); level-- > 0;) {
    const LevelQuantizer<T> lq = job.quantizers[level];
    run_level_batched(grid, frame, buffer, buffer, level, job.flags[level], batch, [&](PointBatch<T>& b) {
      quantize_points(b, lq, job.avx2, fills);
      for (size_t k = 0; k < b.size; ++k) {
        buffer[b.slot[k]] = b.value[k];
        codes[b.slot[k]] = static_cast<uint16_t>(b.code[k]);
      }
    });
  }
  const size_t rows = owned_extent(grid, frame, 0), columns = owned_extent(grid, frame, 1);
  const size_t width = owned_extent(grid, frame, 2);
  for (size_t z = 0; z < rows; ++z)
    for (size_t y = 0; y < columns; ++y) {
      const uint16_t* row = codes + frame.slot(z, y, 0);
      const size_t zeros =
          write_code_row(grid, streams, frame.origin[0] + z, frame.origin[1] + y, frame.origin[2], width, row);
      // Its (0, 0, 0) is the tile's anchor, code 0 and stored in the side
      // stream: every anchor without coarse levels, the root alone with them.
      const bool stored_anchor = z == 0 && y == 0 && (!job.coarse || tile_index == 0);
      if (zeros == (stored_anchor ? 1 : 0)) continue;
      const size_t base = rules::global_index(grid, frame, z, y, 0);
      for (size_t x = stored_anchor ? 1 : 0; x < width; ++x)
        if (row[x] == 0) outliers.push_back(base + x);
    }
}

// Calls emit(index) for the tiles' outliers in element order (each tile's
// list is in element order): row by row of the chunk, the tiles that row
// crosses in x order. The lists of a slab of tiles are freed once merged.
template <typename Emit>
void merge_outliers(const rules::Grid& grid, std::vector<std::vector<size_t>>& lists, Emit&& emit) {
  std::vector<size_t> next(lists.size(), 0);
  const size_t slab_tiles = grid.tiles[1] * grid.tiles[2];
  for (size_t tz = 0; tz < grid.tiles[0]; ++tz) {
    const size_t slab_begin = tz * slab_tiles, slab_end = slab_begin + slab_tiles;
    size_t in_slab = 0;
    for (size_t t = slab_begin; t < slab_end; ++t) in_slab += lists[t].size();
    if (in_slab == 0) continue;
    for (size_t z = tz * grid.tile; z < grid.n[0] && z < (tz + 1) * grid.tile; ++z)
      for (size_t y = 0; y < grid.n[1]; ++y) {
        const size_t row = z * grid.n[1] + y;
        const size_t first_tile = (tz * grid.tiles[1] + y / grid.tile) * grid.tiles[2];
        for (size_t t = first_tile; t < first_tile + grid.tiles[2]; ++t) {
          const std::vector<size_t>& list = lists[t];
          while (next[t] < list.size() && list[next[t]] / grid.n[2] == row) emit(list[next[t]++]);
        }
      }
    for (size_t t = slab_begin; t < slab_end; ++t) std::vector<size_t>().swap(lists[t]);
  }
}

// Appends the side stream (spline.hpp): header, level flags and steps (the
// coarse levels' flags 0 and steps[l] above the tile levels), anchors in
// anchor-grid C order (the root alone with coarse levels), then the outliers
// in index order (from the tiles' lists, which it frees).
template <typename T>
void write_side(const EncodeJob<T>& job, const T* steps, std::vector<std::vector<size_t>>& tile_outliers,
                Bytes& side) {
  const rules::Grid& grid = job.grid;
  const uint8_t* input = job.input;
  const size_t width = sizeof(T);
  side.clear();
  side.push_back(static_cast<uint8_t>(grid.rank));
  const unsigned levels = rules::side_level_count(grid, job.coarse);
  side.push_back(static_cast<uint8_t>(levels));
  append_le<uint32_t>(side, job.radius);
  for (unsigned level = levels; level-- > 0;) {
    side.push_back(level < grid_levels(grid) ? job.flags[level] : 0);
    append_le<T>(side, steps[level]);
  }
  const size_t stored_anchors = rules::stored_anchor_count(grid, job.coarse);
  for (size_t t = 0; t < stored_anchors; ++t) {
    const size_t g = rules::global_index(grid, rules::TileFrame(grid, t), 0, 0, 0);
    side.insert(side.end(), input + g * width, input + (g + 1) * width);
  }
  size_t outliers = 0;
  for (const std::vector<size_t>& list : tile_outliers) outliers += list.size();
  append_le<uint64_t>(side, outliers);
  const size_t index_width = rules::index_width_of(grid.elements);
  const size_t indices_at = side.size();
  side.resize(indices_at + outliers * (index_width + width));
  uint8_t* index_at = side.data() + indices_at;
  uint8_t* value_at = index_at + outliers * index_width;
  merge_outliers(grid, tile_outliers, [&](size_t index) {
    if (index_width == 4) store_le<uint32_t>(index_at, static_cast<uint32_t>(index));
    else store_le<uint64_t>(index_at, index);
    index_at += index_width;
    std::memcpy(value_at, input + index * width, width);
    value_at += width;
  });
}

template <typename T>
void encode_typed(ByteSpan in, ByteSpan fill_mask, const rules::Grid& grid, const Config& config, double eb,
                  Streams& out, const Executor& exec) {
  EncodeJob<T> job;
  job.grid = grid;
  job.input = in.data;
  job.fill_mask = fill_mask.size != 0 ? fill_mask.data : nullptr;
  job.radius = config.radius;
  job.avx2 = cpu_has_avx2();
  job.coarse = config.coarse_levels;
  const unsigned levels = rules::side_level_count(grid, job.coarse);
  T steps[rules::kMaxSideLevels];
  rules::level_steps<T>(config.step_bound > 0 ? config.step_bound : eb, config.alpha, config.beta, levels, steps);
  LevelQuantizer<T> quantizers[rules::kMaxSideLevels];
  for (unsigned l = 0; l < levels; ++l) quantizers[l] = rules::make_level_quantizer<T>(steps[l], config.radius, eb);
  for (unsigned l = 0; l < grid_levels(grid); ++l) job.quantizers[l] = quantizers[l];
  Anchors<T> anchors;  // the coarse levels run before the tuning: its sample tiles start from x' too
  encode_anchors<T>(grid, in.data, job.fill_mask, job.coarse, quantizers, anchors);
  job.anchors = anchors.values.data();
  job.anchor_codes = anchors.codes.data();
  if (config.tuning == Tuning::kRatioFirst && grid.tile_count > 0) tune_ratio_first(job, exec);
  GroupStreams<uint8_t> streams;
  streams.groups = rules::code_groups(grid);
  streams.code_bytes = config.code_bytes;
  streams.form = static_cast<unsigned>(config.code_form);
  streams.radius = config.radius;
  for (unsigned g = 0; g < kCodeGroups; ++g) {
    out.codes[g].resize(streams.groups.size[g] * config.code_bytes);
    streams.at[g] = out.codes[g].data();
  }
  std::vector<std::vector<size_t>> tile_outliers(grid.tile_count);
  const size_t buffer_size = rules::tile_buffer_size(grid.rank);
  exec.parallel_for(grid.tile_count, [&](size_t tile_index) {
    FloatStateGuard guard;
    thread_local std::vector<T> buffer;
    thread_local std::vector<uint16_t> codes;
    thread_local std::vector<uint8_t> fills;
    buffer.resize(buffer_size);
    codes.resize(buffer_size);
    if (job.fill_mask != nullptr) fills.resize(buffer_size);
    encode_tile(job, streams, tile_index, buffer.data(), codes.data(), fills.data(), tile_outliers[tile_index]);
  });
  write_side(job, steps, tile_outliers, out.side);
}

}  // namespace
}  // namespace detail

void encode(ByteSpan in, ByteSpan fill_mask, const std::vector<size_t>& dims, const Config& config, double eb,
            Streams& out, const Executor& exec) {
  if (const char* problem = rules::config_problem(config)) throw UsageError(problem);
  if (!(eb > 0) || !std::isfinite(eb)) throw UsageError("spline: the bound must be > 0 and finite");
  rules::Grid grid;
  if (rules::grid_of(dims, grid) != rules::GridCheck::kOk) throw UsageError("spline: dims must have 1 to 3 extents");
  if (in.size != grid.elements * config.width) throw UsageError("spline: input size does not match dims");
  if (fill_mask.size != 0 && fill_mask.size != (grid.elements + 7) / 8)
    throw UsageError("spline: the fill mask must have one bit per element");
  if (config.width == 4) detail::encode_typed<float>(in, fill_mask, grid, config, eb, out, exec);
  else detail::encode_typed<double>(in, fill_mask, grid, config, eb, out, exec);
}

}  // namespace fz::spline
