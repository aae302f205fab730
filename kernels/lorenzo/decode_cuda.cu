// LORENZO on the GPU, decode: the host dispatch (scratch layout, launches,
// stream). Stream format: lorenzo/lorenzo.hpp; host interface:
// lorenzo/lorenzo_cuda.hpp. The rules are the CPU's (lorenzo_rules.hpp); only
// the schedule differs:
//   finish_encode the header and the stream's length.
// Decode:
//   check_header  one thread: counts and the stream's size (as the CPU);
//   check_records one thread per record: index order, kinds, delta/raw flags;
//   exclusive scans of the flags give each record its stored delta / raw slot;
//   check_counts  one thread: the flags add up to the header's counts;
//   unpack_codes  codes -> deltas (range-checked);
//   place_deltas  stored deltas written over the outlier positions;
//   inclusive prefix sums along x, y and z, modulo 2^bits (the CPU's
//   arithmetic), and the conversion x' = (T)p * eb2 with its range check:
//   rows of at most kMaxRowLength elements by tiles (tile_totals,
//   place_tile_deltas, tile_carries, tile_values; unpack_codes only when the
//   outlier stream stores deltas); longer rows along x (scan by key over
//   rows), then y, then z (a thread per column when there are many columns,
//   otherwise a scan by key over the permuted axis), then convert;
//   patch_specials the specials' bits (p must be 0 there).
// A chunk of at most kSmallElements elements takes all of these steps in one
// The kernels: outliers_cuda.cuh (records, stored deltas, specials),
// decode_rows_kernels_cuda.cuh (short rows), axis_sums_cuda.cuh (long rows),
// decode_small_kernels_cuda.cuh (small chunks).
#include <cub/device/device_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/one_block_scan_cuda.cuh"
#include "lorenzo/axis_sums_cuda.cuh"
#include "lorenzo/common_cuda.cuh"
#include "lorenzo/decode_rows_kernels_cuda.cuh"
#include "lorenzo/decode_small_kernels_cuda.cuh"
#include "lorenzo/lorenzo_cuda.hpp"
#include "lorenzo/outliers_cuda.cuh"

namespace fz::lorenzo::cuda {
namespace {

using namespace detail;

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
  // Decoding by rows (decode_rows_kernels_cuda.cuh), each null where the
  // tiling needs none: strip sums (more than one strip), depth sums (more
  // than one depth segment), tile sums (both).
  void* strip_sums;
  void* depth_sums;
  void* tile_sums;
  size_t total;
};

// Whether the rows path decodes in `out` itself: the deltas (when the
// outlier stream stores them) are written over the output, and tile_values
// reads each element's delta before its value replaces it, in the same
// thread; so the scratch holds no n-element array (issue 31 item 5).
bool decodes_in_place(const Shape& s, const uint8_t* codes, const uint8_t* out) {
  return s.n > kSmallElements && decodes_by_rows(s) && (reinterpret_cast<uintptr_t>(codes) & 1) == 0 &&
         out != nullptr && (reinterpret_cast<uintptr_t>(out) & 15) == 0;
}

template <typename U>
DecodeLayout decode_layout(void* scratch, const Shape& s, size_t outliers_size, bool in_place) {
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
  l.d = l.e = nullptr;
  if (!in_place) {
    l.d = base + at;
    at += aligned(s.n * sizeof(U));
    l.e = base + at;
    at += aligned(s.n * sizeof(U));
  }
  l.strip_sums = l.depth_sums = l.tile_sums = nullptr;
  if (decodes_by_rows(s)) {
    const Tiling t = tiling_of(s);
    auto take = [&](size_t words) {
      void* p = base + at;
      at += aligned(words * sizeof(U));
      return p;
    };
    if (t.strips > 1) l.strip_sums = take(s.nz * t.strips * s.nx);
    if (t.segments > 1) l.depth_sums = take(t.segments * s.ny * s.nx);
    if (t.strips > 1 && t.segments > 1) l.tile_sums = take(t.segments * t.strips * s.nx);
  }
  l.total = at;
  return l;
}

// tile_values for rows of at most 32K elements, with its shared memory (the
// opt-in above 48 KiB for long rows of doubles).
template <typename T, unsigned K>
cudaError_t launch_tile_values(DeltaSource<typename Traits<T>::U> source, const OutlierLayout* layout, const Shape& s,
                               const Tiling& t, const typename Traits<T>::U* strip_sums,
                               const typename Traits<T>::U* depth_sums, const typename Traits<T>::U* tile_sums,
                               TileVectors vectors, typename Traits<T>::U code_limit, T eb2, uint8_t* out, uint32_t* status,
                               cudaStream_t stream) {
  constexpr size_t bytes = tile_exchange_bytes<typename Traits<T>::U, K>();
  if constexpr (bytes > 48 * 1024) {
    const cudaError_t err =
        cudaFuncSetAttribute(tile_values<T, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (err != cudaSuccess) return err;
  }
  tile_values<T, K><<<static_cast<unsigned>(t.strips * t.segments), kTileWarps * 32, bytes, stream>>>(
      source, layout, s, t, strip_sums, depth_sums, tile_sums, vectors, code_limit, eb2, out, status);
  return cudaGetLastError();
}

template <typename T>
cudaError_t decode_typed(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size, const Shape& s,
                         const Config& config, uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  if ((n + kThreads - 1) / kThreads > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  if (decodes_by_rows(s)) {  // one block a tile (more than 2^31 tiles: over 2^35 elements in rows of few)
    const Tiling t = tiling_of(s);
    if (t.strips * t.segments > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  }
  const size_t capacity = record_capacity(n, outliers_size);
  const bool in_place = decodes_in_place(s, codes, out);
  const DecodeLayout l = decode_layout<U>(scratch, s, outliers_size, in_place);
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

  U* d = in_place ? reinterpret_cast<U*>(out) : static_cast<U*>(l.d);
  if (decodes_by_rows(s) && (reinterpret_cast<uintptr_t>(codes) & 1) == 0) {
    const Tiling t = tiling_of(s);
    const unsigned tiles = static_cast<unsigned>(t.strips * t.segments);
    const DeltaSource<U> source{reinterpret_cast<const uint16_t*>(codes), d, false};
    U* strip_sums = static_cast<U*>(l.strip_sums);
    U* depth_sums = static_cast<U*>(l.depth_sums);
    U* tile_sums = static_cast<U*>(l.tile_sums);
    unpack_codes<U><<<stride_grid(n), kThreads, 0, stream>>>(codes, n, code_limit, d, status, l.layout, true);
    if (strip_sums || depth_sums) {
      // Columns a thread: one load of their codes a row (tile_totals).
      const uintptr_t at = reinterpret_cast<uintptr_t>(codes);
      const unsigned c = s.nx % 2 == 0 && (at & 3) == 0 ? 2 : 1;
      const auto totals = c == 2 ? tile_totals<U, 2> : tile_totals<U, 1>;
      const dim3 grid(tiles, static_cast<unsigned>((s.nx + kTotalsThreads * c - 1) / (kTotalsThreads * c)));
      totals<<<grid, kTotalsThreads, 0, stream>>>(source, s, t, strip_sums, depth_sums, tile_sums);
    }
    if (capacity > 0)
      place_tile_deltas<U><<<blocks_for(capacity), kThreads, 0, stream>>>(outliers, codes, s, capacity, code_limit,
                                                                         l.layout, l.delta_rank, d, t, strip_sums,
                                                                         depth_sums, tile_sums, status);
    if (strip_sums || depth_sums) {
      const size_t columns = tile_carry_columns(s, t, strip_sums, depth_sums, tile_sums);
      tile_carries<U><<<blocks_for(columns), kThreads, 0, stream>>>(s, t, strip_sums, depth_sums, tile_sums);
    }
    const size_t k = (s.nx + 31) / 32;
    const auto launch = k <= 1 ? launch_tile_values<T, 1> : k <= 2 ? launch_tile_values<T, 2>
                      : k <= 4 ? launch_tile_values<T, 4> : k <= 8 ? launch_tile_values<T, 8>
                      : k <= 16 ? launch_tile_values<T, 16> : launch_tile_values<T, 32>;
    auto aligned16 = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
    const TileVectors vectors{aligned16(codes) && s.nx % 8 == 0, aligned16(d) && s.nx % (16 / sizeof(U)) == 0,
                              s.nx % (16 / sizeof(U)) == 0, aligned16(out) && s.nx % (16 / sizeof(T)) == 0};
    err = launch(source, l.layout, s, t, strip_sums, depth_sums, tile_sums, vectors, code_limit, eb2, out, status,
                 stream);
    if (err != cudaSuccess) return err;
    if (capacity > 0)
      patch_specials<U><<<blocks_for(capacity), kThreads, 0, stream>>>(
          outliers, n, capacity, fill_bits, l.layout, l.raw_rank, out, status);
    return cudaGetLastError();
  }
  U* e = in_place ? reinterpret_cast<U*>(out) : static_cast<U*>(l.e);
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

}  // namespace

size_t decode_scratch_bytes(const std::vector<size_t>& dims, unsigned width, size_t outliers_size) {
  Shape s;
  if (!make_shape(dims, s)) return 0;
  return width == 4 ? decode_layout<uint32_t>(nullptr, s, outliers_size, false).total
                    : decode_layout<uint64_t>(nullptr, s, outliers_size, false).total;
}

size_t decode_scratch_bytes(const std::vector<size_t>& dims, unsigned width, size_t outliers_size,
                            const uint8_t* codes, const uint8_t* out) {
  Shape s;
  if (!make_shape(dims, s)) return 0;
  const bool in_place = decodes_in_place(s, codes, out);
  return width == 4 ? decode_layout<uint32_t>(nullptr, s, outliers_size, in_place).total
                    : decode_layout<uint64_t>(nullptr, s, outliers_size, in_place).total;
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
