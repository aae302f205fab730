// Writes a box of an H5Z-FZ dataset many chunks at a time: the chunks it
// covers are encoded together through the engine's batch API (all cores, or
// the GPU) into the very frames the filter writes for them, and stored with
// H5Dwrite_chunk, instead of HDF5 calling the filter on one chunk at a time.
// The C++ counterpart of h5fz.write; every reader then reads what H5Dwrite
// through the filter would have stored.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "fz/fz.hpp"

namespace h5fz {

// start and count per axis, slowest first; both empty: the whole dataset.
struct WriteBox {
  std::vector<hsize_t> start, count;
};

struct WriteStats {
  uint64_t chunks = 0;       // chunks the box touches, all encoded and stored
  uint64_t merged = 0;       // of those, covered in part: merged into what they held
  uint64_t frame_bytes = 0;  // bytes stored
};

// Writes `data` (count[0] x ... elements of the dataset's type, C order, in
// the file's byte order) to the box of `dataset` (open for writing, H5Z-FZ its
// only filter). Each chunk is built as HDF5 builds it before the filter runs:
// a chunk the box covers whole is the data (an edge chunk padded with the
// fill value); a chunk it covers in part is the stored chunk decoded whole
// (checked as the filter checks a frame; the fill value where it was never
// written; the stored bytes where HDF5 stored it unfiltered) with the data
// merged in. `policy`: the engine's policy fields (threads, device). Throws
// ToolError naming the dataset; nothing is stored before every chunk of a
// group is encoded, and groups already stored stay written.
WriteStats write_box(hid_t dataset, const WriteBox& box, const void* data, const fz::Options& policy);

}  // namespace h5fz
