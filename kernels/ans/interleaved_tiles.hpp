// Stage type 15's tile tokenization walk (format: interleaved.hpp), the one
// loop both its CPU histogram (interleaved_format.cpp, tile_histograms) and
// its CPU encoder (interleaved_encode_cpu.cpp, the lanes' pairs) run, so the
// counts the tables come from and the pairs coded are the same by
// construction. Internal to kernels/ans.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ans/interleaved.hpp"
#include "common/bytes.hpp"

namespace fz::ans::interleaved_detail {

// Over the tiles of the n u16 (little-endian) symbols at `symbols`, tiles of
// kTileSymbols from the first: item(R, s) for each symbol s != m, R the
// copies of m before it in its tile; then tile_end(R) once per tile, R the
// tile's final run (0 when the tile ends with a symbol other than m). The
// caller splits R by its cap: R = a*C + b gives a pairs (C, ESC), then (b, s)
// for an item, or (b, ESC) for a tile's end when b > 0.
//
// Per tile, the positions of its symbols other than m are first gathered
// branch-free (pos[0] = -1, the position before the tile), so the loop over
// them has no data-dependent branch where m's share is near one half.
template <typename Item, typename TileEnd>
void walk_tiles(const uint8_t* symbols, size_t n, uint16_t mode, Item&& item, TileEnd&& tile_end) {
  int32_t pos[kTileSymbols + 1];
  for (size_t begin = 0; begin < n; begin += kTileSymbols) {
    const uint8_t* tile = symbols + 2 * begin;
    const int32_t len = static_cast<int32_t>(n - begin < kTileSymbols ? n - begin : kTileSymbols);
    pos[0] = -1;
    size_t k = 1;
    for (int32_t i = 0; i < len; ++i) {
      pos[k] = i;
      k += load_le<uint16_t>(tile + 2 * i) != mode;
    }
    for (size_t j = 1; j < k; ++j) {
      item(static_cast<uint32_t>(pos[j] - pos[j - 1] - 1), load_le<uint16_t>(tile + 2 * pos[j]));
    }
    tile_end(static_cast<uint32_t>(len - pos[k - 1] - 1));
  }
}

}  // namespace fz::ans::interleaved_detail
