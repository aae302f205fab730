// The H5Z-FZ HDF5 filter plugin: H5PLget_plugin_type/info (the only exported
// symbols), can_apply, set_local and the filter callback.
//
// Every entry point takes its caller's return address first, to bind to the
// libhdf5 that called it (hdf5_binding.hpp), catches everything (no exception
// crosses into C) and reports failures through H5Epush with a message.
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

#include "cd_values.hpp"
#include "environment.hpp"
#include "fz/fz.hpp"
#include "hdf5_binding.hpp"
#include "range_stretch.hpp"

namespace fz::filter {
namespace {

using Problem = Hdf5Api::Problem;

// A failure that an entry point reports and turns into its error return.
struct Refusal {
  Problem problem;
  std::string message;
};

// HDF5 chunks are limited to 4 GiB - 1 bytes; a frame claiming more is hostile
// and must not make the filter allocate it.
constexpr uint64_t kMaxChunkBytes = 0xFFFFFFFFull;

// Enough for any stored layout, and for noticing a user layout that is too long.
constexpr size_t kCdCapacity = 256;

bool verbose() { return verbose_environment(); }

// Prints a message the first time a given kind of decision is made.
void say_once(std::atomic<bool>& said, const std::string& message) {
  if (!verbose() || said.exchange(true)) return;
  std::fprintf(stderr, "H5Z-FZ: %s\n", message.c_str());
}

std::string hdf5_failure(const char* function) { return std::string(function) + " failed"; }

// ---- what set_local learns from HDF5 ----------------------------------------

bool is_variable_length(const Hdf5Api& api, hid_t type) {
  const H5T_class_t type_class = api.Tget_class(type);
  if (type_class < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tget_class")};
  if (type_class == H5T_VLEN) return true;
  if (type_class == H5T_STRING) {
    const htri_t variable = api.Tis_variable_str(type);
    if (variable < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tis_variable_str")};
    if (variable > 0) return true;
  }
  // Compounds and arrays may hold variable-length members (VL strings count
  // as VLEN here: the library sees them as such below the top level).
  const htri_t nested = api.Tdetect_class(type, H5T_VLEN);
  if (nested < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tdetect_class")};
  return nested > 0;
}

void refuse_variable_length(const Hdf5Api& api, hid_t type) {
  if (is_variable_length(api, type)) {
    throw Refusal{Problem::BadParameters,
                  "variable-length types (vlen sequences, variable-length strings, or compounds and "
                  "arrays holding them) cannot be compressed by H5Z-FZ; use a fixed-size type"};
  }
}

DatasetInfo learn_element(const Hdf5Api& api, hid_t type) {
  DatasetInfo info;
  const H5T_class_t type_class = api.Tget_class(type);
  if (type_class < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tget_class")};
  const size_t size = api.Tget_size(type);
  if (size == 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tget_size")};
  if (size > std::numeric_limits<uint32_t>::max()) {
    throw Refusal{Problem::BadParameters, "elements of " + std::to_string(size) + " bytes are too large"};
  }
  info.hdf5_class = static_cast<unsigned>(type_class);
  info.dtype.size = static_cast<uint32_t>(size);
  info.dtype.element_class = ElementClass::Opaque;
  // H5Tget_order fails or says NONE/MIXED for types without one (opaque,
  // compound of mixed members): those are plain bytes, little-endian by convention.
  const H5T_order_t order = api.Tget_order(type);
  info.dtype.order = order == H5T_ORDER_BE ? ByteOrder::Big : ByteOrder::Little;
  const bool plain_order = order == H5T_ORDER_LE || order == H5T_ORDER_BE;

  if (type_class == H5T_INTEGER) {
    const H5T_sign_t sign = api.Tget_sign(type);
    if (sign < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tget_sign")};
    info.hdf5_sign = static_cast<unsigned>(sign);
    if (plain_order && (size == 1 || size == 2 || size == 4 || size == 8)) {
      info.dtype.element_class = sign == H5T_SGN_2 ? ElementClass::Signed : ElementClass::Unsigned;
    }
  } else if (type_class == H5T_FLOAT) {
    size_t sign_pos = 0, exp_pos = 0, exp_size = 0, mant_pos = 0, mant_size = 0;
    if (api.Tget_fields(type, &sign_pos, &exp_pos, &exp_size, &mant_pos, &mant_size) < 0) {
      throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Tget_fields")};
    }
    const size_t exp_bias = api.Tget_ebias(type);
    info.float_fields = {static_cast<unsigned>(sign_pos), static_cast<unsigned>(exp_pos),
                         static_cast<unsigned>(exp_size), static_cast<unsigned>(mant_pos),
                         static_cast<unsigned>(mant_size), static_cast<unsigned>(exp_bias)};
    // Layouts too wide for the stored words (floats above 32 bytes) are not
    // recorded; they are kept bit-exact as opaque bytes like every non-IEEE float.
    if (sign_pos > 255 || exp_pos > 255 || exp_size > 255 || mant_pos > 255 || mant_size > 255 ||
        exp_bias >= (size_t(1) << 24)) {
      info.float_fields = {};
    }
    // Only true IEEE binary16/32/64 is treated as numbers; other layouts
    // (VAX order, bfloat16, x87 long double, custom fields) are kept bit-exact.
    if (plain_order && info.float_fields == ieee_fields(static_cast<unsigned>(size))) {
      info.dtype.element_class = ElementClass::Float;
    }
  } else if (!plain_order) {
    info.dtype.order = ByteOrder::Little;
  }
  return info;
}

// The fill value matters for numbers (NOA range, exact storage of land masks);
// only a user-defined one counts: the default fill (zero) is not a marker.
Bytes learn_fill_value(const Hdf5Api& api, hid_t dcpl, hid_t type, const DataType& dtype) {
  if (dtype.element_class == ElementClass::Opaque || dtype.size > kMaxFillBytes) return {};
  H5D_fill_value_t status = H5D_FILL_VALUE_UNDEFINED;
  if (api.Pfill_value_defined(dcpl, &status) < 0) {
    throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pfill_value_defined")};
  }
  if (status != H5D_FILL_VALUE_USER_DEFINED) return {};
  Bytes fill(dtype.size);
  // Asking in the dataset's own type gives the element in the data's byte order.
  if (api.Pget_fill_value(dcpl, type, fill.data()) < 0) {
    throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_fill_value")};
  }
  return fill;
}

std::vector<uint32_t> learn_chunk(const Hdf5Api& api, hid_t dcpl) {
  hsize_t dims[kMaxRank] = {};
  const int rank = api.Pget_chunk(dcpl, static_cast<int>(kMaxRank), dims);
  if (rank < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_chunk")};
  std::vector<uint32_t> chunk;
  for (int i = 0; i < rank && i < static_cast<int>(kMaxRank); ++i) {
    if (dims[i] > std::numeric_limits<uint32_t>::max()) {
      throw Refusal{Problem::BadParameters, "chunk dimension " + std::to_string(dims[i]) + " is above 2^32-1"};
    }
    chunk.push_back(static_cast<uint32_t>(dims[i]));
  }
  return chunk;
}

// The bytes one chunk of the dataset holds (element size x chunk dims), or
// nothing when the product does not fit 64 bits (no real chunk does).
std::optional<uint64_t> chunk_bytes(const DatasetInfo& dataset) {
  uint64_t bytes = dataset.dtype.size;
  for (uint32_t extent : dataset.chunk_dims) {
    if (extent != 0 && bytes > std::numeric_limits<uint64_t>::max() / extent) return std::nullopt;
    bytes *= extent;
  }
  return bytes;
}

// A chunk takes about twice its size while it is written (HDF5's chunk
// buffer and the filter's working memory, docs/PERFORMANCE.md): one that
// cannot have that much on this machine is refused when the dataset is
// created, rather than stored raw or killed for memory chunk after chunk.
void refuse_chunk_larger_than_memory(const DatasetInfo& dataset) {
  const std::optional<uint64_t> bytes = chunk_bytes(dataset);
  const uint64_t total = total_memory();
  if (!bytes || total == 0 || *bytes <= total / 2) return;
  throw Refusal{Problem::BadParameters,
                "a chunk of " + std::to_string(*bytes >> 20) + " MiB needs about twice that in memory while it is "
                "written (HDF5's chunk buffer and H5Z-FZ's working memory), and this process can have at most " +
                    std::to_string(total >> 20) + " MiB; use smaller chunks (a few MiB suit H5Z-FZ best)"};
}

// Our filter's cd_values and flags as stored in the dataset creation list.
std::vector<unsigned> read_own_cd_values(const Hdf5Api& api, hid_t dcpl, unsigned& flags) {
  std::vector<unsigned> cd(kCdCapacity, 0u);
  size_t count = cd.size();
  if (api.Pget_filter_by_id2(dcpl, static_cast<H5Z_filter_t>(kFilterId), &flags, &count, cd.data(), 0, nullptr,
                             nullptr) < 0) {
    throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_filter_by_id2")};
  }
  if (count > cd.size()) {
    throw Refusal{Problem::BadParameters, std::to_string(count) + " cd_values given; H5Z-FZ takes at most " +
                                              std::to_string(kMaxUserValues)};
  }
  cd.resize(count);
  return cd;
}

// What to do about a filter that runs before a lossy preset, in words that
// fit that filter.
std::string advice_for_filter_before(H5Z_filter_t id, const std::string& name) {
  switch (id) {
    case H5Z_FILTER_SHUFFLE:
      return name + " rearranges the bytes of the elements: remove it (h5py: shuffle=False)";
    case H5Z_FILTER_FLETCHER32:
      return name + " appends a checksum of the bytes it is handed: put it after H5Z-FZ (h5py does so with "
                    "fletcher32=True; with H5Pset_fletcher32 or h5repack -f FLET, add it after H5Z-FZ) or drop it";
    case H5Z_FILTER_SCALEOFFSET:
    case H5Z_FILTER_NBIT:
      return name + " packs the values into fewer bits: drop it (h5py: scaleoffset=None)";
    default:
      return name + " changes the bytes before H5Z-FZ sees them: put H5Z-FZ first or drop it";
  }
}

// Lossy quantization needs the elements themselves: bytes another filter has
// rearranged, compressed or extended (h5py's shuffle=True puts shuffle first;
// a checksum filter added before ours appends 4 bytes) would give garbage. A
// lossy preset must come first; the message names every filter in the way.
void refuse_lossy_after_other_filter(const Hdf5Api& api, hid_t dcpl, Preset preset) {
  if (!preset_is_lossy(preset)) return;
  const int count = api.Pget_nfilters(dcpl);
  if (count < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_nfilters")};
  std::string in_the_way;
  std::string advice;
  for (int index = 0; index < count; ++index) {
    unsigned flags = 0;
    size_t no_values = 0;
    char name[128] = {};
    const H5Z_filter_t id = api.Pget_filter2(dcpl, static_cast<unsigned>(index), &flags, &no_values, nullptr,
                                             sizeof name, name, nullptr);
    if (id < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_filter2")};
    if (id == static_cast<H5Z_filter_t>(kFilterId)) {
      if (index == 0) return;
      throw Refusal{Problem::BadParameters,
                    "lossy preset " + std::to_string(static_cast<unsigned>(preset)) + " (" + preset_name(preset) +
                        ") must be the first filter of the pipeline, but " + in_the_way +
                        (index == 1 ? " comes" : " come") + " before it; " + advice +
                        "; or use the lossless preset"};
    }
    std::string label(name, strnlen(name, sizeof name));
    if (label.empty()) label = "filter " + std::to_string(id);
    in_the_way += (in_the_way.empty() ? "" : ", ") + std::string("filter ") + std::to_string(id) + " (" + label + ")";
    advice += (advice.empty() ? "" : "; ") + advice_for_filter_before(id, label);
  }
}

// Whether H5Z-FZ is the pipeline's first filter: then, reading, its output is
// the chunk itself (recorded in the stored layout, see decode_target).
bool is_first_filter(const Hdf5Api& api, hid_t dcpl) {
  unsigned flags = 0;
  size_t no_values = 0;
  const H5Z_filter_t id = api.Pget_filter2(dcpl, 0u, &flags, &no_values, nullptr, 0, nullptr, nullptr);
  if (id < 0) throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pget_filter2")};
  return id == static_cast<H5Z_filter_t>(kFilterId);
}

// ---- the callbacks ------------------------------------------------------------

[[noreturn]] void rethrow_as_refusal(Problem problem) {
  try {
    throw;
  } catch (const Refusal&) {
    throw;
  } catch (const Error& e) {
    throw Refusal{problem, e.what()};
  } catch (const std::bad_alloc&) {
    throw Refusal{problem, "out of memory"};
  } catch (const std::exception& e) {
    throw Refusal{problem, e.what()};
  } catch (...) {
    throw Refusal{problem, "unknown error"};
  }
}

htri_t can_apply(const Hdf5Api& api, hid_t, hid_t type, hid_t) {
  refuse_variable_length(api, type);
  return 1;
}

herr_t set_local(const Hdf5Api& api, hid_t dcpl, hid_t type, hid_t) {
  refuse_variable_length(api, type);
  unsigned flags = 0;
  const std::vector<unsigned> cd = read_own_cd_values(api, dcpl, flags);
  StoredParams params;
  try {
    params.user = parse_any_layout(cd.data(), cd.size());
  } catch (...) {
    rethrow_as_refusal(Problem::BadParameters);
  }
  refuse_lossy_after_other_filter(api, dcpl, params.user.preset);
  try {
    require_available(params.user.preset);
  } catch (...) {
    rethrow_as_refusal(Problem::BadParameters);
  }
  params.dataset = learn_element(api, type);
  params.dataset.fill_value = learn_fill_value(api, dcpl, type, params.dataset.dtype);
  params.dataset.chunk_dims = learn_chunk(api, dcpl);
  params.dataset.first_filter = is_first_filter(api, dcpl);
  refuse_chunk_larger_than_memory(params.dataset);
  std::vector<unsigned> stored;
  try {
    // The missing-value tuning words take precedence over HDF5's fill value
    // (netCDF files in no-fill mode have only a _FillValue attribute).
    if (has_missing_value(params.user)) {
      Bytes missing = missing_value_element(params.user, params.dataset.dtype);
      if (!missing.empty()) {
        params.dataset.fill_value = std::move(missing);
      } else if (verbose()) {
        std::fprintf(stderr, "H5Z-FZ: missing value in cd_values[4..5] ignored for %s elements (not float32/float64)\n",
                     describe(params.dataset.dtype).c_str());
      }
    }
    Options options = to_options(params.user);
    options.fill_value = params.dataset.fill_value;
    validate(options, params.dataset.dtype);
    stored = encode_stored(params);
  } catch (...) {
    rethrow_as_refusal(Problem::BadParameters);
  }
  if (api.Pmodify_filter(dcpl, static_cast<H5Z_filter_t>(kFilterId), flags, stored.size(), stored.data()) < 0) {
    throw Refusal{Problem::Hdf5Call, hdf5_failure("H5Pmodify_filter")};
  }
  if (verbose()) {
    std::fprintf(stderr, "H5Z-FZ: dataset set up: %s (HDF5 %s)\n", describe(params).c_str(),
                 api.library_path.c_str());
  }
  return 0;
}

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
      find_range_stretch(chunk, nbytes, params.dataset.dtype, params.dataset.fill_value);
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
    Options options = to_options(params.user);
    options.fill_value = params.dataset.fill_value;
    // Where and how the engine works: H5Z_FZ_DEVICE, _THREADS, _CPU, _GPU_COPY (environment.hpp).
    apply_policy(policy_from_environment(), options);
    DataType dtype = params.dataset.dtype;
    std::vector<uint64_t> dims(params.dataset.chunk_dims.begin(), params.dataset.chunk_dims.end());
    const std::optional<uint64_t> expected = chunk_bytes(params.dataset);
    if (dims.empty() || expected != nbytes) {
      // Another filter ran first and changed the size: the elements are gone,
      // only bytes are left, and bytes are compressed losslessly.
      say_once(said_bytes_fallback, "chunk of " + std::to_string(nbytes) + " bytes does not match the chunk shape (" +
                                        std::to_string(expected.value_or(0)) + " bytes): compressed losslessly as bytes");
      dtype = bytes_type();
      dims = {static_cast<uint64_t>(nbytes)};
      options.preset = Preset::Lossless;
      options.fill_value.clear();
    }
    say_once(said_compress, "compressing chunks: " + describe(params) + ", threads " +
                                (options.threads ? std::to_string(options.threads) : std::string("default")));
    // The frame goes into HDF5's own buffer, over the chunk (compress_into
    // reads the chunk first): warm memory, where a new multi-megabyte buffer
    // costs its page faults on every chunk (2.5 us per 4 KiB page measured on
    // the GPU machine, 32 ms for a 52 MB frame), and on the GPU path no second
    // copy of the frame. Only a frame larger than that buffer (an
    // incompressible chunk's raw frame) needs a new one.
    make_room_for_raw_frame(api, nbytes, dims.size(), buf_size, buf);
    Bytes spill;
    const size_t written = compress_into(*buf, nbytes, dtype, dims, options, *buf, *buf_size, &spill);
    if (written) return written;
    return hand_back(api, spill.data(), spill.size(), buf_size, buf);
  } catch (...) {
    rethrow_as_refusal(Problem::Compress);
  }
}

// What the frame must decode to for this dataset, from its stored cd_values.
// HDF5 copies a whole chunk out of what the filter hands back without asking
// how long it is, so the decoded size is checked against the dataset, never
// taken from the frame alone.
struct DecodeTarget {
  // The chunk's bytes when known: the output buffer is never smaller, so
  // HDF5 cannot read past it even when the frame is allowed to be shorter.
  std::optional<uint64_t> chunk;
  // The frame must decode to exactly `chunk` bytes.
  bool exact = false;
};

DecodeTarget decode_target(const unsigned cd[], size_t cd_count, const FrameInfo& info) {
  // set_local rewrites every dataset's values into the stored layout before
  // any chunk is written; values in the user layout mean it never ran (the
  // filter was unavailable or refused the type), so no chunk of this dataset
  // can hold an H5Z-FZ frame.
  if (!is_stored_layout(cd, cd_count)) {
    throw Error("cd_values are not in the stored layout, so H5Z-FZ never compressed a chunk of this dataset; "
                "the chunk is not an H5Z-FZ frame it wrote");
  }
  StoredParams params;
  try {
    params = decode_stored(cd, cd_count);
  } catch (const Error&) {
    // A layout from a later version: the frame alone says how to decode it.
    return {};
  }
  DecodeTarget target;
  target.chunk = chunk_bytes(params.dataset);
  // A frame of plain bytes with another filter before ours holds that
  // filter's output (compress_chunk's byte fallback), whose length is not the
  // chunk's. Layouts written before the first-filter flag existed cannot say
  // which filter comes first; they get the same allowance, and the output is
  // still padded to a whole chunk.
  const bool other_filter_first = !params.dataset.first_filter;
  if (other_filter_first && info.dtype == bytes_type()) return target;
  if (info.dtype.size != params.dataset.dtype.size) {
    throw Error("frame holds " + std::to_string(info.dtype.size) + "-byte elements but the dataset's are " +
                std::to_string(params.dataset.dtype.size) + " bytes");
  }
  if (!target.chunk || info.original_bytes != *target.chunk) {
    throw Error("frame decodes to " + std::to_string(info.original_bytes) + " bytes but a chunk of this dataset is " +
                (target.chunk ? std::to_string(*target.chunk) : std::string("over 2^64")) + " bytes");
  }
  target.exact = true;
  return target;
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
    const DecodeTarget target = decode_target(cd, cd_count, info);
    say_once(said_decompress, "decompressing chunks (frame format " + std::to_string(info.version_major) + "." +
                                  std::to_string(info.version_minor) + ", preset " + preset_name(info.preset) + ", " +
                                  describe(info.dtype) + ")");
    const size_t size = static_cast<size_t>(info.original_bytes);
    // A frame allowed to be shorter than the chunk (see decode_target) still
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
    api.free_memory(*buf);
    *buf = output;
    *buf_size = allocated;
    return size;
  } catch (...) {
    if (output != nullptr) api.free_memory(output);
    rethrow_as_refusal(Problem::Decompress);
  }
}

// Binds, registers the error class, runs `body` and turns any failure into
// `failure` plus a message on HDF5's error stack.
template <typename Result, typename Body>
Result guarded(const void* caller, const char* function, int line, Result failure, Body&& body,
               bool filter_callback = false) noexcept {
  const Hdf5Api* api = hdf5_api_for(caller);
  if (api == nullptr) {
    std::fprintf(stderr, "H5Z-FZ: %s: cannot find the HDF5 library that called the filter\n", function);
    return failure;
  }
  try {
    api->ensure_error_class();
    return body(*api);
  } catch (const Refusal& refusal) {
    try {
      if (filter_callback) {
        api->report_from_filter(refusal.problem, __FILE__, function, line, refusal.message);
      } else {
        api->report(refusal.problem, __FILE__, function, line, refusal.message);
      }
    } catch (...) {
      std::fprintf(stderr, "H5Z-FZ: %s\n", refusal.message.c_str());
    }
  } catch (...) {
    // Only Refusal escapes the bodies; anything else is out of memory while
    // building a message.
    std::fprintf(stderr, "H5Z-FZ: %s failed (out of memory)\n", function);
  }
  return failure;
}

// __builtin_return_address must be taken in the function HDF5 calls, so the
// entry points stay out of line.
__attribute__((noinline)) htri_t fz_can_apply(hid_t dcpl, hid_t type, hid_t space) {
  return guarded(__builtin_return_address(0), "H5Z-FZ can_apply", __LINE__, htri_t{-1},
                 [&](const Hdf5Api& api) {
                   try {
                     return can_apply(api, dcpl, type, space);
                   } catch (...) {
                     rethrow_as_refusal(Problem::BadParameters);
                   }
                 });
}

__attribute__((noinline)) herr_t fz_set_local(hid_t dcpl, hid_t type, hid_t space) {
  return guarded(__builtin_return_address(0), "H5Z-FZ set_local", __LINE__, herr_t{-1},
                 [&](const Hdf5Api& api) {
                   try {
                     return set_local(api, dcpl, type, space);
                   } catch (...) {
                     rethrow_as_refusal(Problem::BadParameters);
                   }
                 });
}

__attribute__((noinline)) size_t fz_filter(unsigned flags, size_t cd_count, const unsigned cd[],
                                                      size_t nbytes, size_t* buf_size, void** buf) {
  return guarded(__builtin_return_address(0), "H5Z-FZ filter", __LINE__, size_t{0}, [&](const Hdf5Api& api) {
    if (buf == nullptr || *buf == nullptr || buf_size == nullptr) {
      throw Refusal{Problem::BadParameters, "the filter was called without a buffer"};
    }
    if (nbytes > *buf_size) {
      throw Refusal{Problem::BadParameters, "HDF5 passed " + std::to_string(nbytes) + " bytes in a buffer of " +
                                                std::to_string(*buf_size)};
    }
    if (flags & H5Z_FLAG_REVERSE) return decompress_chunk(api, cd_count, cd, nbytes, buf_size, buf);
    return compress_chunk(api, cd_count, cd, nbytes, buf_size, buf);
  }, true);
}

const H5Z_class2_t kFilterClass = {
    H5Z_CLASS_T_VERS,
    static_cast<H5Z_filter_t>(kFilterId),
    1,  // encoder present
    1,  // decoder present
    kFilterName,
    fz_can_apply,
    fz_set_local,
    fz_filter,
};

}  // namespace
}  // namespace fz::filter

extern "C" __attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

extern "C" __attribute__((visibility("default"), noinline)) const void* H5PLget_plugin_info(void) {
  // Binding here, once, makes a missing or too old HDF5 visible when the
  // plugin is loaded rather than at the first chunk.
  if (fz::filter::hdf5_api_for(__builtin_return_address(0)) == nullptr) {
    std::fprintf(stderr,
                 "H5Z-FZ: no HDF5 library (1.8.15 or later) found in this process; the filter is not registered\n");
    return nullptr;
  }
  return &fz::filter::kFilterClass;
}
