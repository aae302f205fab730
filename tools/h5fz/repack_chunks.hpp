// A dataset's chunks as `h5fz repack` reads them: the chunk grid, the plan
// they are read and compressed with, one chunk read as the filter sees it
// (edge chunks padded with HDF5's fill value), and that plan recovered from
// a dataset HDF5 created with the filter. Shared by the dataset's creation
// (repack_dataset.cpp: noa-global's range), its batch pipeline and --verify
// (repack_pipeline.cpp).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

// A dataspace's extent (empty for a scalar), and its maximum extent in
// `max_dims` when given.
std::vector<hsize_t> extent_of(hid_t space, std::vector<hsize_t>* max_dims = nullptr);

// Visits the chunk grid of `dims` / `chunks` in row-major order.
class ChunkGrid {
 public:
  ChunkGrid(std::vector<hsize_t> dims, std::vector<hsize_t> chunks) : dims_(std::move(dims)), chunks_(std::move(chunks)) {
    count_ = 1;
    for (size_t i = 0; i < dims_.size(); ++i) count_ *= (dims_[i] + chunks_[i] - 1) / chunks_[i];
  }
  uint64_t count() const { return count_; }
  std::vector<hsize_t> offset(uint64_t index) const {
    std::vector<hsize_t> offset(dims_.size());
    for (size_t i = dims_.size(); i-- > 0;) {
      const hsize_t per_axis = (dims_[i] + chunks_[i] - 1) / chunks_[i];
      offset[i] = (index % per_axis) * chunks_[i];
      index /= per_axis;
    }
    return offset;
  }

 private:
  std::vector<hsize_t> dims_, chunks_;
  uint64_t count_ = 0;
};

// What a dataset's chunks are read, compressed and checked with.
struct ChunkPlan {
  hid_t type = -1;  // the file type: chunks are read without conversion, as the filter sees them
  fz::DataType dtype;
  std::vector<hsize_t> dims, chunks;
  size_t chunk_bytes = 0;
  fz::Bytes fill_element;  // HDF5's fill value, which pads edge chunks
};

// Reads the chunk at `offset` of `dataset` into `buffer` (chunk_bytes):
// the part inside the extent, the rest HDF5's fill value as HDF5 pads it.
void read_chunk(hid_t dataset, const ChunkPlan& plan, const std::vector<hsize_t>& offset, fz::Bytes& buffer,
                const std::string& path);

// What the filter compresses a dataset's chunks with, and how they lie, from
// the dataset as HDF5 created it (set_local's stored parameters): the
// options (fill value included), the element type, the chunk shape and
// HDF5's fill value, which pads edge chunks. `file_type` stays the caller's.
struct WrittenAs {
  fz::Options options;
  ChunkPlan plan;
};
WrittenAs written_as(hid_t dataset, hid_t file_type, const std::string& path);

}  // namespace h5fz
