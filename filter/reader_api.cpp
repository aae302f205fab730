// A small C interface to the engine's batch decoder, exported by the plugin
// beside HDF5's two entry points, for readers that fetch a dataset's stored
// chunks themselves (H5Dread_chunk / h5py's read_direct_chunk) and decode
// many at once: the Python package's h5fz.read loads the plugin it ships
// with ctypes and calls these. No HDF5 here: frames in, chunks out.
//
// Every function returns 0 on success, or -1 with a message (always
// NUL-terminated, cut to error_capacity) in `error`; nothing throws across it.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "c_api_internal.hpp"
#include "environment.hpp"
#include "filter_totals.hpp"
#include "frame_check.hpp"
#include "fz/fz.hpp"
#include "h5z_fz.h"

namespace {

using fz::filter::c_api::copy_text;
using fz::filter::c_api::guarded;

std::vector<fz::FrameView> frame_views(size_t count, const void* const* frames, const size_t* frame_bytes,
                                       void* const* outputs, const size_t* capacities) {
  if (count > 0 && (frames == nullptr || frame_bytes == nullptr || outputs == nullptr || capacities == nullptr))
    throw fz::Error("null array argument");
  std::vector<fz::FrameView> views(count);
  for (size_t i = 0; i < count; ++i) views[i] = {frames[i], frame_bytes[i], outputs[i], capacities[i]};
  return views;
}

// The frames' headers against the dataset's stored cd_values, as the filter
// checks them on decoding (frame_check.hpp), before anything is decoded.
std::vector<fz::FrameInfo> checked_headers(size_t cd_count, const unsigned* cd,
                                           const std::vector<fz::FrameView>& views) {
  if (cd == nullptr) throw fz::Error("null cd_values");
  std::vector<fz::FrameInfo> infos;
  infos.reserve(views.size());
  for (const fz::FrameView& view : views) {
    if (view.frame == nullptr) throw fz::Error("null frame");
    infos.push_back(fz::inspect_header(view.frame, view.frame_bytes));
    const fz::filter::FrameExpectation target = fz::filter::check_frame(cd, cd_count, infos.back());
    if (target.chunk && *target.chunk > view.capacity)
      throw fz::Error("a chunk of this dataset is " + std::to_string(*target.chunk) + " bytes, the buffer " +
                      std::to_string(view.capacity));
  }
  return infos;
}

}  // namespace

extern "C" {

// This interface's version: a caller checks it before anything else.
// 2: h5z_fz_decode_dataset_batch and _to_device (frames checked against the
// dataset's cd_values); the functions of version 1 remain.
__attribute__((visibility("default"))) int h5z_fz_reader_version(void) { return 3; }

// 1 when a CUDA device is usable by this build, else 0.
__attribute__((visibility("default"))) int h5z_fz_device_available(void) {
  try {
    return fz::device_api_available() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

// The device the filter uses in this process, in words (H5Z_FZ_DEVICE and the
// MPI local rank, environment.hpp), e.g. "auto:1 (local rank 1
// (OMPI_COMM_WORLD_LOCAL_RANK) of 2 CUDA device(s)); 2 CUDA device(s) visible":
// a parallel job's ranks print it (tools/mpi). Cut to capacity, NUL-terminated.
__attribute__((visibility("default"))) int h5z_fz_device_in_use(char* words, size_t capacity) {
  return guarded(words, capacity, [&] { copy_text(words, capacity, fz::filter::device_in_use()); });
}

// Seconds the filter callback has spent compressing and decompressing chunks
// in this process, and how many chunks each way (filter_totals.hpp). Any
// pointer may be null.
__attribute__((visibility("default"))) void h5z_fz_filter_totals(double* compress_seconds,
                                                                 double* decompress_seconds,
                                                                 unsigned long long* compressed_chunks,
                                                                 unsigned long long* decompressed_chunks) {
  const fz::filter::FilterTotals& totals = fz::filter::filter_totals();
  if (compress_seconds != nullptr) *compress_seconds = 1e-9 * static_cast<double>(totals.compress_ns.load());
  if (decompress_seconds != nullptr) *decompress_seconds = 1e-9 * static_cast<double>(totals.decompress_ns.load());
  if (compressed_chunks != nullptr) *compressed_chunks = totals.compressed_chunks.load();
  if (decompressed_chunks != nullptr) *decompressed_chunks = totals.decompressed_chunks.load();
}

// Decodes `count` frames (host memory) into host buffers, all cores or the
// GPU as `device` says ("auto", "cpu", "cuda", "cuda:N"; null = "auto"),
// `threads` CPU threads (0 = all). decoded[i] receives each length.
__attribute__((visibility("default"))) int h5z_fz_decode_batch(size_t count, const void* const* frames,
                                                               const size_t* frame_bytes, void* const* outputs,
                                                               const size_t* capacities, size_t* decoded,
                                                               const char* device, unsigned threads, char* error,
                                                               size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    fz::Options policy;
    if (device != nullptr) policy.device = device;
    policy.threads = threads;
    policy.log = [](fz::LogLevel, const std::string&) {};
    const std::vector<size_t> lengths =
        fz::decompress_batch(frame_views(count, frames, frame_bytes, outputs, capacities), policy);
    if (decoded != nullptr) std::copy(lengths.begin(), lengths.end(), decoded);
  });
}

// The same into device memory (outputs: device pointers of one CUDA device,
// e.g. CuPy arrays' data pointers); frames stay host memory.
__attribute__((visibility("default"))) int h5z_fz_decode_batch_to_device(size_t count, const void* const* frames,
                                                                         const size_t* frame_bytes,
                                                                         void* const* device_outputs,
                                                                         const size_t* capacities, size_t* decoded,
                                                                         char* error, size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    fz::Options policy;
    policy.log = [](fz::LogLevel, const std::string&) {};
    const std::vector<size_t> lengths =
        fz::decompress_batch_to_device(frame_views(count, frames, frame_bytes, device_outputs, capacities), policy);
    if (decoded != nullptr) std::copy(lengths.begin(), lengths.end(), decoded);
  });
}

// h5z_fz_decode_batch for the chunks of one dataset, whose stored cd_values
// (H5Pget_filter2 / h5py's get_filter) are given: each frame is checked as
// the filter checks it on decoding (element type, decoded size, preset,
// error-bound mode and bound, frame_check.hpp), before decoding and, for NOA
// frames, after; a frame the filter would refuse fails here with the
// filter's message.
__attribute__((visibility("default"))) int h5z_fz_decode_dataset_batch(
    size_t cd_count, const unsigned* cd_values, size_t count, const void* const* frames, const size_t* frame_bytes,
    void* const* outputs, const size_t* capacities, size_t* decoded, const char* device, unsigned threads, char* error,
    size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    const std::vector<fz::FrameView> views = frame_views(count, frames, frame_bytes, outputs, capacities);
    const std::vector<fz::FrameInfo> infos = checked_headers(cd_count, cd_values, views);
    fz::Options policy;
    if (device != nullptr) policy.device = device;
    policy.threads = threads;
    policy.log = [](fz::LogLevel, const std::string&) {};
    const std::vector<size_t> lengths = fz::decompress_batch(views, policy);
    for (size_t i = 0; i < count; ++i) fz::filter::check_decoded(cd_values, cd_count, infos[i], outputs[i], lengths[i], threads);
    if (decoded != nullptr) std::copy(lengths.begin(), lengths.end(), decoded);
  });
}

// The same into device memory. The header checks are made; NOA's check of
// the decoded range needs the values on the host, which this path does not
// have (a host decode of every NOA chunk would double the work of a GPU
// read): the range check is left out here, and README says so.
__attribute__((visibility("default"))) int h5z_fz_decode_dataset_batch_to_device(
    size_t cd_count, const unsigned* cd_values, size_t count, const void* const* frames, const size_t* frame_bytes,
    void* const* device_outputs, const size_t* capacities, size_t* decoded, char* error, size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    const std::vector<fz::FrameView> views = frame_views(count, frames, frame_bytes, device_outputs, capacities);
    checked_headers(cd_count, cd_values, views);
    fz::Options policy;
    policy.log = [](fz::LogLevel, const std::string&) {};
    const std::vector<size_t> lengths = fz::decompress_batch_to_device(views, policy);
    if (decoded != nullptr) std::copy(lengths.begin(), lengths.end(), decoded);
  });
}

// The bytes a frame decodes to, from its header (checked as the decoders
// check it; the payload is not read), for callers that do not know the
// chunk's shape (the Zarr codec). Version 3.
__attribute__((visibility("default"))) int h5z_fz_frame_decoded_bytes(const void* frame, size_t frame_bytes,
                                                                      unsigned long long* decoded_bytes,
                                                                      char* error, size_t error_capacity) {
  return guarded(error, error_capacity, [&] {
    if (decoded_bytes == nullptr) throw fz::Error("null decoded_bytes");
    *decoded_bytes = 0;
    if (frame == nullptr && frame_bytes > 0) throw fz::Error("null frame");
    *decoded_bytes = fz::inspect_header(frame, frame_bytes).original_bytes;
  });
}

}  // extern "C"
