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
template <typename Item, typename TileEnd>
void walk_tiles(const uint8_t* symbols, size_t n, uint16_t mode, Item&& item, TileEnd&& tile_end) {
  for (size_t begin = 0; begin < n; begin += kTileSymbols) {
    const size_t end = n - begin < kTileSymbols ? n : begin + kTileSymbols;
    uint32_t run = 0;
    for (size_t i = begin; i < end; ++i) {
      const uint16_t s = load_le<uint16_t>(symbols + 2 * i);
      if (s == mode) {
        ++run;
      } else {
        item(run, s);
        run = 0;
      }
    }
    tile_end(run);
  }
}

}  // namespace fz::ans::interleaved_detail
