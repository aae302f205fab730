// Kernels of the SPLINE CUDA decoder (dispatch: decode_cuda.cu; format:
// spline.hpp; checks: decode_cpu.cpp's, each failed one ORing its
// DecodeStatus bit into the status word). Internal to decode_cuda.cu.
//   read_header      one thread: the side stream's fields and sizes;
//   check_outliers   one thread per listed outlier: index < N, strictly
//                    increasing, code 0 (read from its group), not an anchor;
//   scatter          the stored anchors (all, or the root alone with coarse
//                    levels) and outliers (their exact bits) into the output;
//   decode_coarse    with coarse levels (coarse_cuda.cuh), one block: the
//                    anchors' values, which the tiles' corners read;
//   decode_tiles     one block per tile: the codes of every point the tile
//                    computes read from their group streams (groups_cuda.cuh's
//                    row places) into shared memory, and checked at the points it owns (each element
//                    once): code 0 at anchors, otherwise below 2R, the zero
//                    codes at points that are not anchors counted; then the
//                    encoder's arithmetic: code 0 reads the scattered value,
//                    no tile writes it; a tile writes only the points it owns
//                    with a nonzero code, so tiles never race;
//   check_zero_count one thread: the zero count is K. With the outlier checks
//                    the listed outliers are then exactly the predicted points
//                    of code 0 (K distinct ones among that many),
//                    decode_cpu.cpp's "code 0 exactly at anchors and outliers".
// A bad header stops every later kernel (header.ok = 0): nothing reads past
// what the header's sizes promise. Later checks only report; the kernels stay
// inside their buffers whatever the codes and indices say.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cstddef>
#include <cstdint>

#include "spline/spline_cuda.hpp"
#include "spline/coarse_cuda.cuh"
#include "spline/groups_cuda.cuh"
#include "spline/tiles_cuda.cuh"

namespace fz::spline::cuda::detail {

constexpr unsigned kCheckThreads = 256;
// Resident decode blocks per multiprocessor (a register cap, tiles_cuda.cuh's
// kTileBlocks): float32 five, 48 registers (six would spill, at 40).
template <typename T>
constexpr unsigned kDecodeBlocks = sizeof(T) == 4 ? 5 : 4;

template <typename T>
struct DecodeHeader {
  uint32_t ok;        // every header check passed: the fields below may be used
  uint32_t radius;
  uint64_t outliers;  // K (0 unless ok)
  uint8_t flags[kMaxLevels + kMaxDeviceCoarseLevels];  // by level l: the tile levels', then the coarse ones'
  T steps[kMaxLevels + kMaxDeviceCoarseLevels];
};

// Step validity without numeric_limits (device code): positive, normal, finite.
template <typename T>
__device__ __forceinline__ bool device_step_is_valid(T step) {
  using Traits = lorenzo::rules::Traits<T>;
  Bits<T> bits;
  memcpy(&bits, &step, sizeof(T));
  const Bits<T> exponent = (bits >> Traits::kMantissaBits) & Traits::kExponentMask;
  const bool negative = (bits >> (8 * sizeof(T) - 1)) != 0;
  return !negative && exponent != 0 && exponent != Traits::kExponentMask;
}

// decode_cpu.cpp's parse_side, field by field; `code_bytes` bounds the
// radius; `coarse`: the levels are L + C, the coarse ones' flags 0.
template <typename T>
__global__ void read_header(const uint8_t* side, size_t size, Grid grid, unsigned code_bytes, bool coarse,
                            SideLayout layout, DecodeHeader<T>* header, uint32_t* status) {
  DecodeHeader<T> h{};
  uint32_t bad = 0;
  uint64_t count = 0;
  if (size < 6) {
    bad |= kSideTruncated;
  } else {
    const unsigned tile_levels = level_count(grid.rank);
    const unsigned levels = side_level_count(grid, coarse);  // the host checked C <= kMaxDeviceCoarseLevels
    if (side[0] != grid.rank) bad |= kRankMismatch;
    if (side[1] != levels) bad |= kLevelCountMismatch;
    h.radius = load_word<uint32_t>(side + 2);
    if (!(h.radius >= 1 && h.radius <= max_radius(code_bytes))) bad |= kRadiusOutOfRange;
    if (size < layout.indices_at) {
      bad |= kSideTruncated;
    } else {
      for (unsigned k = 0; k < levels; ++k) {
        const uint8_t* at = side + layout.levels_at + k * layout.level_bytes;
        const unsigned level = levels - 1 - k;  // stored coarsest first
        h.flags[level] = at[0];
        if (!flags_are_valid(at[0]) || (level >= tile_levels && at[0] != 0)) bad |= kUnknownFlags;
        h.steps[level] = load_value<T>(at + 1, 0);
        if (!device_step_is_valid(h.steps[level])) bad |= kBadStep;
      }
      count = load_word<uint64_t>(side + layout.count_at);
      const size_t record = index_width_of(grid.elements) + sizeof(T);
      const size_t rest = size - layout.indices_at;
      // K <= N too: K strictly increasing indices below N cannot be more (the
      // CPU finds that in its index walk; here it bounds the checking threads).
      if (count > rest / record || count > grid.elements) bad |= kOutlierCountTooLarge;
      else if (rest != count * record) bad |= kSideSizeMismatch;
    }
  }
  h.ok = bad == 0;
  h.outliers = h.ok ? count : 0;
  *header = h;
  if (bad) atomicOr(status, bad);
}

__device__ __forceinline__ uint64_t outlier_index(const uint8_t* indices, size_t index_width, uint64_t k) {
  return index_width == 4 ? load_word<uint32_t>(indices + 4 * k) : load_word<uint64_t>(indices + 8 * k);
}

// The code at element `index` (< N), read from its group, in the offset form.
template <typename T>
__device__ __forceinline__ uint32_t code_of_element(const Grid& grid, const CodeGroups& groups,
                                                    const ConstGroupStreams& codes, unsigned code_bytes,
                                                    unsigned form, const DecodeHeader<T>* header, size_t index) {
  const size_t x = index % grid.n[2];
  const size_t rest = index / grid.n[2];
  const uint8_t* at = code_address(grid, groups, codes, code_bytes, rest / grid.n[1], rest % grid.n[1], x);
  const uint32_t stored = code_bytes == 1 ? *at : load_word<uint16_t>(at);
  return code_of_stored(stored, header->radius, form, code_bytes);
}

// Threads over [0, capacity) (capacity >= K whenever the header is good).
template <typename T>
__global__ void __launch_bounds__(kCheckThreads)
    check_outliers(const uint8_t* side, size_t indices_at, Grid grid, CodeGroups groups, ConstGroupStreams codes,
                   unsigned code_bytes, unsigned form, bool coarse, size_t capacity, const DecodeHeader<T>* header,
                   uint32_t* status) {
  const size_t k = static_cast<size_t>(blockIdx.x) * kCheckThreads + threadIdx.x;
  if (k >= capacity || !header->ok || k >= header->outliers) return;
  const size_t index_width = index_width_of(grid.elements);
  const uint64_t index = outlier_index(side + indices_at, index_width, k);
  uint32_t bad = 0;
  if (index >= grid.elements) {
    bad |= kOutlierIndexOutOfRange;
  } else {
    if (code_of_element(grid, groups, codes, code_bytes, form, header, index) != 0) bad |= kNonzeroCodeAtOutlier;
    if (coarse ? index == 0 : is_anchor_index(grid, index)) bad |= kOutlierAtAnchor;  // at a stored anchor
  }
  if (k > 0 && !(index > outlier_index(side + indices_at, index_width, k - 1))) bad |= kIndicesNotIncreasing;
  if (bad) atomicOr(status, bad);
}

template <typename T>
__global__ void check_zero_count(const DecodeHeader<T>* header, const unsigned long long* zero_codes,
                                 uint32_t* status) {
  if (header->ok && *zero_codes != header->outliers) atomicOr(status, kUnlistedZeroCode);
}

// Threads over [0, max(stored anchors, capacity)): anchor t and outlier t.
template <typename T>
__global__ void __launch_bounds__(kCheckThreads)
    scatter(const uint8_t* side, SideLayout layout, Grid grid, size_t stored_anchors, size_t capacity,
            const DecodeHeader<T>* header, uint8_t* out) {
  const size_t t = static_cast<size_t>(blockIdx.x) * kCheckThreads + threadIdx.x;
  if (!header->ok) return;
  if (t < stored_anchors) copy_value<T>(side + layout.anchors_at + t * sizeof(T), out + anchor_index(grid, t) * sizeof(T));
  if (t < capacity && t < header->outliers) {
    const size_t index_width = index_width_of(grid.elements);
    const uint64_t index = outlier_index(side + layout.indices_at, index_width, t);
    const uint8_t* values = side + layout.values_at(header->outliers, index_width);
    if (index < grid.elements) copy_value<T>(values + t * sizeof(T), out + index * sizeof(T));
  }
}

// The decoder's dynamic shared memory: the working buffer and the codes
// (u16) of the same slots.
template <typename T>
inline size_t decode_shared_bytes(unsigned rank) {
  return tile_buffer_size(rank) * (sizeof(T) + sizeof(uint16_t));
}

template <typename T>
__global__ void __launch_bounds__(kTileThreads, kDecodeBlocks<T>)
    decode_tiles(Grid grid, CodeGroups groups, const __grid_constant__ ConstGroupStreams streams, unsigned code_bytes, unsigned form,
                 const DecodeHeader<T>* header, const T* anchors, uint8_t* out, unsigned long long* zero_codes,
                 uint32_t* status) {
  if (!header->ok) return;  // uniform over the grid
  T* buffer = tile_buffer<T>();
  auto* codes = reinterpret_cast<uint16_t*>(buffer + tile_buffer_size(grid.rank));
  const TileFrame f(grid, blockIdx.x);
  const TileGeometry t = geometry_of(grid, f);
  const uint32_t radius = header->radius;
  const uint32_t limit = 2 * radius;
  const unsigned B = t.tile;
  // Its anchor stored (code 0, not listed): every anchor without coarse
  // levels (anchors == nullptr), the root alone with them.
  const bool stored_anchor = anchors == nullptr || blockIdx.x == 0;
  // The codes of the tile's points; the checks at the owned ones.
  uint32_t zeros = 0, bad = 0;
  auto* rows = reinterpret_cast<RowPlaces*>(buffer);  // the buffer is free until the corners
  fill_row_places(grid, groups, f, t, rows);
  __syncthreads();
  for_each_region_point(t, [&](unsigned slot, unsigned z, unsigned y, unsigned x) {
    const uint8_t* at = row_code_address(t, rows, streams, code_bytes, z, y, x);
    const uint32_t code = code_of_stored(code_bytes == 1 ? *at : load_word<uint16_t>(at), radius, form, code_bytes);
    codes[slot] = static_cast<uint16_t>(code);
    if (z < B && y < B && x < B) {
      if ((z | y | x) == 0 && stored_anchor) {
        if (code != 0) bad |= kNonzeroCodeAtAnchor;
      } else if (code == 0) {
        ++zeros;
      } else if (code >= limit) {
        bad |= kCodeOutOfRange;
      }
    }
  });
  const uint32_t warp_zeros = warp_sum(zeros);
  if ((threadIdx.x & 31u) == 0 && warp_zeros != 0) atomicAdd(zero_codes, static_cast<unsigned long long>(warp_zeros));
  if (bad) atomicOr(status, bad);
  __syncthreads();  // the rows' places are read: the corners may overwrite them
  load_corners(grid, f, out, buffer, anchors);  // ends with a barrier: the codes are staged too
  const LevelPlans plans(t, [&](unsigned level) { return header->flags[level]; });
  for (unsigned level = level_count(grid.rank); level-- > 0;) {
    const T step = header->steps[level];
    walk_level(t, buffer, level, header->flags[level], plans,
                       [&](unsigned slot, T p, unsigned z, unsigned y, unsigned x) {
      const uint32_t code = codes[slot];
      if (code == 0) {
        buffer[slot] = prediction_value(load_value<T>(out, global_index(grid, f, z, y, x)));
        return;
      }
      buffer[slot] = reconstruct(p, static_cast<int32_t>(code) - static_cast<int32_t>(radius), step);
    });
  }
  // The owned points with a nonzero code (never a stored anchor), row by row.
  const size_t plane = grid.n[1] * grid.n[2], row = grid.n[2];
  uint8_t* base = out + global_index(grid, f, 0, 0, 0) * sizeof(T);
  for_each_owned_point(t, [&](unsigned z, unsigned y, unsigned x, unsigned) {
    const unsigned slot = z * t.stride[0] + y * t.stride[1] + x * t.stride[2];
    if (codes[slot] == 0 || ((z | y | x) == 0 && stored_anchor)) return;
    Bits<T> bits;
    memcpy(&bits, buffer + slot, sizeof(T));
    store_word<Bits<T>>(base + (z * plane + y * row + x) * sizeof(T), bits);
  });
}

}  // namespace fz::spline::cuda::detail
