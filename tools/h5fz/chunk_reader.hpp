// Reads a box of an H5Z-FZ dataset many chunks at a time: the chunks it
// touches are read as stored (H5Dread_chunk) and decoded together through
// the engine's batch API (all cores, or the GPU), instead of HDF5 calling
// the filter on one chunk at a time. The C++ counterpart of h5fz.read; the
// values are exactly those H5Dread gives through the filter.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

// start and count per axis, slowest first; both empty: the whole dataset.
struct ReadBox {
  std::vector<hsize_t> start, count;
};

struct ReadStats {
  uint64_t chunks = 0;        // chunks the box touches
  uint64_t decoded = 0;       // of those, decoded by the engine
  uint64_t frame_bytes = 0;   // bytes read as stored
  bool through_filter = false;  // not H5Z-FZ alone: read with H5Dread instead
};

// Fills `out` (count[0] x ... elements of the dataset's type, C order, in the
// file's byte order) with the box. `policy`: the engine's policy fields
// (threads, device). Throws ToolError naming the dataset on any failure.
ReadStats read_box(hid_t dataset, const ReadBox& box, void* out, const fz::Options& policy);

}  // namespace h5fz
