// CUDA implementation of the LORENZO stream format (lorenzo/lorenzo.hpp), host
// interface in lorenzo/lorenzo_cuda.hpp. The rules are the CPU's
// (lorenzo_cpu.cpp); only the schedule differs.
//
// Encode, over tiles of kTile elements (one thread block each):
//   prequantize   one thread per element: classify -> p and value kind, packed
//                 in one word (U);
//   count_tiles   per element the Lorenzo delta from the prequantized neighbours
//                 (inclusion-exclusion, neighbours outside the data are 0, modulo
//                 2^bits), the code, and whether it is a record; per tile the
//                 number of records, stored deltas and raw values;
//   exclusive device scans of the three per-tile counts;
//   write_records recomputes each element's delta and places its record at
//                 tile offset + block-scan rank (index order, any schedule);
//   finish_encode the header and the stream's length.
// Decode:
//   check_header  one thread: counts and the stream's size (as the CPU);
//   check_records one thread per record: index order, kinds, delta/raw flags;
//   exclusive scans of the flags give each record its stored delta / raw slot;
//   check_counts  one thread: the flags add up to the header's counts;
//   unpack_codes  codes -> deltas (range-checked);
//   place_deltas  stored deltas written over the outlier positions;
//   inclusive prefix sums along x (scan by key over rows), then y, then z (a
//   thread per column when there are many columns, otherwise a scan by key
//   over the permuted axis); the sums are modulo 2^bits, the CPU's arithmetic;
//   convert       range check and x' = (T)p * eb2;
//   patch_specials the specials' bits (p must be 0 there).
// A chunk of at most kSmallElements elements takes all of these steps in one
// launch of one block (decode_small).
#include "lorenzo/lorenzo_cuda.hpp"

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <type_traits>

#include "common/float_state.hpp"
#include "common/one_block_scan_cuda.cuh"
#include "common/words_cuda.cuh"
#include "lorenzo/lorenzo_rules.hpp"

namespace fz::lorenzo::cuda {
namespace {

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

struct Shape {
  size_t nz = 1, ny = 1, nx = 1, n = 0;
};

bool make_shape(const std::vector<size_t>& dims, Shape& s) {
  if (dims.empty() || dims.size() > 3) return false;
  size_t ext[3] = {1, 1, 1};
  for (size_t k = 0; k < dims.size(); ++k) ext[3 - dims.size() + k] = dims[k];
  s.nz = ext[0];
  s.ny = ext[1];
  s.nx = ext[2];
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t n = 1;
  for (size_t e : ext) {
    if (e == 0) {
      s.n = 0;
      return true;
    }
    if (n > kMaxElements / e) return false;
    n *= e;
  }
  s.n = n;
  return true;
}

template <typename T>
bool config_ok(const Config& c) {
  const T eb = static_cast<T>(c.eb);
  if (!(static_cast<double>(eb) == c.eb)) return false;
  if (!(eb >= std::numeric_limits<T>::min()) || !std::isfinite(eb + eb)) return false;
  if (c.radius < 1 || c.radius > 32768) return false;
  if (sizeof(T) == 4 && (c.fill_bits >> 32) != 0) return false;
  return true;
}

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
size_t tiles_of(size_t n) { return (n + kTile - 1) / kTile; }
// The row kernels (row_codes, plane_sums): one warp per (plane, segment of
// rows), lane l holding x = l + 32j of a row; for rows of at most
// kMaxRowLength elements.
constexpr size_t kMaxRowLength = 1024;
constexpr unsigned kRowWarps = kThreads / 32;

// Rows per segment: about 8192 warps over the chunk (every SM busy), each
// still walking several rows.
size_t rows_per_segment(const Shape& s) {
  size_t rows = s.nz * s.ny / 8192;
  if (rows < 4) rows = 4;
  if (rows > 64) rows = 64;
  return rows < s.ny ? rows : s.ny;
}

bool decodes_by_rows(const Shape& s) { return s.n > 0 && s.nx <= kMaxRowLength; }

// Depth segments for depth_sums: enough for about 64 Ki threads in all, each
// walking at least 16 planes (1 when the planes alone are that many columns).
size_t depth_segments_of(const Shape& s) {
  const size_t plane = s.ny * s.nx;
  size_t segments = (size_t{1} << 16) / plane;
  const size_t most = s.nz / 16;
  if (segments > most) segments = most;
  if (segments <= 1) return 1;
  const size_t length = (s.nz + segments - 1) / segments;
  return (s.nz + length - 1) / length;  // none of them empty
}

// A grid-stride launch: enough blocks to fill the GPU, no more.
unsigned stride_grid(size_t items) {
  const size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 8192 ? (blocks > 0 ? blocks : 1) : 8192);
}
__host__ __device__ inline size_t index_width_of(size_t n) { return n <= (uint64_t{1} << 32) ? 4 : 8; }


// A prequantized value and its value kind in one word: the kind in the top
// two bits, p (|p| <= PMAX, far below 2^(bits-3)) in two's complement below.
// One word per element instead of two arrays: a quarter less traffic.
template <typename U>
__device__ __forceinline__ U pack_element(U p, uint8_t kind) {
  return (p & (~U{0} >> 2)) | (static_cast<U>(kind) << (8 * sizeof(U) - 2));
}
template <typename U>
__device__ __forceinline__ U p_of(U word) {
  using I = typename std::make_signed<U>::type;
  return static_cast<U>(static_cast<I>(word << 2) >> 2);
}
template <typename U>
__device__ __forceinline__ uint8_t value_kind_of(U word) {
  return static_cast<uint8_t>(word >> (8 * sizeof(U) - 2));
}

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
  const uint8_t kind = quantizer.classify(bits, q);
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
      const uint8_t kind = quantizer.classify(bits[k], q);
      out[k] = pack_element(static_cast<U>(q), kind);
    }
    uint4 y;
    memcpy(&y, out, 16);
    packed[v] = y;
  }
}

// Division by a fixed 32-bit divisor as a multiply-high and a shift (the
// round-up method with a 33-bit multiplier), exact for every 32-bit dividend:
// the coordinates of an element cost a few instructions, not two 64-bit
// divisions.
struct Divisor {
  uint32_t d = 1, magic = 1, shift = 0;
  __device__ __forceinline__ uint32_t divide(uint32_t v) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(__umulhi(magic, v)) + v) >> shift);
  }
};

Divisor divisor_for(uint32_t d) {
  Divisor r;
  r.d = d;
  r.shift = 0;
  while ((uint64_t{1} << r.shift) < d) ++r.shift;  // ceil(log2 d)
  r.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << r.shift) - d)) / d + 1);
  return r;
}

// An element's coordinates; 32-bit arithmetic when every index fits.
struct Grid {
  Shape s;
  Divisor nx, ny;
  bool small;  // n < 2^32
};

__device__ __forceinline__ void coordinates(const Grid& g, size_t i, size_t& x, size_t& y, size_t& z) {
  if (g.small) {
    const uint32_t v = static_cast<uint32_t>(i);
    const uint32_t row = g.nx.divide(v);
    const uint32_t plane = g.ny.divide(row);
    x = v - row * g.nx.d;
    y = row - plane * g.ny.d;
    z = plane;
  } else {
    x = i % g.s.nx;
    const size_t row = i / g.s.nx;
    y = row % g.s.ny;
    z = row / g.s.ny;
  }
}

Grid grid_of(const Shape& s) {
  Grid g;
  g.s = s;
  g.small = s.n < (uint64_t{1} << 32);
  if (g.small) {
    g.nx = divisor_for(static_cast<uint32_t>(s.nx));
    g.ny = divisor_for(static_cast<uint32_t>(s.ny));
  }
  return g;
}

// The Lorenzo delta of element i = (z, y, x), modulo 2^bits.
template <typename U>
__device__ inline U lorenzo_delta(const U* p, const Grid& g, size_t i) {
  size_t x, y, z;
  coordinates(g, i, x, y, z);
  const size_t sy = g.s.nx, sz = g.s.nx * g.s.ny;
  const bool left = x > 0, up = y > 0, back = z > 0;
  U d = p_of(p[i]);
  if (left) d -= p_of(p[i - 1]);
  if (up) d -= p_of(p[i - sy]);
  if (left && up) d += p_of(p[i - sy - 1]);
  if (back) {
    d -= p_of(p[i - sz]);
    if (left) d += p_of(p[i - sz - 1]);
    if (up) d += p_of(p[i - sz - sy]);
    if (left && up) d -= p_of(p[i - sz - sy - 1]);
  }
  return d;
}

// Packed per-element counts: records (bits 0-20), stored deltas (21-41), raws
// (42-62); a tile holds at most 2048 of each.
__device__ inline uint64_t packed_counts(bool record, uint8_t kind) {
  if (!record) return 0;
  return 1ull | (static_cast<uint64_t>((kind & kHasDelta) != 0) << 21) |
         (static_cast<uint64_t>((kind & kValueMask) == kValueRaw) << 42);
}

template <typename U>
struct ElementInfo {
  U delta;
  uint16_t code;
  uint8_t kind;  // record kind
  bool record;
};

template <typename U>
__device__ inline ElementInfo<U> element_info(const U* p, const Grid& g, size_t i, U code_limit) {
  ElementInfo<U> e;
  e.delta = lorenzo_delta(p, g, i);
  const U z = zigzag(e.delta);
  const bool fits = z < code_limit;
  e.code = fits ? static_cast<uint16_t>(z) : uint16_t{0};
  e.kind = static_cast<uint8_t>((fits ? 0 : kHasDelta) | value_kind_of(p[i]));
  e.record = e.kind != 0;
  return e;
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
// step (order-free integer sums), for scans and write_records as before.
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
__global__ void __launch_bounds__(kThreads)
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

template <typename T>
__global__ void __launch_bounds__(kThreads)
    write_records(const uint8_t* in, const typename Traits<T>::U* p, Grid g, typename Traits<T>::U code_limit,
                  CountArrays c, size_t tiles, uint8_t* out) {
  using U = typename Traits<T>::U;
  using Scan = cub::BlockScan<uint64_t, kThreads>;
  __shared__ typename Scan::TempStorage storage;
  constexpr size_t W = sizeof(T);
  if (c.counts[0][blockIdx.x] == 0) return;  // uniform across the block
  const Totals t = totals_of(tiles, c.counts, c.offsets);
  const Shape& s = g.s;
  const size_t index_width = index_width_of(s.n);
  const size_t kind_at = kHeaderBytes + t.count * index_width;
  const size_t delta_at = kind_at + t.count;
  const size_t raw_at = delta_at + t.deltas * W;
  uint64_t r = c.offsets[0][blockIdx.x], a = c.offsets[1][blockIdx.x], w = c.offsets[2][blockIdx.x];
  const size_t base = static_cast<size_t>(blockIdx.x) * kTile;
  constexpr uint64_t kField = (1ull << 21) - 1;
  for (unsigned round = 0; round < kRounds; ++round) {
    const size_t first = base + round * kThreads;
    if (first >= s.n) break;  // uniform
    const size_t i = first + threadIdx.x;
    ElementInfo<U> e{};
    if (i < s.n) e = element_info(p, g, i, code_limit);
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

__global__ void finish_encode(size_t n, unsigned width, CountArrays c, size_t tiles, uint8_t* out,
                              uint64_t* outliers_size) {
  const Totals t = totals_of(tiles, c.counts, c.offsets);
  store_word<uint64_t>(out, t.count);
  store_word<uint64_t>(out + 8, t.deltas);
  store_word<uint64_t>(out + 16, t.raws);
  *outliers_size = kHeaderBytes + t.count * (index_width_of(n) + 1) + (t.deltas + t.raws) * width;
}

size_t exclusive_scan_bytes(size_t items) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                static_cast<uint64_t*>(nullptr), static_cast<uint64_t>(items));
  return bytes;
}

struct EncodeLayout {
  void* p;
  unsigned long long* tile_counts;  // row_codes' packed per-tile counts
  uint64_t* counts[3];
  uint64_t* offsets[3];
  void* scan;
  size_t scan_bytes;
  size_t total;
};

EncodeLayout encode_layout(void* scratch, size_t n, unsigned width) {
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t tiles = tiles_of(n);
  EncodeLayout l;
  size_t at = 0;
  l.p = base + at;
  at += aligned(n * width);
  l.tile_counts = reinterpret_cast<unsigned long long*>(base + at);
  at += aligned(tiles * 8);
  for (int k = 0; k < 3; ++k) {
    l.counts[k] = reinterpret_cast<uint64_t*>(base + at);
    at += aligned(tiles * 8);
    l.offsets[k] = reinterpret_cast<uint64_t*>(base + at);
    at += aligned(tiles * 8);
  }
  l.scan = base + at;
  l.scan_bytes = exclusive_scan_bytes(tiles);
  at += aligned(l.scan_bytes);
  l.total = at;
  return l;
}

template <typename T>
cudaError_t encode_typed(const uint8_t* in, const Shape& s, const Config& config, double user_bound, uint8_t* codes,
                         uint8_t* outliers, uint64_t* outliers_size, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  const size_t tiles = tiles_of(n);
  if (tiles > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  const EncodeLayout l = encode_layout(scratch, n, sizeof(T));
  Quantizer<T> quantizer;
  quantizer.eb2 = static_cast<T>(config.eb) * 2;
  {
    FloatStateGuard guard;
    quantizer.inv = static_cast<T>(1) / quantizer.eb2;
  }
  quantizer.bound = user_bound;
  quantizer.has_fill = config.has_fill;
  quantizer.fill = static_cast<U>(config.fill_bits);
  const U code_limit = static_cast<U>(2 * config.radius);
  U* p = static_cast<U*>(l.p);
  CountArrays c;
  for (int k = 0; k < 3; ++k) {
    c.counts[k] = l.counts[k];
    c.offsets[k] = l.offsets[k];
  }
  if (n > 0) {
    const size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 0x7FFFFFFFu) return cudaErrorInvalidValue;
    const Grid g = grid_of(s);
    // 16-byte vectors where the input allows, the rest one element per thread.
    const size_t vectors = (reinterpret_cast<uintptr_t>(in) & 15) == 0 ? n * sizeof(T) / 16 : 0;
    const size_t first = vectors * 16 / sizeof(T);
    if (vectors > 0)
      prequantize_vectors<T><<<stride_grid(vectors), kThreads, 0, stream>>>(
          reinterpret_cast<const uint4*>(in), vectors, quantizer, reinterpret_cast<uint4*>(p));
    if (n > first)
      prequantize<T><<<static_cast<unsigned>((n - first + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
          in, first, n, quantizer, p);
    if (decodes_by_rows(s) && (reinterpret_cast<uintptr_t>(codes) & 1) == 0) {
      const cudaError_t err = cudaMemsetAsync(l.tile_counts, 0, tiles * 8, stream);
      if (err != cudaSuccess) return err;
      const size_t rows = rows_per_segment(s), segments = (s.ny + rows - 1) / rows;
      const unsigned warps_grid = static_cast<unsigned>((s.nz * segments + kRowWarps - 1) / kRowWarps);
      const size_t k = (s.nx + 31) / 32;
      auto kernel = k <= 1 ? row_codes<U, 1> : k <= 2 ? row_codes<U, 2> : k <= 4 ? row_codes<U, 4>
                  : k <= 8 ? row_codes<U, 8> : k <= 16 ? row_codes<U, 16> : row_codes<U, 32>;
      kernel<<<warps_grid, kThreads, 0, stream>>>(p, s, rows, segments, code_limit,
                                                  reinterpret_cast<uint16_t*>(codes), l.tile_counts);
      unpack_tile_counts<<<static_cast<unsigned>((tiles + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
          l.tile_counts, tiles, l.counts[0], l.counts[1], l.counts[2]);
    } else {
      count_tiles<U><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(p, g, code_limit, codes, l.counts[0],
                                                                             l.counts[1], l.counts[2]);
    }
    if (tiles <= cuda_detail::kOneBlockScanItems) {
      cuda_detail::OneBlockScans scans;
      for (int k = 0; k < 3; ++k) scans.in[k] = l.counts[k], scans.out[k] = l.offsets[k];
      scans.count = 3;
      cuda_detail::exclusive_sums_one_block<<<1, cuda_detail::kOneBlockScanThreads, 0, stream>>>(scans, tiles, false);
    } else {
      for (int k = 0; k < 3; ++k) {
        size_t scan_bytes = l.scan_bytes;
        const cudaError_t err = cub::DeviceScan::ExclusiveSum(l.scan, scan_bytes, l.counts[k], l.offsets[k],
                                                              static_cast<uint64_t>(tiles), stream);
        if (err != cudaSuccess) return err;
      }
    }
    write_records<T><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(in, p, g, code_limit, c, tiles,
                                                                             outliers);
  }
  finish_encode<<<1, 1, 0, stream>>>(n, sizeof(T), c, tiles, outliers, outliers_size);
  return cudaGetLastError();
}

// ---- decode ----------------------------------------------------------------

struct OutlierLayout {
  uint32_t ok;
  uint64_t count, deltas, raws;
  size_t kind_at, delta_at, raw_at;
};

// The outlier stream's header as a layout; a bad one sets `bad` and counts
// nothing (ok = 0, no records).
__device__ OutlierLayout read_outlier_header(const uint8_t* o, size_t size, size_t n, unsigned width, uint32_t& bad) {
  OutlierLayout l{};
  bad = 0;
  if (size < kHeaderBytes) {
    bad = kOutliersTruncated;
  } else {
    l.count = load_word<uint64_t>(o);
    l.deltas = load_word<uint64_t>(o + 8);
    l.raws = load_word<uint64_t>(o + 16);
    if (!(l.count <= n && l.deltas <= l.count && l.raws <= l.count)) {
      bad = kCountsOutOfRange;
    } else {
      l.kind_at = kHeaderBytes + l.count * index_width_of(n);
      l.delta_at = l.kind_at + l.count;
      l.raw_at = l.delta_at + l.deltas * width;
      if (size != l.raw_at + l.raws * width) bad = kOutlierSizeMismatch;
    }
  }
  l.ok = bad == 0;
  if (bad) l.count = l.deltas = l.raws = 0;
  return l;
}

__global__ void check_header(const uint8_t* o, size_t size, size_t n, unsigned width, OutlierLayout* layout,
                             uint32_t* status) {
  uint32_t bad = 0;
  const OutlierLayout l = read_outlier_header(o, size, n, width, bad);
  if (bad) atomicOr(status, bad);
  *layout = l;
}

__device__ inline uint64_t index_at(const uint8_t* o, size_t index_width, uint64_t r) {
  return index_width == 4 ? load_word<uint32_t>(o + kHeaderBytes + 4 * r)
                          : load_word<uint64_t>(o + kHeaderBytes + 8 * r);
}

// Record r (< l.count): its flags, and the checks it fails.
__device__ uint32_t check_record(const uint8_t* o, size_t n, size_t r, const OutlierLayout& l, bool has_fill,
                                 uint64_t& has_delta, uint64_t& is_raw) {
  const size_t iw = index_width_of(n);
  const uint64_t index = index_at(o, iw, r);
  uint32_t bad = 0;
  if (!(index < n && (r == 0 || index > index_at(o, iw, r - 1)))) bad |= kIndicesNotIncreasing;
  const uint8_t kind = o[l.kind_at + r];
  if (!(kind != 0 && kind <= 7)) bad |= kBadKind;
  if ((kind & kValueMask) == kValueFill && !has_fill) bad |= kFillWithoutFillValue;
  has_delta = (kind & kHasDelta) != 0;
  is_raw = (kind & kValueMask) == kValueRaw;
  return bad;
}

// Flags for records [0, capacity): 0 beyond the header's count.
__global__ void __launch_bounds__(kThreads)
    check_records(const uint8_t* o, size_t n, size_t capacity, bool has_fill, const OutlierLayout* layout,
                  uint64_t* delta_flag, uint64_t* raw_flag, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const OutlierLayout l = *layout;
  uint64_t has_delta = 0, is_raw = 0;
  if (r < l.count) {
    const uint32_t bad = check_record(o, n, r, l, has_fill, has_delta, is_raw);
    if (bad) atomicOr(status, bad);
  }
  delta_flag[r] = has_delta;
  raw_flag[r] = is_raw;
}

__global__ void check_counts(size_t capacity, const uint64_t* delta_flag, const uint64_t* raw_flag,
                             const uint64_t* delta_rank, const uint64_t* raw_rank, OutlierLayout* layout,
                             uint32_t* status) {
  OutlierLayout l = *layout;
  if (!l.ok) return;
  uint64_t a = 0, w = 0;
  if (capacity > 0) {
    a = delta_rank[capacity - 1] + delta_flag[capacity - 1];
    w = raw_rank[capacity - 1] + raw_flag[capacity - 1];
  }
  if (a != l.deltas || w != l.raws) {
    atomicOr(status, kKindCountMismatch);
    layout->ok = 0;
  }
}

// check_header, check_records, the two rank scans and check_counts in one
// block, for outlier streams of at most kOneBlockScanItems records (a small
// chunk's: one launch where there were six, about 4 us of host time each),
// with the same layout, flags, ranks and status; the status word is set here
// (the general path clears it first).
// (The body is a device function so that decode_small runs it too, with
// kPer records per thread: fewer when there are fewer records, so that the
// work spreads over the whole block instead of a few threads' serial loops.)
template <unsigned kPer = cuda_detail::kOneBlockScanPerThread>
__device__ void check_outliers_in_one_block(const uint8_t* o, size_t size, size_t n, unsigned width, size_t capacity,
                                            bool has_fill, OutlierLayout* layout, uint64_t* delta_flag,
                                            uint64_t* raw_flag, uint64_t* delta_rank, uint64_t* raw_rank,
                                            uint32_t* status) {
  static_assert(kPer * cuda_detail::kOneBlockScanThreads <= cuda_detail::kOneBlockScanItems, "one block's records");
  using Scan = cub::BlockScan<uint64_t, cuda_detail::kOneBlockScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ OutlierLayout shared_layout;
  __shared__ uint32_t flags;
  if (threadIdx.x == 0) {
    uint32_t bad = 0;
    shared_layout = read_outlier_header(o, size, n, width, bad);
    flags = bad;
  }
  __syncthreads();
  const OutlierLayout l = shared_layout;
  const size_t first = static_cast<size_t>(threadIdx.x) * kPer;
  uint64_t deltas[kPer], raws[kPer];
  uint64_t my_deltas = 0, my_raws = 0;
  uint32_t bad = 0;
#pragma unroll
  for (unsigned j = 0; j < kPer; ++j) {
    const size_t r = first + j;
    uint64_t has_delta = 0, is_raw = 0;
    if (r < capacity && r < l.count) bad |= check_record(o, n, r, l, has_fill, has_delta, is_raw);
    if (r < capacity) {
      delta_flag[r] = has_delta;
      raw_flag[r] = is_raw;
    }
    deltas[j] = has_delta;
    raws[j] = is_raw;
    my_deltas += has_delta;
    my_raws += is_raw;
  }
  if (bad) atomicOr(&flags, bad);
  uint64_t delta_before = 0, all_deltas = 0, raw_before = 0, all_raws = 0;
  Scan(temp).ExclusiveSum(my_deltas, delta_before, all_deltas);
  __syncthreads();
  Scan(temp).ExclusiveSum(my_raws, raw_before, all_raws);
#pragma unroll
  for (unsigned j = 0; j < kPer; ++j) {
    const size_t r = first + j;
    if (r < capacity) {
      delta_rank[r] = delta_before;
      raw_rank[r] = raw_before;
    }
    delta_before += deltas[j];
    raw_before += raws[j];
  }
  __syncthreads();  // every flag is in
  if (threadIdx.x == 0) {
    OutlierLayout out = l;
    uint32_t all = flags;
    if (out.ok && (all_deltas != out.deltas || all_raws != out.raws)) {  // as check_counts
      all |= kKindCountMismatch;
      out.ok = 0;
    }
    *layout = out;
    *status = all;
  }
}

__global__ void __launch_bounds__(cuda_detail::kOneBlockScanThreads)
    check_small_outliers(const uint8_t* o, size_t size, size_t n, unsigned width, size_t capacity, bool has_fill,
                         OutlierLayout* layout, uint64_t* delta_flag, uint64_t* raw_flag, uint64_t* delta_rank,
                         uint64_t* raw_rank, uint32_t* status) {
  check_outliers_in_one_block<>(o, size, n, width, capacity, has_fill, layout, delta_flag, raw_flag, delta_rank,
                                raw_rank, status);
}

// Element i's delta from its code; a code outside the radius sets `bad`.
template <typename U>
__device__ __forceinline__ U delta_of_code(const uint8_t* codes, size_t i, U code_limit, uint32_t& bad) {
  const U code = load_word<uint16_t>(codes + 2 * i);
  if (!(code < code_limit)) bad |= kCodeOutOfRadius;
  return unzigzag(code);
}

// only_with_deltas: nothing to do unless the (valid) outlier stream stores
// deltas (the row kernel reads the codes itself otherwise). Grid-stride, so
// that skipping costs one small launch.
template <typename U>
__global__ void __launch_bounds__(kThreads)
    unpack_codes(const uint8_t* codes, size_t n, U code_limit, U* d, uint32_t* status, const OutlierLayout* layout,
                 bool only_with_deltas) {
  if (only_with_deltas && !(layout->ok && layout->deltas > 0)) return;
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  uint32_t bad = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    d[i] = delta_of_code(codes, i, code_limit, bad);
  if (bad) atomicOr(status, bad);
}

// Record r's stored delta written over its element's delta in d; returns
// the checks it fails.
template <typename U>
__device__ uint32_t place_delta(const uint8_t* o, const uint8_t* codes, size_t n, size_t r, U code_limit,
                                const OutlierLayout& l, const uint64_t* delta_rank, U* d) {
  if (!l.ok || r >= l.count) return 0;
  const uint8_t kind = o[l.kind_at + r];
  if (!(kind & kHasDelta)) return 0;
  const uint64_t index = index_at(o, index_width_of(n), r);
  const uint64_t slot = delta_rank[r];
  if (index >= n || slot >= l.deltas) return 0;  // reported by check_records / check_counts
  uint32_t bad = 0;
  if (load_word<uint16_t>(codes + 2 * index) != 0) bad |= kNonzeroCodeAtOutlier;
  const U stored = load_word<U>(o + l.delta_at + sizeof(U) * slot);
  if (zigzag(stored) < code_limit) bad |= kStoredDeltaFits;
  d[index] = stored;
  return bad;
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    place_deltas(const uint8_t* o, const uint8_t* codes, size_t n, size_t capacity, U code_limit,
                 const OutlierLayout* layout, const uint64_t* delta_rank, U* d, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const uint32_t bad = place_delta(o, codes, n, r, code_limit, *layout, delta_rank, d);
  if (bad) atomicOr(status, bad);
}

// Element i of the chunk from its prefix sum p: x' = (T)p * eb2, the CPU's
// arithmetic; false when p is outside [-PMAX, PMAX] (a malformed stream).
template <typename T>
__device__ __forceinline__ bool store_value(typename Traits<T>::U p, T eb2, uint8_t* out, size_t i) {
  using U = typename Traits<T>::U;
  using I = typename Traits<T>::I;
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  const T x = static_cast<T>(static_cast<I>(p)) * eb2;
  U bits;
  memcpy(&bits, &x, sizeof(T));
  store_word<U>(out + sizeof(T) * i, bits);
  return static_cast<U>(p + kPMax) <= static_cast<U>(2 * kPMax);
}

// ---- decode by rows (rows of at most kMaxRowLength elements) ----------------
//
// The inverse of the Lorenzo predictor is an inclusive prefix sum along x,
// y and z. plane_sums: one warp per (plane, segment of `rows` rows) sums
// each row along x (lane l holds x = l + 32j: coalesced loads, a warp scan
// per 32 elements) and keeps running column sums down the segment; it writes
// those partial sums and each segment's column totals. segment_offsets turns
// the totals into what the segments above add (an exclusive sum per plane and
// x); depth_sums walks z per (y, x), adding both, and converts to values.
// Three passes over the data instead of seven. (When the planes have few
// columns, the depth is walked in segments: two more passes, see
// depth_segment_totals.)

template <typename U>
__device__ __forceinline__ U warp_inclusive_sum(U v, unsigned lane) {
#pragma unroll
  for (unsigned d = 1; d < 32; d <<= 1) {
    const U other = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane >= d) v += other;
  }
  return v;
}

// Deltas come from the codes, or (when the outlier stream stores deltas)
// from `deltas`, which unpack_codes and place_deltas filled. The next row is
// loaded while this one is summed, and the row's K warp scans are independent
// (their carries are added afterwards), so neither memory nor shuffle latency
// serialises a warp.
template <typename U, unsigned K>
__global__ void __launch_bounds__(kThreads)
    plane_sums(const uint16_t* __restrict__ codes, const U* __restrict__ deltas, const OutlierLayout* layout, Shape s,
               size_t rows, size_t segments, U code_limit, U* __restrict__ sums, U* __restrict__ totals,
               uint32_t* status) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t task = static_cast<size_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5);
  if (task >= s.nz * segments) return;  // the whole warp
  const size_t z = task / segments, segment = task % segments;
  const size_t y0 = segment * rows, y1 = y0 + rows < s.ny ? y0 + rows : s.ny;
  const bool stored = layout->ok && layout->deltas > 0;
  bool bad = false;
  // Raw words of a row (codes or deltas; x clamped into the row, so every
  // load is unconditional and all K are in flight together) ...
  auto load_row = [&](size_t y, U (&v)[K]) {
    const size_t row = (z * s.ny + y) * s.nx;
    if (stored) {
#pragma unroll
      for (unsigned j = 0; j < K; ++j) v[j] = deltas[row + (lane + 32 * j < s.nx ? lane + 32 * j : s.nx - 1)];
    } else {
#pragma unroll
      for (unsigned j = 0; j < K; ++j) v[j] = codes[row + (lane + 32 * j < s.nx ? lane + 32 * j : s.nx - 1)];
    }
  };
  // ... turned into deltas only when the next row's loads are on their way.
  auto deltas_of = [&](U (&v)[K]) {
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const bool inside = lane + 32 * j < s.nx;
      U d = v[j];
      if (!stored) {
        bad |= inside && !(d < code_limit);
        d = unzigzag(d);
      }
      v[j] = inside ? d : U{0};
    }
  };
  U column[K], v[K];
#pragma unroll
  for (unsigned j = 0; j < K; ++j) column[j] = 0;
  load_row(y0, v);
  for (size_t y = y0; y < y1; ++y) {
    U next[K];
    if (y + 1 < y1) load_row(y + 1, next);  // uniform
    deltas_of(v);
#pragma unroll
    for (unsigned j = 0; j < K; ++j) v[j] = warp_inclusive_sum(v[j], lane);
    U carry = 0;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const U total = __shfl_sync(0xFFFFFFFFu, v[j], 31);
      column[j] += v[j] + carry;
      carry += total;
    }
    const size_t row = (z * s.ny + y) * s.nx;
#pragma unroll
    for (unsigned j = 0; j < K; ++j) {
      const size_t x = lane + 32 * j;
      if (x < s.nx) sums[row + x] = column[j];
      v[j] = next[j];
    }
  }
  U* total = totals + (z * segments + segment) * s.nx;
#pragma unroll
  for (unsigned j = 0; j < K; ++j) {
    const size_t x = lane + 32 * j;
    if (x < s.nx) total[x] = column[j];
  }
  if (__any_sync(0xFFFFFFFFu, bad) && lane == 0) atomicOr(status, kCodeOutOfRadius);
}

// totals[z][k][x] becomes the sum of totals[z][0..k-1][x]; eight loads in
// flight at a time.
template <typename U>
__global__ void __launch_bounds__(kThreads) segment_offsets(U* totals, Shape s, size_t segments) {
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= s.nz * s.nx) return;
  U* at = totals + (c / s.nx) * segments * s.nx + c % s.nx;
  U acc = 0;
  for (size_t k = 0; k < segments; k += 8, at += 8 * s.nx) {
    U t[8];
#pragma unroll
    for (unsigned q = 0; q < 8; ++q) t[q] = k + q < segments ? at[q * s.nx] : U{0};
#pragma unroll
    for (unsigned q = 0; q < 8; ++q) {
      if (k + q < segments) at[q * s.nx] = acc;
      acc += t[q];
    }
  }
}

// The planes' 2-D sums: element (z, c) of the plane, c = y * nx + x.
template <typename U>
struct PlaneSums {
  const U* sums;     // plane_sums' partial sums
  const U* offsets;  // segment_offsets' carries
  size_t plane, nx, rows, offset_stride;
  __device__ const U* offset_of(size_t c) const { return offsets + (c / nx / rows) * nx + c % nx; }
};

// Walks z over planes [z0, z1) of column c, from `acc` (the sum of the
// planes before z0); calls emit(z, acc) after each plane, four planes'
// loads in flight at a time.
template <typename U, typename Emit>
__device__ __forceinline__ U walk_depth(const PlaneSums<U>& p, size_t c, size_t z0, size_t z1, U acc, Emit&& emit) {
  const U* offset = p.offset_of(c);
  size_t z = z0;
  for (; z + 4 <= z1; z += 4) {
    U a[4], b[4];
#pragma unroll
    for (unsigned q = 0; q < 4; ++q) {
      a[q] = p.sums[(z + q) * p.plane + c];
      b[q] = offset[(z + q) * p.offset_stride];
    }
#pragma unroll
    for (unsigned q = 0; q < 4; ++q) {
      acc += a[q] + b[q];
      emit(z + q, acc);
    }
  }
  for (; z < z1; ++z) {
    acc += p.sums[z * p.plane + c] + offset[z * p.offset_stride];
    emit(z, acc);
  }
  return acc;
}

// Thread t's part of the depth walk: column c over planes [z0, z1) of depth
// segment k (t = k * plane + c); none past the last segment.
struct DepthPart {
  size_t c, z0, z1;
  __device__ DepthPart(size_t t, size_t plane, size_t nz, size_t length)
      : c(t % plane), z0(t / plane * length), z1(z0 + length < nz ? z0 + length : nz) {}
};

// Thread (k, c): the z sums of column c over depth segment k (planes
// [k * length, (k + 1) * length)), from depth_carries[k][c] (the segments
// above; none when there is one segment), converted to values.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    depth_sums(PlaneSums<typename Traits<T>::U> p, size_t nz, size_t length, size_t depth_segments,
               const typename Traits<T>::U* depth_carries, T eb2, uint8_t* out, uint32_t* status) {
  using U = typename Traits<T>::U;
  const size_t t = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= depth_segments * p.plane) return;
  const DepthPart part(t, p.plane, nz, length);
  bool bad = false;
  walk_depth(p, part.c, part.z0, part.z1, depth_carries ? depth_carries[t] : U{0},
             [&](size_t z, U acc) { bad |= !store_value<T>(acc, eb2, out, z * p.plane + part.c); });
  if (bad) atomicOr(status, kValueOutOfRange);
}

// For chunks of few, deep columns (h5py's (n, 64, 64) chunks: 4096 columns
// of 1024 planes), one thread per column leaves most of the GPU idle: 206 us
// for a 16 MiB chunk under ncu, the rest of its decode 80. The depth is then
// cut into segments: each segment's column totals, their exclusive sums down
// the segments, and the walks from those carries (depth_sums).
template <typename U>
__global__ void __launch_bounds__(kThreads)
    depth_segment_totals(PlaneSums<U> p, size_t nz, size_t length, size_t depth_segments, U* totals) {
  const size_t t = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= depth_segments * p.plane) return;
  const DepthPart part(t, p.plane, nz, length);
  totals[t] = walk_depth(p, part.c, part.z0, part.z1, U{0}, [](size_t, U) {});
}

template <typename U>
__global__ void __launch_bounds__(kThreads) depth_segment_carries(U* totals, size_t plane, size_t depth_segments) {
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= plane) return;
  U acc = 0;
  for (size_t k = 0; k < depth_segments; ++k) {
    const U t = totals[k * plane + c];
    totals[k * plane + c] = acc;
    acc += t;
  }
}



// Inclusive sums along y (Axis 1) or z (Axis 2), one thread per column.
template <typename U, int Axis>
__global__ void __launch_bounds__(kThreads) column_sums(U* d, Shape s) {
  const size_t columns = Axis == 1 ? s.nz * s.nx : s.ny * s.nx;
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= columns) return;
  size_t at, stride, len;
  if (Axis == 1) {
    at = (c / s.nx) * s.ny * s.nx + c % s.nx;
    stride = s.nx;
    len = s.ny;
  } else {
    at = c;
    stride = s.nx * s.ny;
    len = s.nz;
  }
  U acc = 0;
  for (size_t k = 0; k < len; ++k, at += stride) {
    acc += d[at];
    d[at] = acc;
  }
}

// Position j of the axis-major order (the axis fastest) -> element index, and
// j -> its line (the key of the scan).
struct AxisOrder {
  Shape s;
  int axis;  // 0 x, 1 y, 2 z
  __host__ __device__ size_t operator()(size_t j) const {
    if (axis == 0) return j;
    if (axis == 1) {  // j = (z * nx + x) * ny + y
      const size_t y = j % s.ny, zx = j / s.ny;
      return ((zx / s.nx) * s.ny + y) * s.nx + zx % s.nx;
    }
    const size_t z = j % s.nz, yx = j / s.nz;  // j = (y * nx + x) * nz + z
    return z * s.ny * s.nx + yx;
  }
};
struct LineOf {
  size_t length;
  __host__ __device__ size_t operator()(size_t j) const { return j / length; }
};

using Counting = thrust::counting_iterator<size_t>;
using KeyIterator = thrust::transform_iterator<LineOf, Counting>;
using PositionIterator = thrust::transform_iterator<AxisOrder, Counting>;

template <typename U>
using PermutedIterator = thrust::permutation_iterator<U*, PositionIterator>;

template <typename U>
cudaError_t scan_axis(void* temp, size_t& temp_bytes, const U* src, U* dst, const Shape& s, int axis,
                      cudaStream_t stream) {
  const size_t length = axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz;
  const KeyIterator keys(Counting(0), LineOf{length});
  const PositionIterator positions(Counting(0), AxisOrder{s, axis});
  PermutedIterator<U> in(const_cast<U*>(src), positions);
  PermutedIterator<U> out(dst, positions);
  return cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys, in, out, static_cast<uint64_t>(s.n),
                                            ::cuda::std::equal_to<>(), stream);
}

template <typename U>
size_t scan_axis_bytes(const Shape& s) {
  size_t most = 0;
  for (int axis = 0; axis < 3; ++axis) {
    size_t bytes = 0;
    scan_axis<U>(nullptr, bytes, nullptr, nullptr, s, axis, nullptr);
    if (bytes > most) most = bytes;
  }
  return most;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    convert(const typename Traits<T>::U* p, size_t n, T eb2, uint8_t* out, uint32_t* status) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  if (!store_value<T>(p[i], eb2, out, i)) atomicOr(status, kValueOutOfRange);
}

// Record r's special value (raw bits, the fill value or -0) written over its
// element, which must have decoded to +0; returns the checks it fails.
template <typename U>
__device__ uint32_t patch_special(const uint8_t* o, size_t n, size_t r, U fill_bits, const OutlierLayout& l,
                                  const uint64_t* raw_rank, uint8_t* out) {
  if (!l.ok || r >= l.count) return 0;
  const uint8_t value = o[l.kind_at + r] & kValueMask;
  if (value == kValueQuantized) return 0;
  const uint64_t index = index_at(o, index_width_of(n), r);
  if (index >= n) return 0;  // reported by check_records
  const uint32_t bad = load_word<U>(out + sizeof(U) * index) != 0 ? kSpecialNotZero : 0;
  U bits;
  if (value == kValueRaw) {
    const uint64_t slot = raw_rank[r];
    if (slot >= l.raws) return bad;  // reported by check_counts
    bits = load_word<U>(o + l.raw_at + sizeof(U) * slot);
  } else {
    bits = value == kValueFill ? fill_bits : static_cast<U>(U{1} << (8 * sizeof(U) - 1));
  }
  store_word<U>(out + sizeof(U) * index, bits);
  return bad;
}

template <typename U>
__global__ void __launch_bounds__(kThreads)
    patch_specials(const uint8_t* o, size_t n, size_t capacity, U fill_bits, const OutlierLayout* layout,
                   const uint64_t* raw_rank, uint8_t* out, uint32_t* status) {
  const size_t r = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (r >= capacity) return;
  const uint32_t bad = patch_special(o, n, r, fill_bits, *layout, raw_rank, out);
  if (bad) atomicOr(status, bad);
}

// ---- small chunks: the whole decode in one launch of one block -------------
//
// A chunk of at most kSmallElements elements (16 KiB of float32) decodes in
// one launch where the general path takes seven to ten, about 4 us of host
// time each on the H100 machine: most of a small chunk's decode there. The
// steps and checks are the general path's, in the same order; the deltas live
// in shared memory. Each axis's inclusive sums are a segmented block scan over
// the elements in that axis's order (its lines back to back), so every shape
// runs in parallel, whatever its longest axis.
constexpr size_t kSmallElements = cuda_detail::kOneBlockScanItems;
constexpr unsigned kSmallThreads = cuda_detail::kOneBlockScanThreads;
// Chunks of at most kSmallerElements take 4 elements (and records) per
// thread instead of 16: the whole block works on a 4 KiB chunk. (On the H100
// machine, at its idle clock, 16 per thread took 31 us of GPU time for a
// 4 KiB chunk, most of the chunk's decode.)
constexpr size_t kSmallerElements = size_t{kSmallThreads} * 4;

// A running sum that restarts at a line's first element: (start, sum) pairs
// combine associatively, which lets a block scan carry sums across threads.
template <typename U>
struct LineSum {
  U sum;
  uint32_t starts;  // a line begins within (1) or not (0)
};
template <typename U>
struct CombineLineSums {
  __device__ LineSum<U> operator()(const LineSum<U>& a, const LineSum<U>& b) const {
    return b.starts ? b : LineSum<U>{static_cast<U>(a.sum + b.sum), a.starts};
  }
};

// Inclusive sums of v (the chunk's n elements, x fastest) along `axis`.
template <unsigned kPer, typename U>
__device__ void small_axis_sums(U* v, const Shape& s, int axis,
                                typename cub::BlockScan<LineSum<U>, kSmallThreads>::TempStorage& temp) {
  const unsigned n = static_cast<unsigned>(s.n);
  const unsigned length = static_cast<unsigned>(axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz);
  const AxisOrder element{s, axis};  // position in the axis's order -> element index
  const unsigned first = threadIdx.x * kPer;
  U sums[kPer];
  LineSum<U> mine{0, 0};
#pragma unroll
  for (unsigned k = 0; k < kPer; ++k) {
    const unsigned j = first + k;
    const U x = j < n ? v[element(j)] : U{0};
    const bool starts = j < n && j % length == 0;
    mine = starts ? LineSum<U>{x, 1} : LineSum<U>{static_cast<U>(mine.sum + x), mine.starts};
    sums[k] = mine.sum;
  }
  LineSum<U> before{0, 0};
  cub::BlockScan<LineSum<U>, kSmallThreads>(temp).ExclusiveScan(mine, before, LineSum<U>{0, 0},
                                                                  CombineLineSums<U>());
  // Every thread has read its elements (the scan synchronises): write back,
  // adding what the line carried in until the thread's first line start.
  bool carried = true;
#pragma unroll
  for (unsigned k = 0; k < kPer; ++k) {
    const unsigned j = first + k;
    if (j >= n) break;
    if (j % length == 0) carried = false;
    v[element(j)] = carried ? static_cast<U>(sums[k] + before.sum) : sums[k];
  }
  __syncthreads();  // before the next axis reads, and before temp is reused
}

template <typename T, unsigned kPer>
__global__ void __launch_bounds__(kSmallThreads)
    decode_small(const uint8_t* codes, const uint8_t* o, size_t outliers_size, Shape s, size_t capacity,
                 bool has_fill, typename Traits<T>::U code_limit, T eb2, typename Traits<T>::U fill_bits,
                 OutlierLayout* layout, uint64_t* delta_flag, uint64_t* raw_flag, uint64_t* delta_rank,
                 uint64_t* raw_rank, uint8_t* out, uint32_t* status) {
  using U = typename Traits<T>::U;
  __shared__ U v[kSmallElements];
  __shared__ typename cub::BlockScan<LineSum<U>, kSmallThreads>::TempStorage temp;
  check_outliers_in_one_block<kPer>(o, outliers_size, s.n, sizeof(T), capacity, has_fill, layout, delta_flag,
                                    raw_flag, delta_rank, raw_rank, status);
  __syncthreads();  // the layout, the ranks and the status word are written
  const OutlierLayout l = *layout;
  const unsigned n = static_cast<unsigned>(s.n);
  uint32_t bad = 0;
  for (unsigned i = threadIdx.x; i < n; i += kSmallThreads) v[i] = delta_of_code(codes, i, code_limit, bad);
  __syncthreads();
  for (size_t r = threadIdx.x; r < capacity; r += kSmallThreads)  // place_deltas
    bad |= place_delta(o, codes, s.n, r, code_limit, l, delta_rank, v);
  __syncthreads();
  for (int axis = 0; axis < 3; ++axis) {
    const size_t length = axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz;
    if (length > 1) small_axis_sums<kPer>(v, s, axis, temp);
  }
  for (unsigned i = threadIdx.x; i < n; i += kSmallThreads)  // convert
    if (!store_value<T>(v[i], eb2, out, i)) bad |= kValueOutOfRange;
  __syncthreads();  // patch_special reads elements other threads wrote
  for (size_t r = threadIdx.x; r < capacity; r += kSmallThreads)  // patch_specials
    bad |= patch_special(o, s.n, r, fill_bits, l, raw_rank, out);
  if (bad) atomicOr(status, bad);
}

size_t record_capacity(size_t n, size_t outliers_size) {
  if (outliers_size < kHeaderBytes) return 0;
  const size_t by_stream = (outliers_size - kHeaderBytes) / (index_width_of(n) + 1);
  return by_stream < n ? by_stream : n;
}

struct DecodeLayout {
  OutlierLayout* layout;
  uint64_t* delta_flag;
  uint64_t* raw_flag;
  uint64_t* delta_rank;
  uint64_t* raw_rank;
  void* scan;
  size_t scan_bytes;
  void* d;
  void* e;
  void* totals;           // plane_sums' segment totals (decoding by rows)
  size_t depth_segments;  // depth_segments_of the shape (decoding by rows)
  void* depth_totals;     // depth segments' column totals, then carries (null: one segment)
  size_t total;
};

template <typename U>
DecodeLayout decode_layout(void* scratch, const Shape& s, size_t outliers_size) {
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t capacity = record_capacity(s.n, outliers_size);
  DecodeLayout l;
  size_t at = 0;
  l.layout = reinterpret_cast<OutlierLayout*>(base + at);
  at += aligned(sizeof(OutlierLayout));
  uint64_t** arrays[4] = {&l.delta_flag, &l.raw_flag, &l.delta_rank, &l.raw_rank};
  for (uint64_t** a : arrays) {
    *a = reinterpret_cast<uint64_t*>(base + at);
    at += aligned(capacity * 8);
  }
  const size_t record_scan = exclusive_scan_bytes(capacity);
  const size_t axis_scan = s.n > 0 ? scan_axis_bytes<U>(s) : 0;
  l.scan = base + at;
  l.scan_bytes = record_scan > axis_scan ? record_scan : axis_scan;
  at += aligned(l.scan_bytes);
  l.d = base + at;
  at += aligned(s.n * sizeof(U));
  l.e = base + at;
  at += aligned(s.n * sizeof(U));
  l.totals = base + at;
  l.depth_segments = 1;
  l.depth_totals = nullptr;
  if (decodes_by_rows(s)) {
    const size_t rows = rows_per_segment(s);
    at += aligned(s.nz * ((s.ny + rows - 1) / rows) * s.nx * sizeof(U));
    l.depth_segments = depth_segments_of(s);
    if (l.depth_segments > 1) {
      l.depth_totals = base + at;
      at += aligned(l.depth_segments * s.ny * s.nx * sizeof(U));
    }
  }
  l.total = at;
  return l;
}

unsigned blocks_for(size_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

template <typename T>
cudaError_t decode_typed(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size, const Shape& s,
                         const Config& config, uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  if ((n + kThreads - 1) / kThreads > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  const size_t capacity = record_capacity(n, outliers_size);
  const DecodeLayout l = decode_layout<U>(scratch, s, outliers_size);
  const U code_limit = static_cast<U>(2 * config.radius);
  const T eb2 = static_cast<T>(config.eb) * 2;
  const U fill_bits = static_cast<U>(config.fill_bits);
  cudaError_t err = cudaSuccess;
  if (n > 0 && n <= kSmallElements) {  // (then capacity <= n fits the one-block checks too)
    auto kernel = n <= kSmallerElements ? decode_small<T, 4> : decode_small<T, cuda_detail::kOneBlockScanPerThread>;
    kernel<<<1, kSmallThreads, 0, stream>>>(codes, outliers, outliers_size, s, capacity, config.has_fill, code_limit,
                                            eb2, fill_bits, l.layout, l.delta_flag, l.raw_flag, l.delta_rank,
                                            l.raw_rank, out, status);
    return cudaGetLastError();
  }
  if (capacity <= cuda_detail::kOneBlockScanItems) {
    check_small_outliers<<<1, cuda_detail::kOneBlockScanThreads, 0, stream>>>(
        outliers, outliers_size, n, sizeof(T), capacity, config.has_fill, l.layout, l.delta_flag, l.raw_flag,
        l.delta_rank, l.raw_rank, status);
  } else {
    err = cudaMemsetAsync(status, 0, sizeof(uint32_t), stream);
    if (err != cudaSuccess) return err;
    check_header<<<1, 1, 0, stream>>>(outliers, outliers_size, n, sizeof(T), l.layout, status);
    check_records<<<blocks_for(capacity), kThreads, 0, stream>>>(outliers, n, capacity, config.has_fill, l.layout,
                                                                l.delta_flag, l.raw_flag, status);
    size_t bytes = l.scan_bytes;
    err = cub::DeviceScan::ExclusiveSum(l.scan, bytes, l.delta_flag, l.delta_rank, static_cast<uint64_t>(capacity),
                                        stream);
    if (err != cudaSuccess) return err;
    bytes = l.scan_bytes;
    err = cub::DeviceScan::ExclusiveSum(l.scan, bytes, l.raw_flag, l.raw_rank, static_cast<uint64_t>(capacity),
                                        stream);
    if (err != cudaSuccess) return err;
    check_counts<<<1, 1, 0, stream>>>(capacity, l.delta_flag, l.raw_flag, l.delta_rank, l.raw_rank, l.layout,
                                      status);
  }
  if (n == 0) return cudaGetLastError();

  U* d = static_cast<U*>(l.d);
  U* e = static_cast<U*>(l.e);
  if (decodes_by_rows(s) && (reinterpret_cast<uintptr_t>(codes) & 1) == 0) {
    unpack_codes<U><<<stride_grid(n), kThreads, 0, stream>>>(codes, n, code_limit, d, status, l.layout, true);
    if (capacity > 0)
      place_deltas<U><<<blocks_for(capacity), kThreads, 0, stream>>>(outliers, codes, n, capacity, code_limit,
                                                                    l.layout, l.delta_rank, d, status);
    const size_t rows = rows_per_segment(s), segments = (s.ny + rows - 1) / rows;
    U* totals = static_cast<U*>(l.totals);
    const unsigned warps_grid = static_cast<unsigned>((s.nz * segments + kRowWarps - 1) / kRowWarps);
    const size_t k = (s.nx + 31) / 32;
    auto rows_kernel = k <= 1 ? plane_sums<U, 1> : k <= 2 ? plane_sums<U, 2> : k <= 4 ? plane_sums<U, 4>
                     : k <= 8 ? plane_sums<U, 8> : k <= 16 ? plane_sums<U, 16> : plane_sums<U, 32>;
    rows_kernel<<<warps_grid, kThreads, 0, stream>>>(reinterpret_cast<const uint16_t*>(codes), d, l.layout, s, rows,
                                                     segments, code_limit, e, totals, status);
    segment_offsets<U><<<blocks_for(s.nz * s.nx), kThreads, 0, stream>>>(totals, s, segments);
    const PlaneSums<U> planes{e, totals, s.ny * s.nx, s.nx, rows, segments * s.nx};
    const size_t depth_segments = l.depth_segments;
    const size_t length = (s.nz + depth_segments - 1) / depth_segments;
    U* carries = static_cast<U*>(l.depth_totals);
    if (depth_segments > 1) {
      depth_segment_totals<U><<<blocks_for(depth_segments * planes.plane), kThreads, 0, stream>>>(
          planes, s.nz, length, depth_segments, carries);
      depth_segment_carries<U><<<blocks_for(planes.plane), kThreads, 0, stream>>>(carries, planes.plane,
                                                                                 depth_segments);
    }
    depth_sums<T><<<blocks_for(depth_segments * planes.plane), kThreads, 0, stream>>>(
        planes, s.nz, length, depth_segments, carries, eb2, out, status);
    if (capacity > 0)
      patch_specials<U><<<blocks_for(capacity), kThreads, 0, stream>>>(
          outliers, n, capacity, fill_bits, l.layout, l.raw_rank, out, status);
    return cudaGetLastError();
  }
  unpack_codes<U><<<stride_grid(n), kThreads, 0, stream>>>(codes, n, code_limit, d, status, l.layout, false);
  if (capacity > 0)
    place_deltas<U><<<blocks_for(capacity), kThreads, 0, stream>>>(outliers, codes, n, capacity, code_limit, l.layout,
                                                                  l.delta_rank, d, status);
  // x sums: d -> e; y and z sums in place (column kernel) or ping-pong.
  U* cur = e;
  U* other = d;
  {
    size_t bytes = l.scan_bytes;
    err = scan_axis<U>(l.scan, bytes, d, e, s, 0, stream);
    if (err != cudaSuccess) return err;
  }
  for (int axis = 1; axis <= 2; ++axis) {
    const size_t length = axis == 1 ? s.ny : s.nz;
    if (length <= 1) continue;
    const size_t columns = n / length;
    if (columns >= kMinColumns) {
      if (axis == 1) column_sums<U, 1><<<blocks_for(columns), kThreads, 0, stream>>>(cur, s);
      else column_sums<U, 2><<<blocks_for(columns), kThreads, 0, stream>>>(cur, s);
    } else {
      size_t bytes = l.scan_bytes;
      err = scan_axis<U>(l.scan, bytes, cur, other, s, axis, stream);
      if (err != cudaSuccess) return err;
      U* t = cur;
      cur = other;
      other = t;
    }
  }
  convert<T><<<blocks_for(n), kThreads, 0, stream>>>(cur, n, eb2, out, status);
  if (capacity > 0)
    patch_specials<U><<<blocks_for(capacity), kThreads, 0, stream>>>(
        outliers, n, capacity, fill_bits, l.layout, l.raw_rank, out, status);
  return cudaGetLastError();
}

bool arguments_ok(const std::vector<size_t>& dims, const Config& config, Shape& s) {
  if (config.width != 4 && config.width != 8) return false;
  if (!make_shape(dims, s)) return false;
  return config.width == 4 ? config_ok<float>(config) : config_ok<double>(config);
}

}  // namespace

size_t max_outliers_bytes(const std::vector<size_t>& dims, unsigned width) {
  Shape s;
  if (!make_shape(dims, s)) return kHeaderBytes;
  return kHeaderBytes + s.n * (index_width_of(s.n) + 1 + 2 * static_cast<size_t>(width));
}

size_t encode_scratch_bytes(const std::vector<size_t>& dims, unsigned width) {
  Shape s;
  if (!make_shape(dims, s)) return 0;
  return encode_layout(nullptr, s.n, width).total;
}

cudaError_t encode(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                   uint8_t* codes, uint8_t* outliers, uint64_t* outliers_size, void* scratch, cudaStream_t stream) {
  Shape s;
  if (!arguments_ok(dims, config, s)) return cudaErrorInvalidValue;
  if (!(user_bound > 0) || !std::isfinite(user_bound)) return cudaErrorInvalidValue;
  return config.width == 4
             ? encode_typed<float>(in, s, config, user_bound, codes, outliers, outliers_size, scratch, stream)
             : encode_typed<double>(in, s, config, user_bound, codes, outliers, outliers_size, scratch, stream);
}

size_t decode_scratch_bytes(const std::vector<size_t>& dims, unsigned width, size_t outliers_size) {
  Shape s;
  if (!make_shape(dims, s)) return 0;
  return width == 4 ? decode_layout<uint32_t>(nullptr, s, outliers_size).total
                    : decode_layout<uint64_t>(nullptr, s, outliers_size).total;
}

cudaError_t decode(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size,
                   const std::vector<size_t>& dims, const Config& config, uint8_t* out, uint32_t* status,
                   void* scratch, cudaStream_t stream) {
  Shape s;
  if (!arguments_ok(dims, config, s)) return cudaErrorInvalidValue;
  return config.width == 4
             ? decode_typed<float>(codes, outliers, outliers_size, s, config, out, status, scratch, stream)
             : decode_typed<double>(codes, outliers, outliers_size, s, config, out, status, scratch, stream);
}

}  // namespace fz::lorenzo::cuda
