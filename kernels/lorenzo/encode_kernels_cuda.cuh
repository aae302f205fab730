// The LORENZO CUDA encoder's kernels (the order they run in: encode_cuda.cu,
// which launches them; the schedule: lorenzo_cuda.hpp).
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lorenzo/common_cuda.cuh"
#include "lorenzo/encode_elements_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

// Elements [first, n), one per thread.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    prequantize(const uint8_t* in, size_t first, size_t n, Quantizer<T> quantizer, typename Traits<T>::U* packed) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  const size_t i = first + static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const U bits = load_word<U>(in + sizeof(T) * i);
  I q;
  const uint8_t kind = quantizer.classify_fast(bits, q);
  packed[i] = pack_element(static_cast<U>(q), kind);
}

// The first `vectors` 16 bytes of a 16-byte aligned input, one vector per
// thread and step (packed is 16-byte aligned scratch).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    prequantize_vectors(const uint4* __restrict__ in, size_t vectors, Quantizer<T> quantizer,
                        uint4* __restrict__ packed) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  constexpr unsigned kPer = 16 / sizeof(T);
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  for (size_t v = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; v < vectors; v += stride) {
    const uint4 x = in[v];
    U bits[kPer], out[kPer];
    memcpy(bits, &x, 16);
#pragma unroll
    for (unsigned k = 0; k < kPer; ++k) {
      I q;
      const uint8_t kind = quantizer.classify_fast(bits[k], q);
      out[k] = pack_element(static_cast<U>(q), kind);
    }
    uint4 y;
    memcpy(&y, out, 16);
    packed[v] = y;
  }
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    count_tiles(const U* p, Grid g, U code_limit, uint8_t* codes, uint64_t* records, uint64_t* deltas,
                uint64_t* raws) {
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
  uint64_t mine = 0;
  for (unsigned r = 0; r < kRounds; ++r) {
    const size_t i = base + r * kThreads + threadIdx.x;
    if (i >= g.s.n) break;
    const ElementInfo<U> e = element_info(p, g, i, code_limit);
    store_word<uint16_t>(codes + 2 * i, e.code);
    mine += packed_counts(e.record, e.kind);
  }
  const uint64_t total = Reduce(storage).Sum(mine);
  if (threadIdx.x == 0) {
    constexpr uint64_t kField = (1ull << 21) - 1;
    records[blockIdx.x] = total & kField;
    deltas[blockIdx.x] = (total >> 21) & kField;
    raws[blockIdx.x] = (total >> 42) & kField;
  }
}

// Codes by rows (rows of at most kMaxRowLength elements). With
// r(y, x) = p(z, y, x) - p(z-1, y, x) and t = r(y, x) - r(y-1, x) (neighbours
// outside the data 0), the Lorenzo delta is t(x) - t(x-1): a warp keeps the
// previous row's r in registers and takes t(x-1) from the lane before, so
// each element costs two loads (its plane and the one before, read by the
// neighbouring warp at about the same time) and one shuffle, no index
// arithmetic; 2K loads of a row are in flight together. Records are
// rare: their per-tile counts are added with one atomic per tile and warp
// step (order-free integer sums), for scans and place_records as before.
template <typename U>
__device__ __noinline__ void count_records(bool record, uint8_t kind, size_t i, unsigned lane,
                                              unsigned long long* tile_counts) {
  const unsigned records = __ballot_sync(0xFFFFFFFFu, record);
  const unsigned deltas = __ballot_sync(0xFFFFFFFFu, record && (kind & kHasDelta));
  const unsigned raws = __ballot_sync(0xFFFFFFFFu, record && (kind & kValueMask) == kValueRaw);
  // 32 consecutive elements span at most two tiles.
  const size_t tile = i / kTile;
  const size_t first_tile = __shfl_sync(0xFFFFFFFFu, tile, 0);
  const unsigned in_first = __ballot_sync(0xFFFFFFFFu, tile == first_tile);
  if (lane == 0) {
#pragma unroll
    for (unsigned part = 0; part < 2; ++part) {
      const unsigned m = part == 0 ? in_first : ~in_first;
      const unsigned long long c = static_cast<unsigned long long>(__popc(records & m)) |
                                   (static_cast<unsigned long long>(__popc(deltas & m)) << 21) |
                                   (static_cast<unsigned long long>(__popc(raws & m)) << 42);
      if (c) atomicAdd(&tile_counts[first_tile + part], c);
    }
  }
}

template <typename U, unsigned K>
__global__ void __launch_bounds__(kThreads)
    row_codes(const U* __restrict__ p, Shape s, size_t rows, size_t segments, U code_limit,
              uint16_t* __restrict__ codes, unsigned long long* tile_counts) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t task = static_cast<size_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (task >= s.nz * segments) return;  // the whole warp
  const size_t z = task / segments, segment = task % segments;
  const size_t y0 = segment * rows, y1 = y0 + rows < s.ny ? y0 + rows : s.ny;
  const size_t plane = s.nx * s.ny;
  const bool back = z > 0;
  // Words of row y of this plane and the one before (x clamped into the row:
  // every load unconditional).
  const unsigned nx = static_cast<unsigned>(s.nx);
  auto load_row = [&](size_t y, U (&here)[K], U (&behind)[K]) {
    const U* row = p + (z * s.ny + y) * s.nx;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) here[j] = row[min(lane + 32 * j, nx - 1)];
    if (back) {
      row -= plane;
#pragma unroll
      for (unsigned j = 0; j < K; ++j) behind[j] = row[min(lane + 32 * j, nx - 1)];
    }
  };
  auto r_of = [&](U here, U behind) { return static_cast<U>(p_of(here) - (back ? p_of(behind) : U{0})); };
  U above[K];  // r of the row before
  U here[K], behind[K];
  if (y0 > 0) {
    load_row(y0 - 1, here, behind);
#pragma unroll
    for (unsigned j = 0; j < K; ++j) above[j] = r_of(here[j], behind[j]);
  } else {
#pragma unroll
    for (unsigned j = 0; j < K; ++j) above[j] = 0;
  }
  for (size_t y = y0; y < y1; ++y) {
    load_row(y, here, behind);
    const size_t row = (z * s.ny + y) * s.nx;
    U last = 0;  // t of the element before this step's first
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      if (32 * j >= s.nx) break;  // uniform
      const U r = r_of(here[j], behind[j]);
      const U t = r - above[j];
      above[j] = r;
      U left = __shfl_up_sync(0xFFFFFFFFu, t, 1);
      if (lane == 0) left = last;
      last = __shfl_sync(0xFFFFFFFFu, t, 31);
      const U delta = t - left;
      const U zz = zigzag(delta);
      const bool fits = zz < code_limit;
      const uint8_t kind = static_cast<uint8_t>((fits ? 0 : kHasDelta) | value_kind_of(here[j]));
      const size_t x = lane + 32 * j;
      const bool inside = x < s.nx;
      if (inside) codes[row + x] = fits ? static_cast<uint16_t>(zz) : uint16_t{0};
      const bool record = inside && kind != 0;
      if (__any_sync(0xFFFFFFFFu, record)) count_records<U>(record, kind, row + (inside ? x : s.nx - 1), lane,
                                                            tile_counts);
    }
  }
}

// The packed per-tile counts into the three arrays the scans read.
static __global__ void __launch_bounds__(kThreads)
    unpack_tile_counts(const unsigned long long* tile_counts, size_t tiles, uint64_t* records, uint64_t* deltas,
                       uint64_t* raws) {
  const size_t t = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= tiles) return;
  constexpr uint64_t kField = (1ull << 21) - 1;
  const uint64_t c = tile_counts[t];
  records[t] = c & kField;
  deltas[t] = (c >> 21) & kField;
  raws[t] = (c >> 42) & kField;
}

struct Totals {
  uint64_t count, deltas, raws;
};

__device__ inline Totals totals_of(size_t tiles, const uint64_t* const counts[3], const uint64_t* const offsets[3]) {
  if (tiles == 0) return {0, 0, 0};
  const size_t l = tiles - 1;
  return {offsets[0][l] + counts[0][l], offsets[1][l] + counts[1][l], offsets[2][l] + counts[2][l]};
}

struct CountArrays {
  const uint64_t* counts[3];
  const uint64_t* offsets[3];
};

// The outlier stream's length for these totals.
__device__ inline uint64_t outliers_bytes(const Totals& t, size_t n, unsigned width) {
  return kHeaderBytes + t.count * (index_width_of(n) + 1) + (t.deltas + t.raws) * width;
}

// Where an element's record comes from: the two-pass path recomputes every
// element's delta from the prequantized words.
template <typename T>
struct RecordsFromPrequantized {
  using U = typename Traits<T>::U;
  const U* p;
  __device__ __forceinline__ ElementInfo<U> operator()(const Grid& g, size_t i, U code_limit) const {
    return element_info(p, g, i, code_limit);
  }
};

// The tiles' records, in index order: each tile's at its offsets from the
// scans plus a block-scan rank. A grid-stride loop over the tiles, since most
// hold no record at all: one block a tile would spend more launching them than
// placing the records.
template <typename T, typename Source>
__global__ void __launch_bounds__(kThreads)
    place_records(const uint8_t* in, Source source, Grid g, typename Traits<T>::U code_limit, CountArrays c,
                  size_t tiles, uint8_t* out, size_t capacity) {
  using U = typename Traits<T>::U;
  using Scan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ typename Scan::TempStorage storage;
  constexpr size_t W = sizeof(T);
  const Totals t = totals_of(tiles, c.counts, c.offsets);
  const Shape& s = g.s;
  if (outliers_bytes(t, s.n, W) > capacity) return;  // not written: the length says why
  const size_t index_width = index_width_of(s.n);
  const size_t kind_at = kHeaderBytes + t.count * index_width;
  const size_t delta_at = kind_at + t.count;
  const size_t raw_at = delta_at + t.deltas * W;
  constexpr uint64_t kField = (1ull << 21) - 1;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    if (c.counts[0][tile] == 0) continue;  // uniform across the block
    uint64_t r = c.offsets[0][tile], a = c.offsets[1][tile], w = c.offsets[2][tile];
    const size_t base = tile * kTile;
    for (unsigned round = 0; round < kRounds; ++round) {
      const size_t first = base + round * kThreads;
      if (first >= s.n) break;  // uniform
      const size_t i = first + threadIdx.x;
      ElementInfo<U> e{};
      if (i < s.n) e = source(g, i, code_limit);
      uint64_t rank, total;
      Scan(storage).ExclusiveSum(packed_counts(e.record, e.kind), rank, total);
      __syncthreads();  // storage is reused next round
      if (e.record) {
        const uint64_t my_r = r + (rank & kField);
        if (index_width == 4) store_word<uint32_t>(out + kHeaderBytes + 4 * my_r, static_cast<uint32_t>(i));
        else store_word<uint64_t>(out + kHeaderBytes + 8 * my_r, static_cast<uint64_t>(i));
        out[kind_at + my_r] = e.kind;
        if (e.kind & kHasDelta) store_word<U>(out + delta_at + W * (a + ((rank >> 21) & kField)), e.delta);
        if ((e.kind & kValueMask) == kValueRaw)
          store_word<U>(out + raw_at + W * (w + ((rank >> 42) & kField)), load_word<U>(in + W * i));
      }
      r += total & kField;
      a += (total >> 21) & kField;
      w += (total >> 42) & kField;
    }
  }
}

// Blocks for place_records: a few waves over the GPU at most.
inline unsigned place_records_grid(size_t tiles) {
  return static_cast<unsigned>(tiles < 4096 ? (tiles > 0 ? tiles : 1) : 4096);
}

static __global__ void outliers_length(size_t n, unsigned width, CountArrays c, size_t tiles,
                                       uint64_t* outliers_size) {
  *outliers_size = outliers_bytes(totals_of(tiles, c.counts, c.offsets), n, width);
}

// The header, when the stream fits `capacity` (place_records wrote it then).
static __global__ void outliers_header(size_t n, unsigned width, CountArrays c, size_t tiles, uint8_t* out,
                                       size_t capacity) {
  const Totals t = totals_of(tiles, c.counts, c.offsets);
  if (outliers_bytes(t, n, width) > capacity) return;
  store_word<uint64_t>(out, t.count);
  store_word<uint64_t>(out + 8, t.deltas);
  store_word<uint64_t>(out + 16, t.raws);
}

}  // namespace fz::lorenzo::cuda::detail
