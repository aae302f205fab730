// LORENZO on the GPU, encode: the host dispatch (scratch layout, launches,
// stream) over the kernels of encode_kernels_cuda.cuh. Stream format:
// lorenzo/lorenzo.hpp; host interface: lorenzo/lorenzo_cuda.hpp. The rules are
// the CPU's (lorenzo_rules.hpp); only the schedule differs:
// Encode, over tiles of kTile elements (one thread block each):
//   prequantize   one thread per element: classify -> p and value kind, packed
//                 in one word (U);
//   count_tiles   per element the Lorenzo delta from the prequantized neighbours
//                 (inclusion-exclusion, neighbours outside the data are 0, modulo
//                 2^bits), the code, and whether it is a record; per tile the
//                 number of records, stored deltas and raw values;
//   exclusive device scans of the three per-tile counts;
//   place_records recomputes each element's delta and places its record at
//                 tile offset + block-scan rank (index order, any schedule).
// Rows of 32 to 512 elements (256 double) take the one-pass front instead
// (encode_fused_kernels_cuda.cuh): fused_codes reads, classifies and codes
// each element once, with no prequantized array, and marks the records in a
// bitmap; place_records recomputes only the marked ones, from the input.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/float_state.hpp"
#include "common/one_block_scan_cuda.cuh"
#include "lorenzo/common_cuda.cuh"
#include "lorenzo/encode_fused_kernels_cuda.cuh"
#include "lorenzo/encode_kernels_cuda.cuh"
#include "lorenzo/lorenzo_cuda.hpp"

namespace fz::lorenzo::cuda {
namespace {

using namespace detail;

struct EncodeLayout {
  bool fused;             // the one-pass front: no p, a record bitmap
  void* p;                // the two-pass path's prequantized words
  uint32_t* record_bits;  // the one-pass front's record bitmap
  size_t record_words;
  unsigned long long* tile_counts;  // row_codes' packed per-tile counts
  uint64_t* counts[3];
  uint64_t* offsets[3];
  void* scan;
  size_t scan_bytes;
  size_t total;
};

EncodeLayout encode_layout(void* scratch, const Shape& s, unsigned width) {
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t n = s.n;
  const size_t tiles = tiles_of(n);
  EncodeLayout l;
  size_t at = 0;
  l.fused = fused_front(s, width);
  l.p = nullptr;
  l.record_bits = nullptr;
  l.record_words = 0;
  if (l.fused) {
    l.record_bits = reinterpret_cast<uint32_t*>(base + at);
    l.record_words = (n + 31) / 32;
    at += aligned(l.record_words * 4);
  } else {
    l.p = base + at;
    at += aligned(n * width);
  }
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

CountArrays count_arrays(const EncodeLayout& l) {
  CountArrays c;
  for (int k = 0; k < 3; ++k) {
    c.counts[k] = l.counts[k];
    c.offsets[k] = l.offsets[k];
  }
  return c;
}

// Everything but the outlier stream's bytes: the codes, the per-tile counts
// and their offsets (kept in scratch for write_outliers_typed), and the
// stream's exact length in *outliers_size.
template <typename T>
cudaError_t codes_typed(const uint8_t* in, const Shape& s, const Config& config, double user_bound, uint8_t* codes,
                        uint64_t* outliers_size, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  const size_t tiles = tiles_of(n);
  if (tiles > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  const EncodeLayout l = encode_layout(scratch, s, sizeof(T));
  const Quantizer<T> quantizer = make_quantizer<T>(config, user_bound);
  const U code_limit = static_cast<U>(2 * config.radius);
  U* p = static_cast<U*>(l.p);
  const CountArrays c = count_arrays(l);
  if (l.fused) {
    cudaError_t err = cudaMemsetAsync(l.tile_counts, 0, tiles * 8, stream);
    if (err == cudaSuccess) err = cudaMemsetAsync(l.record_bits, 0, l.record_words * 4, stream);
    if (err != cudaSuccess) return err;
    const FusedGrid f = fused_grid(s);
    const size_t blocks = f.y_blocks * f.segments;
    if (blocks > 0x7FFFFFFFu) return cudaErrorInvalidValue;
    const bool vector_loads = (reinterpret_cast<uintptr_t>(in) & 15) == 0 && s.nx * sizeof(T) % 16 == 0;
    const bool vector_stores = (reinterpret_cast<uintptr_t>(codes) & 15) == 0 && s.nx % 8 == 0;
    const size_t k = (s.nx + 31) / 32;  // <= 16 float, 8 double (fused_front)
    auto kernel = k <= 1 ? fused_codes<T, 1> : k <= 2 ? fused_codes<T, 2> : k <= 4 ? fused_codes<T, 4>
                                                                          : fused_codes<T, 8>;
    if constexpr (sizeof(T) == 4)
      if (k > 8) kernel = fused_codes<T, 16>;
    kernel<<<static_cast<unsigned>(blocks), kFusedThreads, 0, stream>>>(in, s, f, quantizer, code_limit, vector_loads,
                                                                       vector_stores, codes, l.tile_counts,
                                                                       l.record_bits);
    unpack_tile_counts<<<static_cast<unsigned>((tiles + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        l.tile_counts, tiles, l.counts[0], l.counts[1], l.counts[2]);
  } else if (n > 0) {
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
  }
  if (n > 0) {
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
  }
  outliers_length<<<1, 1, 0, stream>>>(n, sizeof(T), c, tiles, outliers_size);
  return cudaGetLastError();
}

// The outlier stream, after codes_typed on the same scratch: into `outliers`
// when its length fits `capacity`, else nothing (*outliers_size, which
// codes_typed wrote, is then larger than the capacity).
template <typename T>
cudaError_t write_outliers_typed(const uint8_t* in, const Shape& s, const Config& config, double user_bound,
                                 uint8_t* outliers, size_t capacity, void* scratch, cudaStream_t stream) {
  using U = typename Traits<T>::U;
  const size_t n = s.n;
  const size_t tiles = tiles_of(n);
  if (tiles > 0x7FFFFFFFu) return cudaErrorInvalidValue;
  const EncodeLayout l = encode_layout(scratch, s, sizeof(T));
  const CountArrays c = count_arrays(l);
  const U code_limit = static_cast<U>(2 * config.radius);
  if (l.fused) {
    const RecordsFromValues<T> source{{in, make_quantizer<T>(config, user_bound)}, l.record_bits};
    place_records<T><<<place_records_grid(tiles), kThreads, 0, stream>>>(in, source, grid_of(s), code_limit, c, tiles,
                                                                        outliers, capacity);
  } else if (n > 0) {
    const RecordsFromPrequantized<T> source{static_cast<const U*>(l.p)};
    place_records<T><<<place_records_grid(tiles), kThreads, 0, stream>>>(in, source, grid_of(s), code_limit, c, tiles,
                                                                        outliers, capacity);
  }
  outliers_header<<<1, 1, 0, stream>>>(n, sizeof(T), c, tiles, outliers, capacity);
  return cudaGetLastError();
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
  return encode_layout(nullptr, s, width).total;
}

cudaError_t encode_codes(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                         uint8_t* codes, uint64_t* outliers_size, void* scratch, cudaStream_t stream) {
  Shape s;
  if (!arguments_ok(dims, config, s)) return cudaErrorInvalidValue;
  if (!(user_bound > 0) || !std::isfinite(user_bound)) return cudaErrorInvalidValue;
  return config.width == 4 ? codes_typed<float>(in, s, config, user_bound, codes, outliers_size, scratch, stream)
                           : codes_typed<double>(in, s, config, user_bound, codes, outliers_size, scratch, stream);
}

cudaError_t encode_outliers(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                            uint8_t* outliers, size_t outliers_capacity, void* scratch, cudaStream_t stream) {
  Shape s;
  if (!arguments_ok(dims, config, s)) return cudaErrorInvalidValue;
  return config.width == 4
             ? write_outliers_typed<float>(in, s, config, user_bound, outliers, outliers_capacity, scratch, stream)
             : write_outliers_typed<double>(in, s, config, user_bound, outliers, outliers_capacity, scratch, stream);
}

cudaError_t encode(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                   uint8_t* codes, uint8_t* outliers, uint64_t* outliers_size, void* scratch, cudaStream_t stream) {
  const cudaError_t err = encode_codes(in, dims, config, user_bound, codes, outliers_size, scratch, stream);
  if (err != cudaSuccess) return err;
  return encode_outliers(in, dims, config, user_bound, outliers, max_outliers_bytes(dims, config.width), scratch,
                         stream);
}

}  // namespace fz::lorenzo::cuda
