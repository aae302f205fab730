// CPU spline decoder (stream format: spline.hpp).
//
// 0. The three code groups go back to element order (groups_cpu.hpp), in
//    the offset form, after their sizes are checked.
// 1. Validate everything before writing: the side stream's sizes and
//    fields, the outlier list (strictly increasing, < N, never an anchor),
//    and every code (0 exactly at anchors and outliers, otherwise < 2R), in
//    one walk in element order beside the outlier list.
// 2. Scatter anchors and outliers (their exact bits) into the output.
// 3. Rebuild the tiles in parallel with the encoder's arithmetic
//    (tile_cpu.hpp, spline_rules.hpp). A tile reads the codes of all the
//    points it computes and writes only those it owns with a nonzero code;
//    at code 0 it reads the scattered value, which no tile writes, so tiles
//    never race.
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "spline/spline.hpp"
#include "spline/groups_cpu.hpp"
#include "spline/spline_rules.hpp"
#include "spline/tile_cpu.hpp"

namespace fz::spline {
namespace {

using detail::TileFrame;

template <typename T>
struct DecodeJob {
  rules::Grid grid;
  const uint8_t* codes = nullptr;
  unsigned code_bytes = 2;
  uint32_t radius = 0;
  uint8_t flags[rules::kMaxLevels] = {};
  T steps[rules::kMaxLevels] = {};
  uint8_t* out = nullptr;

  uint32_t code_at(size_t g) const { return code_bytes == 1 ? codes[g] : load_le<uint16_t>(codes + 2 * g); }
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
};

template <typename T>
Side parse_side(ByteSpan side, DecodeJob<T>& job) {
  const rules::Grid& grid = job.grid;
  const size_t width = sizeof(T);
  require_format(side.size >= 6, "spline: side stream too short");
  require_format(side.data[0] == grid.rank, "spline: rank does not match dims");
  const unsigned levels = rules::level_count(grid.rank);
  require_format(side.data[1] == levels, "spline: level count does not match the rank");
  job.radius = load_le<uint32_t>(side.data + 2);
  require_format(job.radius >= 1 && job.radius <= rules::max_radius(job.code_bytes), "spline: radius out of range");
  const rules::SideLayout layout = rules::side_layout(grid.rank, width, grid.tile_count);
  require_format(side.size >= layout.indices_at, "spline: side stream too short");
  for (unsigned k = 0; k < levels; ++k) {
    const uint8_t* at = side.data + layout.levels_at + k * layout.level_bytes;
    const unsigned level = levels - 1 - k;  // stored coarsest first
    job.flags[level] = at[0];
    require_format(rules::flags_are_valid(at[0]), "spline: unknown level flags");
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

// Code 0 exactly at anchors and outliers (an outlier at an anchor is
// malformed), every other code below 2R, every outlier consumed.
template <typename T>
void check_codes(const DecodeJob<T>& job, const Side& side) {
  const rules::Grid& grid = job.grid;
  const uint32_t limit = 2 * job.radius;
  size_t next = 0;
  size_t next_index = side.outliers > 0 ? side.index(0) : grid.elements;
  size_t g = 0;
  for (size_t z = 0; z < grid.n[0]; ++z)
    for (size_t y = 0; y < grid.n[1]; ++y) {
      const bool anchor_row = z % grid.tile == 0 && y % grid.tile == 0;
      for (size_t x = 0; x < grid.n[2]; ++x, ++g) {
        const uint32_t code = job.code_at(g);
        const bool listed = g == next_index;
        if (listed) {
          ++next;
          next_index = next < side.outliers ? side.index(next) : grid.elements;
        }
        if (anchor_row && x % grid.tile == 0) {
          require_format(!listed, "spline: outlier at an anchor");
          require_format(code == 0, "spline: nonzero code at an anchor");
        } else if (listed) {
          require_format(code == 0, "spline: nonzero code at an outlier");
        } else {
          require_format(code != 0 && code < limit, "spline: code 0 or out of range at a predicted point");
        }
      }
    }
}

template <typename T>
void decode_tile(const DecodeJob<T>& job, size_t tile_index, T* buffer) {
  const rules::Grid& grid = job.grid;
  const TileFrame frame(grid, tile_index);
  detail::for_each_corner(grid, frame, [&](size_t slot, size_t z, size_t y, size_t x) {
    buffer[slot] = rules::prediction_value(job.out_at(detail::global_index(grid, frame, z, y, x)));
  });
  const int32_t radius = static_cast<int32_t>(job.radius);
  for (unsigned level = rules::level_count(grid.rank); level-- > 0;) {
    const T step = job.steps[level];
    detail::run_level(grid, frame, buffer, size_t{1} << level, job.flags[level],
                      [&](T* at, T p, size_t z, size_t y, size_t x) {
                        const size_t g = detail::global_index(grid, frame, z, y, x);
                        const uint32_t code = job.code_at(g);
                        if (code == 0) {
                          *at = rules::prediction_value(job.out_at(g));
                          return;
                        }
                        *at = rules::reconstruct(p, static_cast<int32_t>(code) - radius, step);
                        if (detail::owns(grid, z, y, x)) store_le<T>(job.out + g * sizeof(T), *at);
                      });
  }
}

template <typename T>
void decode_typed(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const rules::Grid& grid,
                  const CodeFormat& format, Bytes& out, const Executor& exec) {
  DecodeJob<T> job;
  job.grid = grid;
  job.code_bytes = format.code_bytes;
  const Side parsed = parse_side(side, job);
  const rules::CodeGroups groups = rules::code_groups(grid);
  for (unsigned g = 0; g < kCodeGroups; ++g)
    require_format(codes[g].size == groups.size[g] * format.code_bytes, "spline: a code stream's size does not match dims");
  Bytes element_codes(grid.elements * format.code_bytes);
  detail::ungroup_codes(grid, codes, format, job.radius, element_codes.data(), exec);
  job.codes = element_codes.data();
  check_codes(job, parsed);
  const size_t width = sizeof(T);
  out.assign(grid.elements * width, 0);
  job.out = out.data();
  size_t a = 0;
  for (size_t z = 0; z < grid.n[0]; z += grid.tile)
    for (size_t y = 0; y < grid.n[1]; y += grid.tile)
      for (size_t x = 0; x < grid.n[2]; x += grid.tile, ++a) {
        const size_t g = (z * grid.n[1] + y) * grid.n[2] + x;
        std::memcpy(job.out + g * width, parsed.anchors + a * width, width);
      }
  for (size_t k = 0; k < parsed.outliers; ++k)
    std::memcpy(job.out + parsed.index(k) * width, parsed.values + k * width, width);
  exec.parallel_for(grid.tile_count, [&](size_t tile_index) {
    FloatStateGuard guard;
    thread_local std::vector<T> buffer;
    buffer.resize(TileFrame(grid, tile_index).buffer_size);
    decode_tile(job, tile_index, buffer.data());
  });
}

}  // namespace

void decode(const ByteSpan (&codes)[kCodeGroups], ByteSpan side, const std::vector<size_t>& dims,
            const CodeFormat& format, Bytes& out, const Executor& exec) {
  if (format.width != 4 && format.width != 8) throw UsageError("spline: width must be 4 or 8");
  if (format.code_bytes != 1 && format.code_bytes != 2) throw UsageError("spline: code_bytes must be 1 or 2");
  if (format.code_form != CodeForm::kOffset && format.code_form != CodeForm::kSigned)
    throw UsageError("spline: unknown code form");
  rules::Grid grid;
  if (rules::grid_of(dims, grid) != rules::GridCheck::kOk) throw UsageError("spline: dims must have 1 to 3 extents");
  if (format.width == 4) decode_typed<float>(codes, side, grid, format, out, exec);
  else decode_typed<double>(codes, side, grid, format, out, exec);
}

}  // namespace fz::spline
