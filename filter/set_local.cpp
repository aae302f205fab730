// can_apply and set_local: what the filter learns from HDF5 about a dataset,
// checked and written into its stored cd_values (docs/CD_VALUES.md).
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

#include "plugin_internal.hpp"

namespace fz::filter {

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

namespace {

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

}  // namespace

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
    // HDF5's fill value stays the stored fill value whatever missing value
    // cd_values[4..5] give: it pads edge chunks and never-written elements,
    // so both must come back exactly and stay out of NOA's range
    // (dataset_options gives the engine both).
    const Options options = dataset_options(params);
    if (has_missing_value(params.user) && options.missing_value.empty() && verbose()) {
      std::fprintf(stderr, "H5Z-FZ: missing value in cd_values[4..5] ignored for %s elements (not float32/float64)\n",
                   describe(params.dataset.dtype).c_str());
    }
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

}  // namespace fz::filter
