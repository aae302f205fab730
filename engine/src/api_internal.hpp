// What the public entry points share (api.cpp, compress_flow.cpp,
// decompress_flow.cpp, batch.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "fz/fz.hpp"

namespace fz {

// HDF5 chunks are limited to 4 GiB; so are our frames' decoded sizes, so that a
// hostile frame cannot make us allocate more.
constexpr uint64_t kMaxChunkBytes = uint64_t(1) << 32;

// Runs `body`, turning internal exceptions into fz::Error with context.
template <typename F>
auto translate_errors(const char* what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const FormatError& e) {
    throw Error(std::string(what) + ": " + e.what());
  } catch (const UsageError& e) {
    throw Error(std::string(what) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(std::string(what) + ": " + e.what());
  }
}

// The chunk's dims (dims_in, or one dimension when empty) after checking that
// they match `bytes` and the limits; throws Error naming what is wrong.
std::vector<uint64_t> checked_chunk_dims(const void* data, size_t bytes, const DataType& dtype,
                                         const std::vector<uint64_t>& dims_in);

// The CUDA device that owns `pointer`; throws Error when there is none or it
// is not device memory (`what` names it).
int owning_device(const void* pointer, const char* what);

// Where a chunk may run, for tests that compare the two backends' frames in
// one process: as the options say, on the CPU only, or on the GPU whenever
// the process has one (the device strings "cpu" and "cuda").
enum class BackendUse { kChosen, kCpu, kGpu };

// compress() on the backend `use` allows.
Bytes compress_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                    const Options& options, BackendUse use);
// compress_into() on the backend `use` allows.
size_t compress_into_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                          const Options& options, void* frame, size_t capacity, Bytes* spill, BackendUse use);

// decompress_into() with its CPU work on at most `threads` threads (0 = all
// cores), on the backend `use` allows.
size_t decompress_into_on(const void* frame, size_t frame_bytes, void* out, size_t capacity, unsigned threads,
                          BackendUse use = BackendUse::kChosen);

}  // namespace fz
