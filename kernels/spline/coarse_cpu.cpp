// The anchors on the CPU (coarse_cpu.hpp): the coarse levels, coarsest
// first, each in the passes of spline_coarse_rules.hpp (coarse_pass_of); the
// points of a pass never read each other, so one thread visits them in
// order and the GPU in any order with the same values.
#include "spline/coarse_cpu.hpp"

#include "common/bytes.hpp"
#include "common/float_state.hpp"

namespace fz::spline::detail {
namespace {

// Calls visit(a, anchor, element, prediction) for every point of every
// coarse level, coarsest first, pass by pass; visit sets values[anchor].
template <typename T, typename Visit>
void walk_coarse_levels(const rules::Grid& grid, std::vector<T>& values, Visit&& visit) {
  for (unsigned m = rules::coarse_level_count(grid); m-- > 0;)
    for (int j = 0; j < 3; ++j) {
      const rules::CoarsePass pass = rules::coarse_pass_of(grid, m, j);
      for (size_t i = 0; i < pass.points; ++i) {
        size_t a[3];
        rules::coarse_point(pass, i, a);
        const size_t at = rules::anchor_of(grid, a);
        visit(m, a, at, rules::anchor_element(grid, a), rules::coarse_predict(values.data(), grid, pass, a, at));
      }
    }
}

}  // namespace

template <typename T>
void encode_anchors(const rules::Grid& grid, const uint8_t* input, const uint8_t* fill_mask, bool coarse,
                    const rules::LevelQuantizer<T>* quantizers, Anchors<T>& anchors) {
  FloatStateGuard guard;
  anchors.values.assign(grid.tile_count, T(0));
  anchors.codes.assign(grid.tile_count, 0);
  auto x_at = [&](size_t element) { return load_le<T>(input + element * sizeof(T)); };
  if (!coarse) {
    for (size_t t = 0; t < grid.tile_count; ++t) {
      const rules::TileFrame frame(grid, t);
      anchors.values[t] = rules::prediction_value(x_at(rules::global_index(grid, frame, 0, 0, 0)));
    }
    return;
  }
  if (grid.tile_count == 0) return;
  anchors.values[0] = rules::prediction_value(x_at(0));  // the root, stored
  const unsigned tile_levels = rules::level_count(grid.rank);
  walk_coarse_levels(grid, anchors.values, [&](unsigned m, const size_t(&)[3], size_t at, size_t element, T p) {
    const rules::LevelQuantizer<T>& lq = quantizers[tile_levels + m];
    T value;
    int32_t q;
    uint32_t code = rules::quantize(x_at(element), p, lq, value, q);
    if (fill_mask != nullptr && rules::is_fill(fill_mask, element)) rules::code_fill(p, lq, value, code, q);
    anchors.values[at] = value;
    anchors.codes[at] = static_cast<uint16_t>(code);
  });
}

template <typename T>
void decode_anchors(const rules::Grid& grid, const GroupStreams<const uint8_t>& codes, const T* steps, bool coarse,
                    const uint8_t* out, std::vector<T>& values) {
  FloatStateGuard guard;
  values.assign(grid.tile_count, T(0));
  auto out_at = [&](size_t element) { return rules::prediction_value(load_le<T>(out + element * sizeof(T))); };
  if (!coarse) {
    for (size_t t = 0; t < grid.tile_count; ++t)
      values[t] = out_at(rules::global_index(grid, rules::TileFrame(grid, t), 0, 0, 0));
    return;
  }
  if (grid.tile_count == 0) return;
  values[0] = out_at(0);
  const unsigned tile_levels = rules::level_count(grid.rank);
  const int32_t radius = static_cast<int32_t>(codes.radius);
  walk_coarse_levels(grid, values, [&](unsigned m, const size_t(&a)[3], size_t at, size_t element, T p) {
    uint16_t code;
    read_code_row(grid, codes, a[0] * grid.tile, a[1] * grid.tile, a[2] * grid.tile, 1, &code);
    values[at] = code == 0 ? out_at(element) : rules::reconstruct(p, code - radius, steps[tile_levels + m]);
  });
}

template void encode_anchors<float>(const rules::Grid&, const uint8_t*, const uint8_t*, bool,
                                    const rules::LevelQuantizer<float>*, Anchors<float>&);
template void encode_anchors<double>(const rules::Grid&, const uint8_t*, const uint8_t*, bool,
                                     const rules::LevelQuantizer<double>*, Anchors<double>&);
template void decode_anchors<float>(const rules::Grid&, const GroupStreams<const uint8_t>&, const float*, bool,
                                    const uint8_t*, std::vector<float>&);
template void decode_anchors<double>(const rules::Grid&, const GroupStreams<const uint8_t>&, const double*, bool,
                                     const uint8_t*, std::vector<double>&);

}  // namespace fz::spline::detail
