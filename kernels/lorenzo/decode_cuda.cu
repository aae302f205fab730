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
//   inclusive prefix sums along x (scan by key over rows), then y, then z (a
//   thread per column when there are many columns, otherwise a scan by key
//   over the permuted axis); the sums are modulo 2^bits, the CPU's arithmetic;
//   convert       range check and x' = (T)p * eb2;
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
  void* totals;           // plane_sums' segment totals (decoding by rows)
  size_t depth_segments;  // depth_segments_of the shape (decoding by rows)
  void* depth_totals;     // depth segments' column totals, then carries (null: one segment)
  size_t total;
};

// Whether the rows path decodes in `out` itself: the deltas and the plane
// sums are written over the output (each element's word is read before its
// value replaces it, by the same thread or warp), so the scratch holds
// neither n-element array (issue 31 item 5).
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


template <typename T>
cudaError_t decode_typed(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size, const Shape& s,
                         const Config& config, uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  if ((n + kThreads - 1) / kThreads > 0x7FFFFFFFu) return cudaErrorInvalidValue;
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
  U* e = in_place ? reinterpret_cast<U*>(out) : static_cast<U*>(l.e);
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
