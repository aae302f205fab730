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

#include "cli.hpp"
#include "fz/fz.hpp"
#include "hdf5_handle.hpp"

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

// The extents of an array dataset (ToolError naming it for a scalar or
// null dataspace).
std::vector<hsize_t> dataset_dims(hid_t dataset, const std::string& name);

// A box against a dataset's extents: both empty becomes the whole dataset; a
// box with other axes than the dataset or leaving it is a ToolError naming
// the dataset.
void resolve_box(const std::vector<hsize_t>& dims, std::vector<hsize_t>& start, std::vector<hsize_t>& count,
                 const std::string& name);

// The bytes of one chunk of this shape, overflow checked (ToolError for a
// damaged file's zero or overflowing extents).
size_t chunk_bytes_of(const std::vector<hsize_t>& chunks, size_t element, const std::string& name);

// One element of the dataset's fill value in its file type (0 when none).
fz::Bytes fill_value_of(hid_t dcpl, hid_t type, size_t element);

// The chunks a box touches, in row-major order: each chunk's first element
// (offset) and the part of the box inside it, [lo, hi) in dataset coordinates.
class ChunkWalk {
 public:
  ChunkWalk(const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, const std::vector<hsize_t>& chunks);
  bool done() const { return done_; }
  void next();
  const std::vector<hsize_t>& offset() const { return offset_; }
  const std::vector<hsize_t>& lo() const { return lo_; }
  const std::vector<hsize_t>& hi() const { return hi_; }

 private:
  void place();
  std::vector<hsize_t> start_, count_, chunks_, first_, last_, index_, offset_, lo_, hi_;
  bool done_ = false;
};

// What `h5fz read` and `h5fz write` open: FILE's DATASET (the two positional
// arguments) with `access` (H5F_ACC_RDONLY or H5F_ACC_RDWR), its type and
// extents, the box --start and --count select (the whole dataset by default,
// a count to the end by default; UsageError for values that do not fit),
// and the engine's policy: H5Z_FZ_THREADS and H5Z_FZ_DEVICE (as the filter
// reads them), then --threads and --device.
struct BoxCommand {
  Handle file, dataset, space, type;
  std::vector<hsize_t> dims, start, count;
  fz::Options policy;
};
BoxCommand open_box_command(const ParsedArgs& parsed, unsigned access);

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
