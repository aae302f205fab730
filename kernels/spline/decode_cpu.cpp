// CPU spline decoder (stream format: spline.hpp).
//
// 1. Check the side stream before anything depends on it: its sizes and
//    fields, the outlier list (strictly increasing, < N).
// 2. Scatter the stored anchors (all, or the root alone with coarse levels)
//    and the outliers (their exact bits) into the output; with coarse levels,
//    decode the other anchors (coarse_cpu.cpp).
// 3. Rebuild the tiles in parallel with the encoder's arithmetic
//    (tile_cpu.hpp, spline_rules.hpp). A tile reads the codes of all the
//    points it computes straight from the group streams (groups_cpu.hpp),
//    every one below 2R, and checks the rows it owns (each element once):
//    code 0 at its stored anchor, and the other code-0 points of a row exactly the
//    listed outliers in that row (found by binary search), counted. At code
//    0 it reads the scattered value, which no tile writes; it writes only
//    the points it owns with a nonzero code, so tiles never race.
// 4. The tiles matched all K listed outliers: then code 0 is exactly at the
//    stored anchors and the outliers (an outlier listed at a stored anchor or at a
//    nonzero code is never matched). Any failed check throws here.
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "spline/spline.hpp"
#include "spline/coarse_cpu.hpp"
#include "spline/groups_cpu.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline {
namespace {

using detail::TileFrame;

template <typename T>
struct DecodeJob {
  rules::Grid grid;
  detail::GroupStreams<const uint8_t> codes;  // with the radius, from the side stream
  uint8_t flags[rules::kMaxSideLevels] = {};
  T steps[rules::kMaxSideLevels] = {};
  uint8_t* out = nullptr;
  bool coarse = false;
  const T* anchors = nullptr;  // what predictions read at each anchor (coarse_cpu.hpp)

  T out_at(size_t g) const { return load_le<T>(out + g * sizeof(T)); }
};

// The side stream, parsed and checked (spline.hpp); the spans point into it.
struct Side {
  size_t outliers = 0;
  size_t index_width = 4;
  const uint8_t* anchors = nullptr;
  const uint8_t* indices = nullptr;
  const uint8_t* values = nullptr;

  size_t index(size_t k) const {
    return index_width == 4 ? load_le<uint32_t>(indices + 4 * k) : static_cast<size_t>(load_le<uint64_t>(indices + 8 * k));
  }
  // The first k whose index is >= g (the indices are strictly increasing).
  size_t first_at_or_after(size_t g) const {
    size_t lo = 0, hi = outliers;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (index(mid) < g) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
};

template <typename T>
Side parse_side(ByteSpan side, DecodeJob<T>& job) {
  const rules::Grid& grid = job.grid;
  const size_t width = sizeof(T);
  require_format(side.size >= 6, "spline: side stream too short");
  require_format(side.data[0] == grid.rank, "spline: rank does not match dims");
  const unsigned levels = rules::side_level_count(grid, job.coarse);
  require_format(side.data[1] == levels, "spline: level count does not match the rank and dims");
  job.codes.radius = load_le<uint32_t>(side.data + 2);
  require_format(job.codes.radius >= 1 && job.codes.radius <= rules::max_radius(job.codes.code_bytes),
                 "spline: radius out of range");
  const unsigned tile_levels = rules::level_count(grid.rank);
  const rules::SideLayout layout = rules::side_layout(grid.rank, width, rules::stored_anchor_count(grid, job.coarse),
                                                      levels - tile_levels);
  require_format(side.size >= layout.indices_at, "spline: side stream too short");
  for (unsigned k = 0; k < levels; ++k) {
    const uint8_t* at = side.data + layout.levels_at + k * layout.level_bytes;
    const unsigned level = levels - 1 - k;  // stored coarsest first
    job.flags[level] = at[0];
    require_format(rules::flags_are_valid(at[0]) && (level < tile_levels || at[0] == 0),
                   "spline: unknown level flags");  // the coarse levels' are 0
    job.steps[level] = load_le<T>(at + 1);
    require_format(rules::step_is_valid(job.steps[level]), "spline: level step not positive, normal and finite");
  }
  Side parsed;
  parsed.anchors = side.data + layout.anchors_at;
  parsed.index_width = rules::index_width_of(grid.elements);
  const uint64_t count = load_le<uint64_t>(side.data + layout.count_at);
  const size_t rest = side.size - layout.indices_at;
  // The count is checked against the stream before anything depends on it.
  require_format(count <= rest / (parsed.index_width + width), "spline: outlier count exceeds the side stream");
  parsed.outliers = static_cast<size_t>(count);
  require_format(rest == parsed.outliers * (parsed.index_width + width), "spline: side stream size mismatch");
  parsed.indices = side.data + layout.indices_at;
  parsed.values = parsed.indices + parsed.outliers * parsed.index_width;
  size_t previous = 0;
  for (size_t k = 0; k < parsed.outliers; ++k) {
    const size_t index = parsed.index(k);
    require_format(index < grid.elements, "spline: outlier index out of range");
    require_format(k == 0 || index > previous, "spline: outlier indices not strictly increasing");
    previous = index;
  }
  return parsed;
}

// What a tile's checks found (step 3): how many listed outliers it matched,
// and whether its codes were valid (its stored anchor's 0, every code it read
// below 2R, the code-0 points it owns but its anchor exactly the listed
// outliers in their rows).
struct TileCheck {
  size_t matched = 0;
  bool valid = true;
};

// Rows of a tile's region (z, y): at most 17 x 17 (3-D); 65 x 1 in 2-D, 1 in 1-D.
constexpr size_t kMaxRegionRows = 17 * 17;

// Decodes one tile: `buffer` and `codes` have its buffer_size slots.
template <typename T>
TileCheck decode_tile(const DecodeJob<T>& job, const Side& side, size_t tile_index, T* buffer, uint16_t* codes) {
  const rules::Grid& grid = job.grid;
  const TileFrame frame(grid, tile_index);
  const size_t rows = detail::owned_extent(grid, frame, 0), columns = detail::owned_extent(grid, frame, 1);
  const size_t width = detail::owned_extent(grid, frame, 2);
  // The codes of every point the tile computes, checked below 2R (a code
  // the tile does not own is its owner's to check, but any code of a valid
  // stream is below 2R); at code 0 (anchors and outliers) the scattered
  // exact value, as predictions read it, and in an owned row the code-0
  // points but the anchor matched with the listed outliers of that row.
  bool has_zero[kMaxRegionRows];
  TileCheck check;
  const bool stored_anchor = !job.coarse || tile_index == 0;  // local (0, 0, 0): code 0, not listed
  const uint32_t limit = 2 * job.codes.radius;
  for (size_t z = 0; z < frame.extent[0]; ++z)
    for (size_t y = 0; y < frame.extent[1]; ++y) {
      const size_t slot = frame.slot(z, y, 0);
      const detail::CodeRowStats stats = detail::read_code_row(grid, job.codes, frame.origin[0] + z,
                                                               frame.origin[1] + y, frame.origin[2], frame.extent[2],
                                                               codes + slot);
      check.valid &= stats.largest < limit;
      has_zero[z * frame.extent[1] + y] = stats.zeros != 0;
      if (stats.zeros == 0) continue;
      const size_t base = rules::global_index(grid, frame, z, y, 0);
      for (size_t x = 0; x < frame.extent[2]; ++x)
        if (codes[slot + x] == 0) buffer[slot + x] = rules::prediction_value(job.out_at(base + x));
      if (z >= rows || y >= columns) continue;
      const size_t first = side.first_at_or_after(base);
      size_t k = first;
      for (size_t x = z == 0 && y == 0 && stored_anchor ? 1 : 0; x < width; ++x)
        if (codes[slot + x] == 0) {
          check.valid &= k < side.outliers && side.index(k) == base + x;
          ++k;
        }
      check.valid &= k >= side.outliers || side.index(k) >= base + width;  // no listed outlier left in the row
      check.matched += k - first;
    }
  check.valid &= !stored_anchor || codes[0] == 0;
  if (!check.valid) return check;
  detail::for_each_corner(grid, frame, [&](size_t slot, size_t z, size_t y, size_t x) {
    buffer[slot] = job.anchors[rules::corner_anchor(grid, frame, z, y, x)];
  });
  const int32_t radius = static_cast<int32_t>(job.codes.radius);
  for (unsigned level = rules::level_count(grid.rank); level-- > 0;) {
    const T step = job.steps[level];
    detail::run_level(
        grid, frame, level, job.flags[level],
        [&](const auto& row) {
          for (size_t k = 0; k < row.count; ++k) {
            const int32_t code = codes[row.slot(k)];
            if (code != 0) buffer[row.slot(k)] = rules::reconstruct(row.predict(buffer, k), code - radius, step);
          }
        },
        [] {});
  }
  // The owned points with a nonzero code; a row without code 0 in one copy.
  for (size_t z = 0; z < rows; ++z)
    for (size_t y = 0; y < columns; ++y) {
      const size_t slot = frame.slot(z, y, 0);
      uint8_t* at = job.out + rules::global_index(grid, frame, z, y, 0) * sizeof(T);
      if (!has_zero[z * frame.extent[1] + y]) {
        std::memcpy(at, buffer + slot, width * sizeof(T));  // little-endian hosts only (common/bytes.hpp)
        continue;
      }
      for (size_t x = 0; x < width; ++x)
        if (codes[slot + x] != 0) store_le<T>(at + x * sizeof(T), buffer[slot + x]);
    }
  return check;
}

// Decodes into `out` (grid.elements x sizeof(T) bytes, any content: every
// element is written when the streams are valid, and they are checked), or,
// when `owned` is given, into it, sized only once the streams' sizes are
// checked (a hostile frame cannot make it allocate its claimed size).
template <typename T>
void decode_typed(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const rules::Grid& grid,
                  const CodeFormat& format, uint8_t* out, Bytes* owned, const Executor& exec) {
  DecodeJob<T> job;
  job.grid = grid;
  job.codes.groups = rules::code_groups(grid);
  job.codes.code_bytes = format.code_bytes;
  job.codes.form = static_cast<unsigned>(format.code_form);
  job.coarse = format.coarse_levels;
  const Side parsed = parse_side(side, job);
  for (unsigned g = 0; g < kCodeGroups; ++g) {
    require_format(codes[g].size == job.codes.groups.size[g] * format.code_bytes,
                   "spline: a code stream's size does not match dims");
    job.codes.at[g] = codes[g].data;
  }
  const size_t width = sizeof(T);
  if (owned) {
    owned->assign(grid.elements * width, 0);
    out = owned->data();
  }
  job.out = out;
  const size_t stored_anchors = rules::stored_anchor_count(grid, job.coarse);
  for (size_t a = 0; a < stored_anchors; ++a) {
    const size_t g = rules::global_index(grid, TileFrame(grid, a), 0, 0, 0);
    std::memcpy(job.out + g * width, parsed.anchors + a * width, width);
  }
  for (size_t k = 0; k < parsed.outliers; ++k)
    std::memcpy(job.out + parsed.index(k) * width, parsed.values + k * width, width);
  std::vector<T> anchors;
  detail::decode_anchors<T>(grid, job.codes, job.steps, job.coarse, job.out, anchors);
  job.anchors = anchors.data();
  std::vector<TileCheck> checks(grid.tile_count);
  const size_t buffer_size = rules::tile_buffer_size(grid.rank);
  exec.parallel_for(grid.tile_count, [&](size_t tile_index) {
    FloatStateGuard guard;
    thread_local std::vector<T> buffer;
    thread_local std::vector<uint16_t> tile_codes;
    buffer.resize(buffer_size);
    tile_codes.resize(buffer_size);
    checks[tile_index] = decode_tile(job, parsed, tile_index, buffer.data(), tile_codes.data());
  });
  size_t matched = 0;
  for (const TileCheck& check : checks) {
    require_format(check.valid, "spline: a code out of range, or code 0 not exactly at the anchors and outliers");
    matched += check.matched;
  }
  require_format(matched == parsed.outliers, "spline: a listed outlier at a point of nonzero code");
}

}  // namespace

namespace {

rules::Grid checked_grid(const std::vector<size_t>& dims, const CodeFormat& format) {
  if (format.width != 4 && format.width != 8) throw UsageError("spline: width must be 4 or 8");
  if (format.code_bytes != 1 && format.code_bytes != 2) throw UsageError("spline: code_bytes must be 1 or 2");
  if (format.code_form != CodeForm::kOffset && format.code_form != CodeForm::kSigned &&
      format.code_form != CodeForm::kZigzag)
    throw UsageError("spline: unknown code form");
  rules::Grid grid;
  if (rules::grid_of(dims, grid) != rules::GridCheck::kOk) throw UsageError("spline: dims must have 1 to 3 extents");
  return grid;
}

void decode_grid(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const rules::Grid& grid,
                 const CodeFormat& format, uint8_t* out, Bytes* owned, const Executor& exec) {
  if (format.width == 4) decode_typed<float>(codes, side, grid, format, out, owned, exec);
  else decode_typed<double>(codes, side, grid, format, out, owned, exec);
}

}  // namespace

void decode(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const std::vector<size_t>& dims,
            const CodeFormat& format, Bytes& out, const Executor& exec) {
  const rules::Grid grid = checked_grid(dims, format);
  decode_grid(codes, side, grid, format, nullptr, &out, exec);
}

size_t decode_into(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const std::vector<size_t>& dims,
                   const CodeFormat& format, uint8_t* dst, size_t capacity, const Executor& exec) {
  const rules::Grid grid = checked_grid(dims, format);
  const size_t bytes = grid.elements * format.width;
  if (bytes > capacity) throw UsageError("spline: the output buffer is smaller than the chunk");
  decode_grid(codes, side, grid, format, dst, nullptr, exec);
  return bytes;
}

}  // namespace fz::spline
