// What the LORENZO CUDA encoder and decoder share on the host: launch
// geometry (tiles, row warps, stride grids), the scratch alignment, and the
// checks of their arguments (lorenzo_rules.hpp's rules, shared with the CPU,
// as a yes/no for cudaErrorInvalidValue).
#pragma once

#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/words_cuda.cuh"
#include "lorenzo/lorenzo.hpp"
#include "lorenzo/lorenzo_rules.hpp"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

constexpr unsigned kThreads = 256;
constexpr unsigned kRounds = 8;
constexpr size_t kTile = size_t{kThreads} * kRounds;
constexpr size_t kHeaderBytes = 24;
constexpr size_t kAlign = 256;
// A column kernel (one thread walks one column) is used for the y and z sums
// when at least this many columns exist; fewer take a scan by key.
constexpr size_t kMinColumns = 8192;

// dims as a shape; false where the CPU throws UsageError.
inline bool make_shape(const std::vector<size_t>& dims, Shape& s) {
  return rules::shape_of(dims, s) == rules::ShapeCheck::kOk;
}

// The width, the shape and the config: the CPU's UsageError checks.
inline bool arguments_ok(const std::vector<size_t>& dims, const Config& config, Shape& s) {
  return config_is_decodable(config) && make_shape(dims, s);
}

inline size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
inline size_t tiles_of(size_t n) { return (n + kTile - 1) / kTile; }
// The encoder's row kernel (row_codes): one warp per (plane, segment of
// rows), lane l holding x = l + 32j of a row; for rows of at most
// kMaxRowLength elements.
constexpr size_t kMaxRowLength = 1024;
constexpr unsigned kRowWarps = kThreads / 32;

// Rows per segment: about 8192 warps over the chunk (every SM busy), each
// still walking several rows.
inline size_t rows_per_segment(const Shape& s) {
  size_t rows = s.nz * s.ny / 8192;
  if (rows < 4) rows = 4;
  if (rows > 64) rows = 64;
  return rows < s.ny ? rows : s.ny;
}

inline bool decodes_by_rows(const Shape& s) { return s.n > 0 && s.nx <= kMaxRowLength; }

// Rows that the kernels with each lane's elements side by side take
// (lanes_cuda.cuh: the encoder's one-pass front): 32 to 512 elements (256 of
// 8 bytes). Narrower rows leave most lanes idle; a lane's 16
// words (8 of 8 bytes) keep their registers and shared memory within bounds.
constexpr size_t kLaneRowsMin = 32;
inline size_t lane_rows_max(unsigned width) { return width == 4 ? 512 : 256; }

// A walk down the planes cut into depth segments, for `y_blocks` blocks a
// plane: about `target` blocks in all, at most `most` segments (so that each
// is deep enough), none of them empty.
struct DepthSplit {
  size_t depth, segments;
};
inline DepthSplit split_depth(size_t nz, size_t y_blocks, size_t target, size_t most) {
  size_t segments = (target + y_blocks - 1) / y_blocks;
  if (segments > most) segments = most;
  if (segments < 1) segments = 1;
  DepthSplit d;
  d.depth = (nz + segments - 1) / segments;
  d.segments = (nz + d.depth - 1) / d.depth;
  return d;
}

// The decoder's tiles (decode_rows_kernels_cuda.cuh): strips of kStripRows
// rows (kRowsPerWarp a warp of kTileWarps) by depth segments of `depth`
// planes. About kTargetTiles tiles (blocks) fill the GPU; a segment is at
// least kMinDepth planes deep, since the depth sums' traffic is 1/depth of
// the data's (read and written four times).
constexpr unsigned kTileWarps = 8;
constexpr unsigned kRowsPerWarp = 1;
constexpr size_t kStripRows = kRowsPerWarp * kTileWarps;
constexpr size_t kTargetTiles = 512;
constexpr size_t kMinDepth = 16;
struct Tiling {
  size_t strips, depth, segments;
};
inline Tiling tiling_of(const Shape& s) {
  Tiling t;
  t.strips = (s.ny + kStripRows - 1) / kStripRows;
  const DepthSplit d = split_depth(s.nz, t.strips, kTargetTiles, s.nz / kMinDepth);
  t.depth = d.depth;
  t.segments = d.segments;
  return t;
}

// A grid-stride launch: enough blocks to fill the GPU, no more.
inline unsigned stride_grid(size_t items) {
  const size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 8192 ? (blocks > 0 ? blocks : 1) : 8192);
}

inline size_t exclusive_scan_bytes(size_t items) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                static_cast<uint64_t*>(nullptr), static_cast<uint64_t>(items));
  return bytes;
}

inline unsigned blocks_for(size_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace fz::lorenzo::cuda::detail
