// Reads a box of an H5Z-FZ dataset many chunks at a time: the chunks it
// touches are read as stored (H5Dread_chunk) and decoded together through
// the engine's batch API (all cores, or the GPU), instead of HDF5 calling
// the filter on one chunk at a time. The C++ counterpart of h5fz.read; the
// values are exactly those H5Dread gives through the filter.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
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

// The dataset's name in its file, for messages.
std::string dataset_name(hid_t dataset);

// The filter's stored cd_values when H5Z-FZ is the dataset's only filter
// (its chunks are then decoded or encoded by the engine), else nothing.
std::optional<std::vector<unsigned>> fz_alone(hid_t dcpl);

// "5,3,7" for --start and --count: whole numbers up to 2^64 - 1 (a dataset's
// extent may be that large), zero allowed (unlike a shape); UsageError else.
std::vector<hsize_t> parse_box_numbers(const std::string& option, const std::string& text);

// The bytes of a box of `count` elements of `element` bytes, overflow
// checked: ToolError naming `name` when the product passes 2^64 (or size_t)
// or the machine's memory (fz::total_memory), so that nothing allocates a
// wrapped size or more than there is.
uint64_t box_bytes(const std::vector<hsize_t>& count, size_t element, const std::string& name);

// A type with variable-length parts (strings, sequences): no raw bytes.
bool has_variable_length(hid_t type);
std::string variable_length_refusal(const std::string& name);

// Fills `out` (count[0] x ... elements of the dataset's type, C order, in the
// file's byte order) with the box. `policy`: the engine's policy fields
// (threads, device). Throws ToolError naming the dataset on any failure;
// a frame is checked against the dataset's stored parameters as the filter
// checks it (filter/frame_check.hpp), so what the filter refuses is refused.
ReadStats read_box(hid_t dataset, const ReadBox& box, void* out, const fz::Options& policy);

}  // namespace h5fz
