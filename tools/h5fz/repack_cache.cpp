#include "repack_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace h5fz {

namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

uint64_t saturating_multiply(uint64_t a, uint64_t b) {
  if (a != 0 && b > kMax / a) return kMax;
  return a * b;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// Input chunks crossing the box [start, end) along each axis.
uint64_t chunks_crossing(const std::vector<hsize_t>& start, const std::vector<hsize_t>& end,
                         const std::vector<hsize_t>& in_chunks) {
  uint64_t count = 1;
  for (size_t i = 0; i < start.size(); ++i) {
    if (end[i] <= start[i]) return 0;
    count = saturating_multiply(count, (end[i] - 1) / in_chunks[i] - start[i] / in_chunks[i] + 1);
  }
  return count;
}

// HDF5 spreads chunks over the slots by index: a prime count avoids the
// collisions that evict a chunk still needed.
size_t prime_at_least(size_t n) {
  auto is_prime = [](size_t v) {
    if (v < 2) return false;
    for (size_t d = 2; d * d <= v; ++d)
      if (v % d == 0) return false;
    return true;
  };
  while (!is_prime(n)) ++n;
  return n;
}

}  // namespace

ChunkCacheSize input_chunk_cache(hid_t in_dcpl, const std::vector<hsize_t>& dims,
                                 const std::vector<hsize_t>& out_chunks, size_t element, size_t per_batch,
                                 size_t batch_bytes) {
  ChunkCacheSize size;
  const size_t rank = dims.size();
  if (rank == 0 || out_chunks.size() != rank || H5Pget_layout(in_dcpl) != H5D_CHUNKED) return size;
  std::vector<hsize_t> in_chunks(rank);
  if (H5Pget_chunk(in_dcpl, static_cast<int>(rank), in_chunks.data()) != static_cast<int>(rank)) return size;
  if (std::find(in_chunks.begin(), in_chunks.end(), hsize_t{0}) != in_chunks.end()) return size;
  if (in_chunks == out_chunks) return size;  // each input chunk is read once
  uint64_t in_chunk_bytes = element;
  for (hsize_t c : in_chunks) in_chunk_bytes = saturating_multiply(in_chunk_bytes, c);

  // One layer of output chunks along the slowest axis: the input chunks it
  // crosses are read again until the layer is done.
  std::vector<hsize_t> start(rank, 0), end = dims;
  end[0] = std::min<hsize_t>(dims[0], out_chunks[0]);
  const uint64_t layer = chunks_crossing(start, end, in_chunks);
  // The first batch's output chunks (row-major), as a box.
  uint64_t remaining = std::max<size_t>(per_batch, 1);
  std::vector<hsize_t> batch_end(rank);
  for (size_t i = rank; i-- > 0;) {
    const uint64_t along = ceil_div(dims[i], out_chunks[i]);
    const uint64_t taken = std::min<uint64_t>(along, remaining);
    batch_end[i] = std::min<hsize_t>(dims[i], saturating_multiply(taken, out_chunks[i]));
    remaining = ceil_div(remaining, along);
  }
  const uint64_t batch = chunks_crossing(start, batch_end, in_chunks);
  const uint64_t limit = std::max<uint64_t>(saturating_multiply(batch, in_chunk_bytes), batch_bytes);
  const uint64_t bytes = std::min(saturating_multiply(layer, in_chunk_bytes), limit);
  if (bytes <= (uint64_t{1} << 20)) return size;  // HDF5's default holds them
  size.bytes = static_cast<size_t>(std::min<uint64_t>(bytes, std::numeric_limits<size_t>::max() / 2));
  const uint64_t held = std::max<uint64_t>(1, size.bytes / std::max<uint64_t>(in_chunk_bytes, 1));
  size.slots = prime_at_least(static_cast<size_t>(std::min<uint64_t>(saturating_multiply(held, 10), 1u << 24)) + 521);
  return size;
}

hid_t chunk_cache_access(const ChunkCacheSize& size) {
  const hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  // w0 = 1: a chunk read whole is dropped first; partly read ones stay for
  // the output chunks that need the rest.
  if (dapl >= 0 && size.bytes > 0) H5Pset_chunk_cache(dapl, size.slots, size.bytes, 1.0);
  return dapl;
}

}  // namespace h5fz
