// CPU spline encoder (stream format: spline.hpp).
//
// 1. The per-level flags: all 0 (kOff) or tuned on a sample of tiles
//    (tune_cpu.cpp).
// 2. Every tile, in parallel, in a private working buffer: anchors, then the
//    levels coarsest to finest; each point is predicted from the buffer,
//    quantized with the strict check, and its code written if the tile owns
//    it (outliers get code 0). Tiles write disjoint codes, so the bytes do not
//    depend on the thread count.
// 3. One pass in element order gathers the outliers (code 0, not an anchor)
//    with their exact bits, so the list is in index order without a sort.
// 4. The codes, in element order until here, go to their three group
//    streams (groups_cpu.hpp).
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "spline/encode_cpu.hpp"
#include "spline/groups_cpu.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline {
namespace detail {

template <typename T>
void encode_tile(const EncodeJob<T>& job, size_t tile_index, T* buffer) {
  const rules::Grid& grid = job.grid;
  const TileFrame frame(grid, tile_index);
  load_anchors(job, frame, buffer);
  uint8_t* codes = job.codes;
  const unsigned code_bytes = job.code_bytes;
  for (unsigned level = grid_levels(grid); level-- > 0;) {
    const LevelQuantizer<T>& lq = job.quantizers[level];
    run_level(grid, frame, buffer, size_t{1} << level, job.flags[level],
              [&](T* at, T p, size_t z, size_t y, size_t x) {
                const size_t g = global_index(grid, frame, z, y, x);
                int32_t q;
                const uint32_t code = rules::quantize(job.input_at(g), p, lq, *at, q);
                if (!owns(grid, z, y, x)) return;
                if (code_bytes == 1) codes[g] = static_cast<uint8_t>(code);
                else store_le<uint16_t>(codes + 2 * g, static_cast<uint16_t>(code));
              });
  }
}

namespace {

// Appends the side stream (spline.hpp): header, level flags and steps,
// anchors in anchor-grid C order, then the outliers in index order.
template <typename T>
void write_side(const EncodeJob<T>& job, const uint8_t* input, Bytes& side) {
  const rules::Grid& grid = job.grid;
  const size_t width = sizeof(T);
  side.clear();
  side.push_back(static_cast<uint8_t>(grid.rank));
  const unsigned levels = grid_levels(grid);
  side.push_back(static_cast<uint8_t>(levels));
  append_le<uint32_t>(side, job.radius);
  for (unsigned level = levels; level-- > 0;) {
    side.push_back(job.flags[level]);
    append_le<T>(side, job.quantizers[level].step);
  }
  for (size_t z = 0; z < grid.n[0]; z += grid.tile)
    for (size_t y = 0; y < grid.n[1]; y += grid.tile)
      for (size_t x = 0; x < grid.n[2]; x += grid.tile) {
        const size_t g = (z * grid.n[1] + y) * grid.n[2] + x;
        side.insert(side.end(), input + g * width, input + (g + 1) * width);
      }
  // Outliers: code 0 at a point that is not an anchor.
  std::vector<size_t> outliers;
  size_t g = 0;
  for (size_t z = 0; z < grid.n[0]; ++z)
    for (size_t y = 0; y < grid.n[1]; ++y) {
      const bool anchor_row = z % grid.tile == 0 && y % grid.tile == 0;
      for (size_t x = 0; x < grid.n[2]; ++x, ++g) {
        const bool zero = job.code_bytes == 1 ? job.codes[g] == 0 : load_le<uint16_t>(job.codes + 2 * g) == 0;
        if (zero && !(anchor_row && x % grid.tile == 0)) outliers.push_back(g);
      }
    }
  append_le<uint64_t>(side, outliers.size());
  const size_t index_width = rules::index_width_of(grid.elements);
  for (size_t index : outliers) {
    if (index_width == 4) append_le<uint32_t>(side, static_cast<uint32_t>(index));
    else append_le<uint64_t>(side, index);
  }
  for (size_t index : outliers) side.insert(side.end(), input + index * width, input + (index + 1) * width);
}

template <typename T>
void encode_typed(ByteSpan in, const rules::Grid& grid, const Config& config, double eb, Streams& out,
                  const Executor& exec) {
  EncodeJob<T> job;
  job.grid = grid;
  job.input = in.data;
  job.radius = config.radius;
  job.code_bytes = config.code_bytes;
  const unsigned levels = grid_levels(grid);
  T steps[rules::kMaxLevels];
  rules::level_steps<T>(eb, config.alpha, config.beta, levels, steps);
  for (unsigned l = 0; l < levels; ++l) job.quantizers[l] = rules::make_level_quantizer<T>(steps[l], config.radius, eb);
  Bytes element_codes(grid.elements * config.code_bytes, 0);
  job.codes = element_codes.data();
  if (config.tuning == Tuning::kRatioFirst && grid.tile_count > 0) tune_ratio_first(job, exec);
  exec.parallel_for(grid.tile_count, [&](size_t tile_index) {
    FloatStateGuard guard;
    thread_local std::vector<T> buffer;
    buffer.resize(TileFrame(grid, tile_index).buffer_size);
    encode_tile(job, tile_index, buffer.data());
  });
  write_side(job, in.data, out.side);
  group_codes(grid, job.codes, CodeFormat{config.width, config.code_bytes, config.code_form}, config.radius, out.codes,
              exec);
}

}  // namespace

template void encode_tile<float>(const EncodeJob<float>&, size_t, float*);
template void encode_tile<double>(const EncodeJob<double>&, size_t, double*);

}  // namespace detail

void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double eb, Streams& out,
            const Executor& exec) {
  if (const char* problem = rules::config_problem(config)) throw UsageError(problem);
  if (!(eb > 0) || !std::isfinite(eb)) throw UsageError("spline: the bound must be > 0 and finite");
  rules::Grid grid;
  if (rules::grid_of(dims, grid) != rules::GridCheck::kOk) throw UsageError("spline: dims must have 1 to 3 extents");
  if (in.size != grid.elements * config.width) throw UsageError("spline: input size does not match dims");
  if (config.width == 4) detail::encode_typed<float>(in, grid, config, eb, out, exec);
  else detail::encode_typed<double>(in, grid, config, eb, out, exec);
}

}  // namespace fz::spline
