// The writing half of the plugin's C interface (reader_api.cpp is the reading
// half), for writers that store a dataset's chunks themselves
// (H5Dwrite_chunk / h5py's write_direct_chunk): many chunks encoded at once,
// all cores or the GPU, into the very frames the filter writes for the same
// chunks of that dataset (its stored cd_values say how), so every reader
// reads them as if HDF5 had filtered them. No HDF5 here: chunks in, frames
// out. The Python package's h5fz.write calls these through ctypes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "c_api_internal.hpp"
#include "cd_values.hpp"
#include "fz/fz.hpp"
#include "h5z_fz.h"

namespace {

using fz::filter::c_api::guarded;

// The dataset's options and chunk shape from its stored cd_values, refused
// where the filter would not compress elements (set_local never ran, or
// another filter runs before it).
struct DatasetChunks {
  fz::Options options;
  fz::DataType dtype;
  std::vector<uint64_t> dims;
  uint64_t bytes = 0;
};

DatasetChunks dataset_chunks(size_t cd_count, const unsigned* cd) {
  if (cd == nullptr) throw fz::Error("null cd_values");
  if (!fz::filter::is_stored_layout(cd, cd_count))
    throw fz::Error("these cd_values are a user's choice, not a dataset's stored parameters: pass those of a "
                    "dataset created with the filter (H5Pget_filter2 / h5py's get_filter after creation)");
  const fz::filter::StoredParams params = fz::filter::decode_stored(cd, cd_count);
  if (!params.dataset.first_filter)
    throw fz::Error("the dataset filters its chunks before H5Z-FZ: its chunks reach the filter as bytes, which "
                    "only HDF5's own write path gives it");
  DatasetChunks c;
  c.options = fz::filter::dataset_options(params);
  // A library call prints nothing; its errors come back as its message.
  c.options.log = [](fz::LogLevel, const std::string&) {};
  c.dtype = params.dataset.dtype;
  c.dims.assign(params.dataset.chunk_dims.begin(), params.dataset.chunk_dims.end());
  if (c.dims.empty()) throw fz::Error("the stored cd_values hold no chunk shape");
  uint64_t bytes = c.dtype.size;
  for (uint64_t d : c.dims) {
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / d) throw fz::Error("chunk size overflows");
    bytes *= d;
  }
  c.bytes = bytes;
  return c;
}

// The chunks as the engine's views, each checked against the dataset's
// chunk size; the frame arrays checked for nulls.
std::vector<fz::ChunkView> chunk_views(const DatasetChunks& d, size_t count, const void* const* chunks,
                                       const size_t* chunk_bytes, void* const* frames, const size_t* capacities,
                                       size_t* encoded) {
  if (count > 0 && (chunks == nullptr || chunk_bytes == nullptr || frames == nullptr || capacities == nullptr ||
                    encoded == nullptr))
    throw fz::Error("null array argument");
  std::vector<fz::ChunkView> views(count);
  for (size_t i = 0; i < count; ++i) {
    if (chunks[i] == nullptr || frames[i] == nullptr) throw fz::Error("null buffer for chunk " + std::to_string(i));
    if (chunk_bytes[i] != d.bytes)
      throw fz::Error("chunk " + std::to_string(i) + " is " + std::to_string(chunk_bytes[i]) +
                      " bytes; this dataset's chunks are " + std::to_string(d.bytes));
    views[i] = {chunks[i], chunk_bytes[i], d.dims};
  }
  return views;
}

// The caller's frame buffers as the engine's rooms; `encoded` cleared.
std::vector<fz::FrameRoom> frame_rooms(size_t count, void* const* frames, const size_t* capacities,
                                       size_t* encoded) {
  std::vector<fz::FrameRoom> rooms(count);
  for (size_t i = 0; i < count; ++i) {
    rooms[i] = {frames[i], capacities[i]};
    encoded[i] = 0;
  }
  return rooms;
}

void store_lengths(const std::vector<size_t>& lengths, size_t* encoded) {
  for (size_t i = 0; i < lengths.size(); ++i) encoded[i] = lengths[i];
}

}  // namespace

extern "C" {

// This interface's version (2: h5z_fz_encode_dataset_batch_from_device; 3:
// h5z_fz_chunk_cd_values): a caller checks it before anything else.
__attribute__((visibility("default"))) int h5z_fz_writer_version(void) { return 3; }

// A frame capacity that always suffices for a chunk of `chunk_bytes` bytes
// and rank `rank`.
__attribute__((visibility("default"))) size_t h5z_fz_max_frame_bytes(size_t chunk_bytes, size_t rank) {
  try {
    return fz::max_frame_bytes(chunk_bytes, rank);
  } catch (...) {
    return 0;
  }
}

// Encodes `count` chunks of one dataset (host memory; each exactly the
// dataset's chunk size, in its element type and byte order, edge chunks
// padded as HDF5 pads them) into frames (host buffers of capacities[i]
// bytes; h5z_fz_max_frame_bytes always suffices), written there directly;
// encoded[i] receives each frame's length (0 where a call fails). The frames
// are byte for byte those the filter writes for the same chunks under the
// dataset's stored cd_values. `device`: "auto", "cpu", "cuda", "cuda:N"
// (null = "auto"); `threads`: CPU threads, 0 = all.
__attribute__((visibility("default"))) int h5z_fz_encode_dataset_batch(
    size_t cd_count, const unsigned* cd_values, size_t count, const void* const* chunks, const size_t* chunk_bytes,
    void* const* frames, const size_t* capacities, size_t* encoded, const char* device, unsigned threads,
    char* error, size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    DatasetChunks d = dataset_chunks(cd_count, cd_values);
    const std::vector<fz::ChunkView> views = chunk_views(d, count, chunks, chunk_bytes, frames, capacities, encoded);
    if (device != nullptr) d.options.device = device;
    d.options.threads = threads;
    const std::vector<fz::FrameRoom> rooms = frame_rooms(count, frames, capacities, encoded);
    store_lengths(fz::compress_batch_into(views, d.dtype, d.options, rooms), encoded);
  });
}

// The same for chunks in device memory (one CUDA device, which encodes
// them; only the frames are copied to the host buffers): version 2.
__attribute__((visibility("default"))) int h5z_fz_encode_dataset_batch_from_device(
    size_t cd_count, const unsigned* cd_values, size_t count, const void* const* device_chunks,
    const size_t* chunk_bytes, void* const* frames, const size_t* capacities, size_t* encoded, char* error,
    size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    DatasetChunks d = dataset_chunks(cd_count, cd_values);
    const std::vector<fz::ChunkView> views =
        chunk_views(d, count, device_chunks, chunk_bytes, frames, capacities, encoded);
    // (Frames come straight from the device into the caller's buffers: at
    // PCIe speed when they are page-locked.)
    const std::vector<fz::FrameRoom> rooms = frame_rooms(count, frames, capacities, encoded);
    store_lengths(fz::compress_batch_from_device_into(views, d.dtype, d.options, rooms), encoded);
  });
}

// The stored cd_values the filter's set_local writes for a dataset of numbers
// chunked as `dims` (rank entries, each 1 to 2^32 - 1) under the user's words
// `user` (compression_opts), for writers that have no HDF5 dataset (the Zarr
// codec): its frames then are the filter's for the same chunks. kind 'f': an
// IEEE float of 2, 4 or 8 bytes; 'i' / 'u': an integer of 1, 2, 4 or 8
// bytes; big_endian: the elements' byte order. fill_value: one element in
// that byte order, as a user-defined HDF5 fill value, or null for none.
// Writes at most `capacity` words into `stored`, their count into
// *stored_count (0 on failure). Version 3.
__attribute__((visibility("default"))) int h5z_fz_chunk_cd_values(
    size_t user_count, const unsigned* user, char kind, size_t element_size, int big_endian, size_t rank,
    const unsigned long long* dims, const void* fill_value, unsigned* stored, size_t capacity,
    size_t* stored_count, char* error, size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    if (stored_count == nullptr) throw fz::Error("null stored_count");
    *stored_count = 0;
    if ((user == nullptr && user_count > 0) || (stored == nullptr && capacity > 0) ||
        (dims == nullptr && rank > 0))
      throw fz::Error("null array argument");
    fz::filter::StoredParams params;
    params.user = fz::filter::parse_any_layout(user, user_count);
    fz::filter::require_available(params.user.preset);
    fz::filter::DatasetInfo& dataset = params.dataset;
    dataset.dtype.size = static_cast<uint32_t>(element_size);
    dataset.dtype.order = big_endian ? fz::ByteOrder::Big : fz::ByteOrder::Little;
    // HDF5's H5T_class_t and H5T_sign_t values, as set_local records them.
    constexpr unsigned kHdf5Integer = 0, kHdf5Float = 1, kHdf5Unsigned = 0, kHdf5TwosComplement = 1;
    const bool integer_size = element_size == 1 || element_size == 2 || element_size == 4 || element_size == 8;
    if (kind == 'f' && (element_size == 2 || element_size == 4 || element_size == 8)) {
      dataset.hdf5_class = kHdf5Float;
      dataset.float_fields = fz::filter::ieee_fields(static_cast<unsigned>(element_size));
      dataset.dtype.element_class = fz::ElementClass::Float;
    } else if ((kind == 'i' || kind == 'u') && integer_size) {
      dataset.hdf5_class = kHdf5Integer;
      dataset.hdf5_sign = kind == 'i' ? kHdf5TwosComplement : kHdf5Unsigned;
      dataset.dtype.element_class = kind == 'i' ? fz::ElementClass::Signed : fz::ElementClass::Unsigned;
    } else {
      throw fz::Error("elements of kind '" + std::string(1, kind) + "' and " + std::to_string(element_size) +
                      " bytes: this takes numbers (IEEE floats of 2, 4 or 8 bytes, integers of 1, 2, 4 or 8)");
    }
    if (rank == 0) throw fz::Error("a chunk needs at least one dimension");
    for (size_t i = 0; i < rank; ++i) {
      if (dims[i] == 0 || dims[i] > std::numeric_limits<uint32_t>::max())
        throw fz::Error("chunk dimension " + std::to_string(i) + " is " + std::to_string(dims[i]) +
                        " (1 to 4294967295)");
      dataset.chunk_dims.push_back(static_cast<uint32_t>(dims[i]));
    }
    if (fill_value != nullptr) {
      const auto* fill = static_cast<const uint8_t*>(fill_value);
      dataset.fill_value.assign(fill, fill + element_size);
    }
    dataset.first_filter = true;
    fz::validate(fz::filter::dataset_options(params), dataset.dtype);
    const std::vector<unsigned> words = fz::filter::encode_stored(params);
    if (words.size() > capacity)
      throw fz::Error("the stored cd_values are " + std::to_string(words.size()) + " words, room for " +
                      std::to_string(capacity));
    std::copy(words.begin(), words.end(), stored);
    *stored_count = words.size();
  });
}

}  // extern "C"
