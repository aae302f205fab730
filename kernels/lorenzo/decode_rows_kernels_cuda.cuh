// The LORENZO CUDA decoder's kernels for chunks of short rows (at most
// kMaxRowLength elements): the inverse Lorenzo operator over tiles, with one
// pass that writes the values.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "lorenzo/common_cuda.cuh"
#include "lorenzo/lanes_cuda.cuh"
#include "lorenzo/outliers_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares

//
// The inverse of the Lorenzo predictor is an inclusive prefix sum along x, y
// and z, modulo 2^bits (the CPU's arithmetic). The chunk is cut into tiles of
// kStripRows rows (strip j, rows from y0) by t.depth planes (depth segment k,
// planes from z0). Write xscan for the inclusive sum along x; it is linear,
// and modular sums may be taken in any order. Element (z, y, x) of a tile is
//   S(z, y) = S(z0 - 1, y) + P(z0, y) + ... + P(z, y)          (rows of x)
//   P(z, y) = xscan(A(z) + delta(z, y0) + ... + delta(z, y))
//   S(z0 - 1, y) = xscan(E + D(y0) + ... + D(y))
// where A(z) is plane z's deltas summed over the rows above the strip, D(y)
// row y's deltas summed over the planes above the segment, and E the deltas
// summed over both (rows above the strip, planes above the segment). So:
//   tile_totals   reads each tile's codes once and sums its deltas per plane
//                 over the rows (strip sums), per row over the planes (depth
//                 sums) and over both (tile sums); place_tile_deltas adds the
//                 deltas the outlier stream stores;
//   tile_carries  exclusive sums of those over the strips above and the
//                 segments above: A, D and the terms of E (a thread per
//                 column; 1/8 of the data and less);
//   tile_values   reads each tile again and writes the values: the S of a
//                 warp's rows in registers down the planes, the rows above
//                 it within the strip added through shared memory.
// About 10 bytes of memory traffic an element (float, 2-byte codes) where
// the earlier three passes (row sums, segment carries, depth walks) moved 14;
// on the H200 at 512 MiB the three kernels take 456 us where those took 659
// (docs/PERFORMANCE.md, issue 31's sixth and seventh sessions).

template <typename U>
__device__ __forceinline__ U warp_inclusive_sum(U v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const U other = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += other;
  }
  return v;
}

// Where tile_values takes the deltas from: the codes, or (when the outlier
// stream stores deltas, which `stored` says on the device) `deltas`, which
// unpack_codes and place_tile_deltas filled.
template <typename U>
struct DeltaSource {
  const uint16_t* __restrict__ codes;
  const U* deltas;
  bool stored;
};

// C consecutive columns a thread of tile (j, k): block (j + k * strips,
// column group). Each row's C codes come in one load (C = 2 where the codes
// and the row length allow, else 1), and the next plane's while this one is
// summed: one 2-byte code a thread kept too few bytes in flight (30% of the
// DRAM peak), and with 4 the registers leave too few warps. Codes only: a
// stored delta's code is 0, and place_tile_deltas adds the delta to the
// three sums afterwards.
constexpr unsigned kTotalsThreads = 128;

template <typename U, unsigned C>
__global__ void __launch_bounds__(kTotalsThreads)
    tile_totals(DeltaSource<U> source, Shape s, Tiling t, U* strip_sums,
                U* depth_sums, U* tile_sums) {
  const size_t x = (static_cast<size_t>(blockIdx.y) * kTotalsThreads + threadIdx.x) * C;
  if (x >= s.nx) return;
  const size_t j = blockIdx.x % t.strips, k = blockIdx.x / t.strips;
  const size_t y0 = j * kStripRows;
  const size_t rows = s.ny - y0 < kStripRows ? s.ny - y0 : kStripRows;
  const size_t z0 = k * t.depth, z1 = z0 + t.depth < s.nz ? z0 + t.depth : s.nz;
  U along_z[kStripRows][C];
#pragma unroll
  for (unsigned r = 0; r < kStripRows; ++r)
#pragma unroll
    for (unsigned c = 0; c < C; ++c) along_z[r][c] = 0;
  // Down the planes with Raw words (one load a row) and `delta`, which
  // takes column c's delta out of one.
  auto walk = [&](auto raw_kind, auto&& delta) {
    using Raw = decltype(raw_kind);
    // Row r of plane z: rows past the strip's last load it again (every
    // load unconditional, all in flight) and count 0.
    auto load_plane = [&](size_t z, Raw (&raw)[kStripRows]) {
#pragma unroll
      for (unsigned r = 0; r < kStripRows; ++r) {
        const size_t at = (z * s.ny + y0 + (r < rows ? r : rows - 1)) * s.nx + x;
        raw[r] = *reinterpret_cast<const Raw*>(source.codes + at);
      }
    };
    Raw next[kStripRows];
    load_plane(z0, next);
    for (size_t z = z0; z < z1; ++z) {
      Raw raw[kStripRows];
#pragma unroll
      for (unsigned r = 0; r < kStripRows; ++r) raw[r] = next[r];
      if (z + 1 < z1) load_plane(z + 1, next);
      U across[C];
#pragma unroll
      for (unsigned c = 0; c < C; ++c) across[c] = 0;
#pragma unroll
      for (unsigned r = 0; r < kStripRows; ++r)
#pragma unroll
        for (unsigned c = 0; c < C; ++c) {
          const U d = r < rows ? delta(raw[r], c) : U{0};
          across[c] += d;
          along_z[r][c] += d;
        }
      if (strip_sums)
#pragma unroll
        for (unsigned c = 0; c < C; ++c) strip_sums[(z * t.strips + j) * s.nx + x + c] = across[c];
    }
  };
  static_assert(C == 1 || C == 2, "one or two codes a load");
  using Codes = std::conditional_t<C == 2, uint32_t, uint16_t>;
  walk(Codes{}, [](const Codes& raw, unsigned c) -> U {
    return unzigzag(static_cast<U>((static_cast<uint32_t>(raw) >> (16 * c)) & 0xFFFFu));
  });
  if (!depth_sums) return;
  U total[C];
#pragma unroll
  for (unsigned c = 0; c < C; ++c) total[c] = 0;
#pragma unroll
  for (unsigned r = 0; r < kStripRows; ++r)
    if (r < rows)
#pragma unroll
      for (unsigned c = 0; c < C; ++c) {
        depth_sums[(k * s.ny + y0 + r) * s.nx + x + c] = along_z[r][c];
        total[c] += along_z[r][c];
      }
  if (tile_sums)
#pragma unroll
    for (unsigned c = 0; c < C; ++c) tile_sums[(k * t.strips + j) * s.nx + x + c] = total[c];
}

// place_deltas for the tiled decode: record r's stored delta written over its
// element's word in d (tile_values reads it there) and added to the sums
// tile_totals took from the codes (where the delta's code is 0; the sums are
// modulo 2^bits, in any order). Runs between tile_totals and tile_carries.
template <typename U>
__device__ __forceinline__ void add_word(U* at, U v) {
  if constexpr (sizeof(U) == 4) atomicAdd(reinterpret_cast<unsigned int*>(at), static_cast<unsigned int>(v));
  else atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    place_tile_deltas(const uint8_t* o, const uint8_t* codes, Shape s, size_t capacity, U code_limit,
                      const OutlierLayout* layout, const uint64_t* delta_rank, U* d, Tiling t, U* strip_sums,
                      U* depth_sums, U* tile_sums, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const OutlierLayout l = *layout;
  const uint32_t bad = place_delta(o, codes, s.n, r, code_limit, l, delta_rank, d);
  if (bad) atomicOr(status, bad);
  // place_delta's own conditions for placing it.
  if (!l.ok || r >= l.count || !(o[l.kind_at + r] & kHasDelta)) return;
  const uint64_t index = index_at(o, index_width_of(s.n), r);
  const uint64_t slot = delta_rank[r];
  if (index >= s.n || slot >= l.deltas) return;
  const U stored = load_word<U>(o + l.delta_at + sizeof(U) * slot);
  const size_t x = index % s.nx, y = index / s.nx % s.ny, z = index / s.nx / s.ny;
  const size_t j = y / kStripRows, k = z / t.depth;
  if (strip_sums) add_word(&strip_sums[(z * t.strips + j) * s.nx + x], stored);
  if (depth_sums) add_word(&depth_sums[(k * s.ny + y) * s.nx + x], stored);
  if (tile_sums) add_word(&tile_sums[(k * t.strips + j) * s.nx + x], stored);
}

// An exclusive sum in place over `count` words `stride` apart; 32 loads in
// flight at a time (the strips and segments of most chunks: one round trip).
template <typename U>
__device__ void exclusive_walk(U* at, size_t count, size_t stride) {
  constexpr unsigned kBatch = 32;
  U acc = 0;
  for (size_t i = 0; i < count; i += kBatch, at += kBatch * stride) {
    U v[kBatch];
#pragma unroll
    for (unsigned q = 0; q < kBatch; ++q) v[q] = i + q < count ? at[q * stride] : U{0};
#pragma unroll
    for (unsigned q = 0; q < kBatch; ++q) {
      if (i + q < count) at[q * stride] = acc;
      acc += v[q];
    }
  }
}

// A thread per column of each array present: strip sums down the strips (per
// plane and x: A), depth sums down the segments (per row and x: D), tile sums
// down the strips (per segment and x; tile_values adds them over the segments
// above: E).
template <typename U>
__global__ void __launch_bounds__(kThreads)
    tile_carries(Shape s, Tiling t, U* strip_sums, U* depth_sums, U* tile_sums) {
  size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  const size_t strip_columns = strip_sums ? s.nz * s.nx : 0;
  if (c < strip_columns) {
    exclusive_walk(strip_sums + (c / s.nx) * t.strips * s.nx + c % s.nx, t.strips, s.nx);
    return;
  }
  c -= strip_columns;
  const size_t depth_columns = depth_sums ? s.ny * s.nx : 0;
  if (c < depth_columns) {
    exclusive_walk(depth_sums + c, t.segments, s.ny * s.nx);
    return;
  }
  c -= depth_columns;
  if (tile_sums && c < t.segments * s.nx) exclusive_walk(tile_sums + (c / s.nx) * t.strips * s.nx + c % s.nx, t.strips, s.nx);
}

inline size_t tile_carry_columns(const Shape& s, const Tiling& t, bool strips, bool depths, bool tiles) {
  return (strips ? s.nz * s.nx : 0) + (depths ? s.ny * s.nx : 0) + (tiles ? t.segments * s.nx : 0);
}

// Shared memory of tile_values: two planes' (kTileWarps - 1) warp sums of 32K
// words.
template <typename U, unsigned K>
constexpr size_t tile_exchange_bytes() {
  return size_t{2} * (kTileWarps - 1) * 32 * K * sizeof(U);
}

// xscan of a row held by a warp with each lane's K words side by side: the
// lane's own prefix, then one warp scan of the lanes' totals.
template <typename U, unsigned K>
__device__ __forceinline__ void lane_row_scan(U (&v)[K], unsigned lane) {
#pragma unroll
  for (unsigned i = 1; i < K; ++i) v[i] += v[i - 1];
  const U before = warp_inclusive_sum(v[K - 1], lane) - v[K - 1];
#pragma unroll
  for (unsigned i = 0; i < K; ++i) v[i] += before;
}

// Where each kind of row allows 16-byte vectors (lanes_cuda.cuh): the array
// and its rows aligned.
struct TileVectors {
  bool codes, deltas, sums, out;
};

// Tile (j, k) (block j + k * strips): warp w holds the kRowsPerWarp rows
// from y0 + kRowsPerWarp * w, lane l the K elements from x = lK of each (K =
// nx / 32 rounded up to a power of 2). Down the planes of the segment it
// keeps its rows' S, adds each plane's P and writes the values. A plane's
// deltas are summed across the warps above through shared memory
// (double-buffered: one barrier a plane; word i of lane l at i * 32 + l, free
// of bank conflicts); the next plane's words and A are loaded while this one
// is summed. One row a warp (kRowsPerWarp) and only warp 0 holding A took
// 306 us at 512 MiB on the H200 where two rows a warp took 371 (the strips'
// sums, twice as many, cost 28 us more in tile_totals and tile_carries);
// three blocks an SM at 80 registers spilled and took 423.
template <typename T, unsigned K>
__global__ void __launch_bounds__(kTileWarps * 32, sizeof(T) * K <= 64 ? 2 : 1)
    tile_values(DeltaSource<typename Traits<T>::U> source, const OutlierLayout* layout, Shape s, Tiling t,
                const typename Traits<T>::U* strip_sums, const typename Traits<T>::U* depth_sums,
                const typename Traits<T>::U* tile_sums, TileVectors vectors, typename Traits<T>::U code_limit,
                T eb2, uint8_t* out, uint32_t* status) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  constexpr unsigned R = kRowsPerWarp;
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  extern __shared__ __align__(16) unsigned char exchange_bytes[];
  U* const exchange = reinterpret_cast<U*>(exchange_bytes);
  constexpr unsigned kRow = 32 * K;  // a warp sum's words in shared memory
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned nx = static_cast<unsigned>(s.nx), x0 = lane * K;
  source.stored = layout->ok && layout->deltas > 0;
  const size_t j = blockIdx.x % t.strips, k = blockIdx.x / t.strips;
  const size_t y_first = j * kStripRows + R * warp;
  bool has[R];  // uniform in the warp
#pragma unroll
  for (unsigned r = 0; r < R; ++r) has[r] = y_first + r < s.ny;
  const size_t z0 = k * t.depth, z1 = z0 + t.depth < s.nz ? z0 + t.depth : s.nz;
  bool bad_code = false, bad_value = false;
  unsigned parity = 0;

  // Row y of plane z, raw words (codes as uint16_t, or stored-path deltas
  // as U; 0 for a row past the chunk).
  auto load_row = [&](size_t z, size_t y, bool there, auto (&v)[K]) {
    using Raw = std::remove_reference_t<decltype(v[0])>;
    if (!there) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) v[i] = 0;
      return;
    }
    const size_t row = (z * s.ny + y) * s.nx;
    if constexpr (sizeof(Raw) == 2)
      load_lane<uint16_t, K>(reinterpret_cast<const uint8_t*>(source.codes + row), x0, nx, vectors.codes, v);
    else
      load_lane<U, K>(reinterpret_cast<const uint8_t*>(source.deltas + row), x0, nx, vectors.deltas, v);
  };
  // Raw words to deltas (codes range-checked), 0 outside the row.
  auto deltas_of = [&](const auto (&raw)[K], U (&v)[K]) {
    using Raw = std::remove_const_t<std::remove_reference_t<decltype(raw[0])>>;
#pragma unroll
    for (unsigned i = 0; i < K; ++i) {
      const bool inside = x0 + i < nx;
      U d = raw[i];
      if constexpr (sizeof(Raw) == 2) {
        bad_code |= inside && !(d < code_limit);
        d = unzigzag(d);
      }
      v[i] = inside ? d : U{0};
    }
  };
  // A of plane z (the deltas summed over the rows above the strip), 0 outside the row.
  auto load_above = [&](size_t z, U (&v)[K]) {
    if (!strip_sums) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) v[i] = 0;
      return;
    }
    load_lane<U, K>(reinterpret_cast<const uint8_t*>(strip_sums + (z * t.strips + j) * s.nx), x0, nx, vectors.sums,
                    v);
#pragma unroll
    for (unsigned i = 0; i < K; ++i) v[i] = x0 + i < nx ? v[i] : U{0};
  };
  // The warp's rows of a plane (or of D) to their 2-D sums: the rows above
  // them in the strip added, xscan'ed. Warp 0 has added the carry from
  // above the strip (A, or E) to its first row already, so the warps after
  // it get that carry through its warp sum. Every warp calls it (a barrier).
  auto plane_sums = [&](U (&v)[R][K]) {
    U* slot = exchange + parity * (kTileWarps - 1) * kRow;
    parity ^= 1u;
    if (warp + 1 < kTileWarps) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) {
        U sum = v[0][i];
#pragma unroll
        for (unsigned r = 1; r < R; ++r) sum += v[r][i];
        slot[warp * kRow + i * 32 + lane] = sum;
      }
    }
    __syncthreads();
    for (unsigned w = 0; w < warp; ++w) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) v[0][i] += slot[w * kRow + i * 32 + lane];
    }
#pragma unroll
    for (unsigned r = 1; r < R; ++r) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) v[r][i] += v[r - 1][i];
    }
#pragma unroll
    for (unsigned r = 0; r < R; ++r) lane_row_scan(v[r], lane);
  };
  // Row y of plane z from its S: x' = (T)p * eb2 (store_value's arithmetic
  // and range check), the lane's words stored together.
  auto store_row = [&](size_t z, size_t y, const U (&p)[K]) {
    U bits[K];
#pragma unroll
    for (unsigned i = 0; i < K; ++i) {
      const T x = static_cast<T>(static_cast<I>(p[i])) * eb2;
      memcpy(&bits[i], &x, sizeof(T));
      bad_value |= x0 + i < nx && static_cast<U>(p[i] + kPMax) > static_cast<U>(2 * kPMax);
    }
    store_lane<U, K>(out + sizeof(T) * (z * s.ny + y) * s.nx, x0, nx, vectors.out, bits);
  };

  // S of the planes above the segment: xscan(E + D(y0) + ... + D(y)).
  U sums[R][K];
  if (k > 0) {  // uniform in the block
#pragma unroll
    for (unsigned r = 0; r < R; ++r) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i)
        sums[r][i] = has[r] && x0 + i < nx ? depth_sums[(k * s.ny + y_first + r) * s.nx + x0 + i] : U{0};
    }
    if (warp == 0 && tile_sums) {
      for (size_t q = 0; q < k; ++q) {
#pragma unroll
        for (unsigned i = 0; i < K; ++i)
          if (x0 + i < nx) sums[0][i] += tile_sums[(q * t.strips + j) * s.nx + x0 + i];
      }
    }
    plane_sums(sums);
  } else {
#pragma unroll
    for (unsigned r = 0; r < R; ++r) {
#pragma unroll
      for (unsigned i = 0; i < K; ++i) sums[r][i] = 0;
    }
  }

  // Down the planes, the next plane's raw words (and, in warp 0, A) loaded
  // while this one is summed (codes stay 2 bytes in registers: two to a
  // register where they were loaded as vectors). A goes into warp 0's row
  // before the next loads, so no copy of it is held beside them.
  const bool carries_above = warp == 0 && strip_sums != nullptr;  // uniform in the warp
  auto walk = [&](auto raw_kind) {
    using Raw = decltype(raw_kind);
    Raw next[R][K];
    U next_above[K];
#pragma unroll
    for (unsigned r = 0; r < R; ++r) load_row(z0, y_first + r, has[r], next[r]);
    if (carries_above) load_above(z0, next_above);
    for (size_t z = z0; z < z1; ++z) {
      U v[R][K];
#pragma unroll
      for (unsigned r = 0; r < R; ++r) deltas_of(next[r], v[r]);
      if (carries_above) {
#pragma unroll
        for (unsigned i = 0; i < K; ++i) v[0][i] += next_above[i];
      }
      if (z + 1 < z1) {  // uniform
#pragma unroll
        for (unsigned r = 0; r < R; ++r) load_row(z + 1, y_first + r, has[r], next[r]);
        if (carries_above) load_above(z + 1, next_above);
      }
      plane_sums(v);
#pragma unroll
      for (unsigned r = 0; r < R; ++r) {
#pragma unroll
        for (unsigned i = 0; i < K; ++i) sums[r][i] += v[r][i];
        if (has[r]) store_row(z, y_first + r, sums[r]);
      }
    }
  };
  if (source.stored) walk(U{});  // uniform in the grid
  else walk(uint16_t{});
  const uint32_t bad = (bad_code ? kCodeOutOfRadius : 0u) | (bad_value ? kValueOutOfRange : 0u);
  if (bad) atomicOr(status, bad);  // (malformed streams only: rare, so no warp reduction first)
}

}  // namespace fz::lorenzo::cuda::detail
