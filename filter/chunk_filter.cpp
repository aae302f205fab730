// The filter callback on one chunk: compressed into HDF5's own buffer, or
// decoded into a buffer HDF5's allocator made, with every size checked.
#include <H5PLextern.h>
#include <hdf5.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <sys/mman.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "frame_check.hpp"
#include "plugin_internal.hpp"
#include "range_stretch.hpp"

namespace fz::filter {
namespace {

// Replaces HDF5's chunk buffer with `bytes` in a buffer HDF5's own allocator
// made, since HDF5 frees it.
size_t hand_back(const Hdf5Api& api, const void* bytes, size_t size, size_t* buf_size, void** buf) {
  void* replacement = api.allocate_memory(size, false);
  if (replacement == nullptr) throw std::bad_alloc();
  std::memcpy(replacement, bytes, size);
  api.free_memory(*buf);
  *buf = replacement;
  *buf_size = size;
  return size;
}

// glibc serves every allocation above this from its own mmap (its dynamic
// threshold never rises past it): fresh pages, which realloc can remap.
constexpr size_t kLargestMmapThreshold = size_t{32} << 20;

// A decoded chunk goes into a buffer the filter allocates (HDF5 frees it).
// Above glibc's largest mmap threshold (32 MiB) every such buffer is fresh
// memory, and writing the chunk into it faults in every 4 KiB page: 16-18 ms
// of a 64 MiB chunk's read on the GPU machine. Transparent huge pages cut
// that to one fault per 2 MiB where the system allows them on request
// (madvise mode); elsewhere the advice changes nothing.
void advise_huge_pages(void* buffer, size_t size) {
#ifdef MADV_HUGEPAGE
  if (size < kLargestMmapThreshold) return;
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(buffer) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(buffer) + size) & ~(kHuge - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // advice only
#else
  (void)buffer;
  (void)size;
#endif
}

std::atomic<bool> said_compress{false};
std::atomic<bool> said_not_set_up{false};
std::atomic<bool> said_frame_sized{false};

// A 64-bit FNV-1a hash of a dataset's stored cd_values: the filter callback
// knows a dataset only by them.
uint64_t hash_of_words(const unsigned cd[], size_t cd_count) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < cd_count; ++i) {
    for (unsigned byte = 0; byte < 4; ++byte) {
      hash ^= (cd[i] >> (8 * byte)) & 0xFFu;
      hash *= 0x100000001b3ull;
    }
  }
  return hash;
}

// Warns (always, not only when verbose) the first time a NOA dataset's chunk
// holds a value that alone stretches the range: an undeclared missing value
// (range_stretch.hpp). Once per dataset, keyed on its stored cd_values, so a
// second dataset with other parameters warns again; datasets that share every
// parameter share the warning. Reads the chunk only; the frame is unchanged.
// The first kEveryChunk chunks of a dataset are looked at, then one in
// kEveryChunk: land covers many chunks, and the look costs about 15 us, a
// sizeable share of a small chunk's compression.
void warn_if_range_stretched(const unsigned cd[], size_t cd_count, const StoredParams& params, const void* chunk,
                             size_t nbytes) {
  if (params.user.mode != ErrorMode::Noa || !preset_is_lossy(params.user.preset)) return;
  if (params.dataset.dtype.element_class != ElementClass::Float) return;
  constexpr uint64_t kEveryChunk = 16;
  constexpr uint64_t kWarned = std::numeric_limits<uint64_t>::max();
  // A bounded record: past it, no more warnings rather than unbounded memory.
  constexpr size_t kMostDatasets = 256;
  static std::mutex mutex;
  static std::unordered_map<uint64_t, uint64_t> chunks_seen;  // per dataset key; kWarned once warned
  const uint64_t key = hash_of_words(cd, cd_count);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto seen = chunks_seen.find(key);
    if (seen == chunks_seen.end()) {
      if (chunks_seen.size() >= kMostDatasets) return;
      seen = chunks_seen.emplace(key, 0).first;
    }
    if (seen->second == kWarned) return;
    const uint64_t index = seen->second++;
    if (index >= kEveryChunk && index % kEveryChunk != 0) return;
  }
  const std::optional<RangeStretch> stretch =
      find_range_stretch(chunk, nbytes, params.dataset.dtype, params.dataset.fill_value,
                         missing_value_element(params.user, params.dataset.dtype));
  if (!stretch) return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    uint64_t& seen = chunks_seen[key];
    if (seen == kWarned) return;
    seen = kWarned;
  }
  const char* dtype_word = params.dataset.dtype.size == 4 ? "float32" : "float64";
  const int digits = params.dataset.dtype.size == 4 ? 9 : 17;  // enough to give the value back exactly
  std::fprintf(stderr,
               "H5Z-FZ: warning: a NOA chunk (%s) holds %.*g, which alone stretches the value range (the other values "
               "lie in [%.*g, %.*g]); every other value is quantized against that range. If %.*g marks missing data "
               "(land, a _FillValue), give it as the missing value: cd_values[4..5], `h5fz params --missing %.*g "
               "--dtype %s`, or h5fz.compression_opts / h5fz.h5repack_filter(missing=..., dtype=\"%s\"). "
               "Said once per dataset.\n",
               describe(params).c_str(), digits, stretch->value, digits, stretch->rest_min, digits, stretch->rest_max,
               digits, stretch->value, digits, stretch->value, dtype_word, dtype_word);
}
std::atomic<bool> said_bytes_fallback{false};
std::atomic<bool> said_decompress{false};

// A chunk comes in a buffer of exactly its size, without room for the raw
// frame it becomes when it does not compress (or cannot, for want of memory):
// that frame would take a second buffer of the chunk's size. Large buffers
// (above glibc's largest mmap threshold, where realloc remaps pages instead
// of copying them) are grown by the frame's header first, so the raw frame is
// built over the chunk itself. A buffer that cannot grow is left as it is.
void make_room_for_raw_frame(const Hdf5Api& api, size_t nbytes, size_t rank, size_t* buf_size, void** buf) {
  if (nbytes < kLargestMmapThreshold) return;
  const size_t needed = max_frame_bytes(nbytes, rank);
  if (*buf_size >= needed) return;
  void* grown = api.resize_memory(*buf, needed);
  if (grown == nullptr) return;
  *buf = grown;
  *buf_size = needed;
}

}  // namespace

size_t compress_chunk(const Hdf5Api& api, size_t cd_count, const unsigned cd[], size_t nbytes, size_t* buf_size,
                      void** buf) {
  // Values still in the user layout: set_local never ran. HDF5 skips
  // can_apply and set_local for variable-length types (vlen sequences and
  // strings) when every filter is optional, as h5py adds them, yet still
  // calls the filter on each chunk. Those chunks hold heap references, not
  // data, and must stay unfiltered: fail quietly (HDF5 then stores the chunk
  // as it is and marks it so), with no message per chunk.
  if (!is_stored_layout(cd, cd_count)) {
    say_once(said_not_set_up, "chunk of a dataset set_local never saw (a variable-length type): left unfiltered");
    return 0;
  }
  StoredParams params;
  try {
    params = decode_stored(cd, cd_count);
  } catch (...) {
    rethrow_as_refusal(Problem::BadParameters);
  }
  try {
    warn_if_range_stretched(cd, cd_count, params, *buf, nbytes);
    Options options = dataset_options(params);  // HDF5's fill value and the missing value, both kept
    // Where and how the engine works: H5Z_FZ_DEVICE, _THREADS, _CPU, _GPU_COPY (environment.hpp).
    apply_policy(policy_from_environment(), options);
    DataType dtype = params.dataset.dtype;
    std::vector<uint64_t> dims(params.dataset.chunk_dims.begin(), params.dataset.chunk_dims.end());
    const std::optional<uint64_t> expected = chunk_bytes(params.dataset);
    if (dims.empty() || expected != nbytes) {
      // Another filter ran first and changed the size: the elements are gone,
      // only bytes are left, and bytes are compressed losslessly.
      say_once(said_bytes_fallback, [&] {
        return "chunk of " + std::to_string(nbytes) + " bytes does not match the chunk shape (" +
               std::to_string(expected.value_or(0)) + " bytes): compressed losslessly as bytes";
      });
      dtype = bytes_type();
      dims = {static_cast<uint64_t>(nbytes)};
      options.preset = Preset::Lossless;
      options.fill_value.clear();
      options.missing_value.clear();
    }
    say_once(said_compress, [&] {
      return "compressing chunks: " + describe(params) + ", threads " +
             (options.threads ? std::to_string(options.threads) : std::string("default"));
    });
    // The frame goes into HDF5's own buffer, over the chunk (compress_into
    // reads the chunk first): warm memory, where a new multi-megabyte buffer
    // costs its page faults on every chunk (2.5 us per 4 KiB page measured on
    // the GPU machine, 32 ms for a 52 MB frame), and on the GPU path no second
    // copy of the frame. Only a frame larger than that buffer (an
    // incompressible chunk's raw frame) needs a new one.
    make_room_for_raw_frame(api, nbytes, dims.size(), buf_size, buf);
    Bytes spill;
    const size_t written = compress_into(*buf, nbytes, dtype, dims, options, *buf, *buf_size, &spill);
    // A rank of a parallel job (or H5Z_FZ_FRAME_BUFFERS=own): parallel HDF5
    // holds every chunk's buffer until its collective write, so the frame
    // goes back in a buffer of its own size (FrameBufferChoice, environment.hpp).
    const FrameBufferChoice& frame_buffers = frame_buffers_from_environment();
    if (hand_back_frame_sized(written, *buf_size, frame_buffers.own)) {
      say_once(said_frame_sized,
               [&] { return frame_buffers.reason + ": frames handed back in buffers of their own size"; });
      try {
        return hand_back(api, *buf, written, buf_size, buf);
      } catch (const std::bad_alloc&) {
        // No memory for the copy (hand_back allocates before it touches
        // *buf): the frame stays where it was written, as for one process.
      }
    }
    if (written) return written;
    return hand_back(api, spill.data(), spill.size(), buf_size, buf);
  } catch (...) {
    rethrow_as_refusal(Problem::Compress);
  }
}

size_t decompress_chunk(const Hdf5Api& api, size_t cd_count, const unsigned cd[], size_t nbytes, size_t* buf_size,
                        void** buf) {
  void* output = nullptr;
  try {
    // The header only: decompress_into checks the payload's CRC as it decodes
    // (on the GPU when it decodes there), where a host pass over the payload
    // here cost a third of a 16 MiB chunk's read.
    const FrameInfo info = inspect_header(*buf, nbytes);
    if (info.original_bytes > kMaxChunkBytes) {
      throw Error("frame claims " + std::to_string(info.original_bytes) +
                  " decoded bytes, more than an HDF5 chunk can hold");
    }
    // The frame against the dataset's stored parameters (frame_check.hpp,
    // shared with the batch readers).
    const FrameExpectation target = check_frame(cd, cd_count, info);
    say_once(said_decompress, [&] {
      return "decompressing chunks (frame format " + std::to_string(info.version_major) + "." +
             std::to_string(info.version_minor) + ", preset " + preset_name(info.preset) + ", " +
             describe(info.dtype) + ")";
    });
    const size_t size = static_cast<size_t>(info.original_bytes);
    // A frame allowed to be shorter than the chunk (see check_frame) still
    // gets a whole chunk of buffer, zeros past its end, so that HDF5 copying
    // a chunk out of it never reads past the allocation.
    size_t allocated = size;
    if (!target.exact && target.chunk && *target.chunk <= kMaxChunkBytes && *target.chunk > size) {
      allocated = static_cast<size_t>(*target.chunk);
    }
    require_memory(allocated, allocated, "allocate the output of");
    output = api.allocate_memory(allocated > 0 ? allocated : 1, false);
    if (output == nullptr) throw std::bad_alloc();
    advise_huge_pages(output, allocated);
    const size_t decoded = decompress_into(*buf, nbytes, output, size, policy_from_environment());
    if (decoded != size) {
      throw Error("frame decoded to " + std::to_string(decoded) + " bytes, its header says " + std::to_string(size));
    }
    if (allocated > size) std::memset(static_cast<uint8_t*>(output) + size, 0, allocated - size);
    check_decoded(cd, cd_count, info, output, size);
    api.free_memory(*buf);
    *buf = output;
    *buf_size = allocated;
    return size;
  } catch (...) {
    if (output != nullptr) api.free_memory(output);
    rethrow_as_refusal(Problem::Decompress);
  }
}

}  // namespace fz::filter
