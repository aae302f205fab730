// The anchors on the CPU (spline.hpp, "Coarse levels"): what the tiles start
// from. Without coarse levels every anchor is stored raw (its exact value,
// code 0); with them the anchors are predicted and quantized level by level
// over the anchor grid from the root (spline_coarse_rules.hpp), before any
// tile runs. The anchor grid has one point per tile (N / 4096 in 3-D), so
// one thread walks it. Encoder and decoder each have their half here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "spline/groups_cpu.hpp"
#include "spline/spline_rules.hpp"

namespace fz::spline::detail {

// The anchor grid's values as predictions read them (anchor-grid C order)
// and the anchors' codes (0 at the stored ones and the outliers).
template <typename T>
struct Anchors {
  std::vector<T> values;
  std::vector<uint16_t> codes;
};

// Encoder. `quantizers` by level l, 0 .. side_level_count(grid, coarse) - 1
// (the coarse levels' above the tile levels'); fill_mask or nullptr.
// Without coarse levels: the exact values, codes 0.
template <typename T>
void encode_anchors(const rules::Grid& grid, const uint8_t* input, const uint8_t* fill_mask, bool coarse,
                    const rules::LevelQuantizer<T>* quantizers, Anchors<T>& anchors);

// Decoder. `out` holds the scattered stored values (the anchors or the root,
// and the outliers); `steps` by level l as the encoder's; `codes` the
// group streams with the radius. Sets values only (a code 0 reads the
// scattered value; the tiles check the codes).
template <typename T>
void decode_anchors(const rules::Grid& grid, const GroupStreams<const uint8_t>& codes, const T* steps, bool coarse,
                    const uint8_t* out, std::vector<T>& values);

}  // namespace fz::spline::detail
