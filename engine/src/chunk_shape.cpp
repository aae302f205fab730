// fz::suggest_chunk_shape (fz.hpp): the project's rule for chunk shapes.
#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace fz {

std::vector<uint64_t> suggest_chunk_shape(const std::vector<uint64_t>& dims, size_t element_bytes,
                                          size_t target_bytes) {
  if (dims.empty()) throw Error("suggest_chunk_shape: a dataset has at least one dimension");
  if (element_bytes == 0) throw Error("suggest_chunk_shape: elements of 0 bytes");
  constexpr uint64_t kHdf5MaxChunkBytes = 0xFFFFFFFFu;
  if (target_bytes < element_bytes || target_bytes > kHdf5MaxChunkBytes)
    throw Error("suggest_chunk_shape: a target of " + std::to_string(target_bytes) +
                " bytes; it must hold one element and stay below 4 GiB (HDF5's limit on a chunk)");
  std::vector<uint64_t> extent(dims);
  for (uint64_t& e : extent)
    if (e == 0) e = 1;
  // Bytes of one step along axis k: the product of the faster axes, whole.
  // Walk from the fastest axis while the axes so far fit whole.
  std::vector<uint64_t> chunk(extent.size(), 1);
  uint64_t unit = element_bytes;  // bytes of one step along the axis being placed
  for (size_t k = extent.size(); k-- > 0;) {
    const uint64_t fit = target_bytes / unit;  // steps of this axis that fit, >= 1
    if (extent[k] <= fit) {
      chunk[k] = extent[k];
      unit *= extent[k];
      continue;
    }
    // The cut axis: the fewest equal pieces that fit, then the slower axes 1.
    const uint64_t pieces = (extent[k] + fit - 1) / fit;
    chunk[k] = (extent[k] + pieces - 1) / pieces;
    break;
  }
  return chunk;
}

}  // namespace fz
