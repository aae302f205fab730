// h5fz repack IN OUT: a copy of an HDF5 or netCDF-4 file whose numeric
// datasets are compressed with the H5Z-FZ filter. The structure (groups,
// attributes, links, dimension scales, every other dataset) is copied as it
// is (repack_copy.cpp). The numeric datasets are created with the filter, so
// HDF5's set_local writes the same stored cd_values h5repack's would, but
// their chunks never pass through HDF5's one-chunk-at-a-time filter call:
// they are read a batch at a time, compressed together through the engine's
// batch API (several chunks in flight on the GPU, all cores otherwise) into
// the frames the filter would write, and stored with H5Dwrite_chunk. Reading
// the next batch and writing the last one overlap the compression.
#include <fnmatch.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cd_values.hpp"
#include "cli.hpp"
#include "environment.hpp"
#include "filter_params.hpp"
#include "hdf5_handle.hpp"
#include "plugin_lookup.hpp"
#include "quality.hpp"
#include "repack_cache.hpp"
#include "repack_copy.hpp"
#include "repack_help.hpp"
#include "repack_output.hpp"
#include "repack_progress.hpp"

namespace h5fz {

namespace {

enum class ChunkChoice { kKeep, kAuto, kShape };

struct Settings {
  fz::Options options;  // preset, mode, bound, tuning, policy
  bool noa_global = false;
  std::vector<std::string> patterns;
  ChunkChoice chunks = ChunkChoice::kKeep;
  std::vector<uint64_t> chunk_shape;
  bool verify = false;
  bool measure_errors = false;
  bool quiet = false;
  bool progress = false;
  size_t batch_bytes = size_t{128} << 20;
};

bool matches(const std::vector<std::string>& patterns, const std::string& path) {
  if (patterns.empty()) return true;
  const std::string last = path.substr(path.rfind('/') + 1);
  for (const std::string& pattern : patterns) {
    const bool whole = pattern.find('/') != std::string::npos;
    if (fnmatch(pattern.c_str(), whole ? path.c_str() : last.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// ---- Datasets -------------------------------------------------------------------

struct DatasetReport {
  std::string path;
  std::string shape, chunks;
  std::string stored_as;  // "fzgpu noa 1e-3", "lossless (dimension scale)", "copied (string)"
  bool compressed = false;
  bool lossy = false;  // a lossy preset on floats (else every element is kept exactly)
  uint64_t raw_bytes = 0, stored_bytes = 0;
  bool errors_measured = false;
  double max_abs_error = 0;
  double abs_bound = -1;  // the absolute bound every chunk holds (abs, noa-global), -1 when per chunk
  uint64_t violations = 0, mismatches = 0;  // elements outside the bound; NaN/Inf/exact elements changed
  bool verified = false;
  uint64_t verify_violations = 0;
};

std::optional<fz::DataType> numeric_type(hid_t type) {
  const H5T_class_t type_class = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > 8) return std::nullopt;
  fz::DataType dtype;
  dtype.size = static_cast<uint32_t>(size);
  dtype.order = H5Tget_order(type) == H5T_ORDER_BE ? fz::ByteOrder::Big : fz::ByteOrder::Little;
  if (type_class == H5T_INTEGER) {
    dtype.element_class = H5Tget_sign(type) == H5T_SGN_NONE ? fz::ElementClass::Unsigned : fz::ElementClass::Signed;
    return dtype;
  }
  if (type_class == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) {
    dtype.element_class = fz::ElementClass::Float;
    return dtype;
  }
  return std::nullopt;
}

std::vector<hsize_t> extent_of(hid_t space, std::vector<hsize_t>* max_dims = nullptr) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), maxima(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), maxima.data());
  if (max_dims) *max_dims = maxima;
  return dims;
}

std::string dims_text(const std::vector<hsize_t>& dims) {
  return shape_text(std::vector<uint64_t>(dims.begin(), dims.end()));
}

// Why a dataset is copied instead of compressed, or "" when it is compressed.
std::string copy_reason(hid_t dataset, const std::string& path, const Settings& settings) {
  if (!matches(settings.patterns, path)) return "not selected";
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  if (!numeric_type(type.get())) {
    switch (H5Tget_class(type.get())) {
      case H5T_STRING: return "string";
      case H5T_COMPOUND: return "compound";
      case H5T_ENUM: return "enum";
      case H5T_REFERENCE: return "references";
      case H5T_VLEN: return "variable length";
      default: return "not numeric";
    }
  }
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE) return "scalar";
  if (H5Sget_simple_extent_npoints(space.get()) <= 0) return "empty";
  if (H5Pget_external_count(dcpl.get()) > 0) return "external storage";
  // A virtual dataset maps other datasets; copied, it stays a mapping.
  if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL) return "virtual";
  return "";
}

// A dimension scale (a coordinate variable) carries CLASS = "DIMENSION_SCALE".
bool is_dimension_scale(hid_t dataset) {
  if (H5Aexists(dataset, "CLASS") <= 0) return false;
  Handle attribute(H5Aopen(dataset, "CLASS", H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(attribute.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) return false;
  std::string text(H5Tget_size(type.get()), '\0');
  if (H5Aread(attribute.get(), type.get(), text.data()) < 0) return false;
  return text.compare(0, 15, "DIMENSION_SCALE") == 0;
}

// A float variable's netCDF _FillValue (else missing_value): one element of
// its own type, as a double. NaN needs no declaring (NaN is always kept).
// HDF5's fill value is special to the filter anyway (netCDF-4 makes it the
// _FillValue), so where _FillValue is that value and missing_value another,
// missing_value takes the filter's second slot.
std::optional<double> netcdf_missing_value(hid_t dataset, const fz::DataType& dtype) {
  if (dtype.element_class != fz::ElementClass::Float || (dtype.size != 4 && dtype.size != 8)) return std::nullopt;
  std::optional<double> hdf5_fill;
  {
    Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
    H5D_fill_value_t status;
    double fill = 0;
    if (H5Pfill_value_defined(dcpl.get(), &status) >= 0 && status == H5D_FILL_VALUE_USER_DEFINED &&
        H5Pget_fill_value(dcpl.get(), H5T_NATIVE_DOUBLE, &fill) >= 0)
      hdf5_fill = fill;
    H5Eclear2(H5E_DEFAULT);
  }
  std::optional<double> first;
  for (const char* name : {"_FillValue", "missing_value"}) {
    if (H5Aexists(dataset, name) <= 0) continue;
    Handle attribute(H5Aopen(dataset, name, H5P_DEFAULT), H5Aclose);
    Handle type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT || H5Sget_simple_extent_npoints(space.get()) < 1) continue;
    std::vector<double> values(static_cast<size_t>(H5Sget_simple_extent_npoints(space.get())));
    if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, values.data()) < 0) continue;
    double value = values.front();
    if (dtype.size == 4) value = static_cast<double>(static_cast<float>(value));  // the variable's own float32
    if (std::isnan(value)) continue;
    if (!hdf5_fill || value != *hdf5_fill) return value;
    if (!first) first = value;
  }
  return first;
}

// The chunk shape of the output dataset.
std::vector<hsize_t> output_chunks(hid_t in_dcpl, const std::vector<hsize_t>& dims,
                                   const std::vector<hsize_t>& max_dims, size_t element_bytes,
                                   const Settings& settings) {
  const size_t rank = dims.size();
  std::vector<hsize_t> chunks;
  if (settings.chunks == ChunkChoice::kShape && settings.chunk_shape.size() == rank) {
    chunks.assign(settings.chunk_shape.begin(), settings.chunk_shape.end());
  } else if (settings.chunks != ChunkChoice::kAuto && H5Pget_layout(in_dcpl) == H5D_CHUNKED) {
    chunks.resize(rank);
    H5Pget_chunk(in_dcpl, static_cast<int>(rank), chunks.data());
  } else {
    std::vector<uint64_t> extent(dims.begin(), dims.end());
    const std::vector<uint64_t> advice = fz::suggest_chunk_shape(extent, element_bytes);
    chunks.assign(advice.begin(), advice.end());
  }
  for (size_t i = 0; i < rank; ++i) {
    if (chunks[i] == 0) chunks[i] = 1;
    if (max_dims[i] != H5S_UNLIMITED && chunks[i] > max_dims[i]) chunks[i] = std::max<hsize_t>(max_dims[i], 1);
  }
  return chunks;
}

// ---- Chunks -----------------------------------------------------------------------

struct ChunkJob {
  std::vector<hsize_t> offset;
  fz::Bytes data;   // the chunk as the filter sees it: edge chunks padded with HDF5's fill value
  fz::Bytes frame;
};

// Visits the chunk grid of `dims` / `chunks` in row-major order.
class ChunkGrid {
 public:
  ChunkGrid(std::vector<hsize_t> dims, std::vector<hsize_t> chunks) : dims_(std::move(dims)), chunks_(std::move(chunks)) {
    count_ = 1;
    for (size_t i = 0; i < dims_.size(); ++i) count_ *= (dims_[i] + chunks_[i] - 1) / chunks_[i];
  }
  uint64_t count() const { return count_; }
  std::vector<hsize_t> offset(uint64_t index) const {
    std::vector<hsize_t> offset(dims_.size());
    for (size_t i = dims_.size(); i-- > 0;) {
      const hsize_t per_axis = (dims_[i] + chunks_[i] - 1) / chunks_[i];
      offset[i] = (index % per_axis) * chunks_[i];
      index /= per_axis;
    }
    return offset;
  }

 private:
  std::vector<hsize_t> dims_, chunks_;
  uint64_t count_ = 0;
};

// What a dataset's chunks are read, compressed and checked with.
struct ChunkPlan {
  hid_t type = -1;  // the file type: chunks are read without conversion, as the filter sees them
  fz::DataType dtype;
  std::vector<hsize_t> dims, chunks;
  size_t chunk_bytes = 0;
  fz::Bytes fill_element;  // HDF5's fill value, which pads edge chunks
};

// Reads the chunk at `offset` of `dataset` into `buffer` (chunk_bytes):
// the part inside the extent, the rest HDF5's fill value as HDF5 pads it.
void read_chunk(hid_t dataset, const ChunkPlan& plan, const std::vector<hsize_t>& offset, fz::Bytes& buffer,
                const std::string& path) {
  const size_t rank = plan.dims.size();
  buffer.resize(plan.chunk_bytes);
  std::vector<hsize_t> count(rank);
  bool edge = false;
  for (size_t i = 0; i < rank; ++i) {
    count[i] = std::min(plan.chunks[i], plan.dims[i] - offset[i]);
    edge |= count[i] != plan.chunks[i];
  }
  Handle file_space(H5Dget_space(dataset), H5Sclose);
  Handle memory_space(H5Screate_simple(static_cast<int>(rank), plan.chunks.data(), nullptr), H5Sclose);
  require_hdf5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset.data(), nullptr, count.data(), nullptr),
               "cannot select a chunk of " + path);
  if (edge) {
    const size_t element = plan.fill_element.size();
    for (size_t at = 0; at + element <= buffer.size(); at += element)
      std::memcpy(buffer.data() + at, plan.fill_element.data(), element);
    const std::vector<hsize_t> origin(rank, 0);
    require_hdf5(H5Sselect_hyperslab(memory_space.get(), H5S_SELECT_SET, origin.data(), nullptr, count.data(), nullptr),
                 "cannot select a chunk of " + path);
  }
  if (H5Dread(dataset, plan.type, memory_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()) < 0) {
    // Name the input's filters HDF5 cannot find (an SZ3 or Blosc input without
    // hdf5plugin's folder), by id and with where they come from.
    Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
    const std::string missing = dcpl.get() >= 0 ? missing_filters(dcpl.get()) : std::string();
    require_hdf5(-1, "cannot read " + path + (missing.empty() ? std::string() : ": " + missing));
  }
}

// What the filter compresses a dataset's chunks with, and how they lie, from
// the dataset as HDF5 created it (set_local's stored parameters): the
// options (fill value included), the element type, the chunk shape and
// HDF5's fill value, which pads edge chunks. `file_type` stays the caller's.
struct WrittenAs {
  fz::Options options;
  ChunkPlan plan;
};
WrittenAs written_as(hid_t dataset, hid_t file_type, const std::string& path) {
  Handle dcpl(H5Dget_create_plist(dataset), H5Pclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  std::vector<unsigned> stored(fz::filter::kMaxStoredValues);
  size_t stored_count = stored.size();
  unsigned flags = 0;
  require_hdf5(H5Pget_filter_by_id2(dcpl.get(), kFzFilterId, &flags, &stored_count, stored.data(), 0, nullptr, nullptr),
               path + ": cannot read the H5Z-FZ filter's parameters");
  const fz::filter::StoredParams params = fz::filter::decode_stored(stored.data(), stored_count);
  WrittenAs written;
  written.options = fz::filter::dataset_options(params);  // HDF5's fill value and the missing value
  ChunkPlan& plan = written.plan;
  plan.type = file_type;
  plan.dtype = params.dataset.dtype;
  plan.dims = extent_of(space.get());
  plan.chunks.assign(params.dataset.chunk_dims.begin(), params.dataset.chunk_dims.end());
  plan.chunk_bytes = plan.dtype.size;
  for (hsize_t c : plan.chunks) plan.chunk_bytes *= static_cast<size_t>(c);
  plan.fill_element.assign(plan.dtype.size, 0);
  H5Pget_fill_value(dcpl.get(), file_type, plan.fill_element.data());
  H5Eclear2(H5E_DEFAULT);
  return written;
}

template <typename Body>
void parallel_for(size_t count, Body body) {
  const size_t workers = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) body(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

void account(DatasetReport& report, const ChunkCheck& check) {
  report.max_abs_error = std::max(report.max_abs_error, check.max_abs_error);
  report.violations += check.violations;
  report.mismatches += check.mismatches;
}

// ---- The run ------------------------------------------------------------------------

class Repack {
 public:
  Repack(const Settings& settings, hid_t in_file, hid_t out_file, std::string out_path)
      : settings_(settings), in_file_(in_file), out_file_(out_file), out_path_(std::move(out_path)),
        copy_(in_file, out_file, out_path_,
              [this](hid_t in_group, hid_t parent, const std::string& name, const std::string& path) {
                return create_dataset(in_group, parent, name, path);
              }) {}

  uint64_t bytes_to_compress();
  void run(Progress& progress) {
    progress_ = &progress;
    copy_.copy_all();
    copy_.link_references();
  }
  void verify(hid_t written_file, Progress& progress);
  const std::vector<DatasetReport>& reports() const { return reports_; }
  std::vector<std::string> warnings() const {
    std::vector<std::string> all = notes_;
    all.insert(all.end(), copy_.warnings().begin(), copy_.warnings().end());
    return all;
  }

 private:
  bool create_dataset(hid_t in_group, hid_t parent, const std::string& name, const std::string& path);
  struct GlobalBound {
    std::optional<double> bound;  // empty: none holds in every chunk, for `why`
    std::string why;
  };
  GlobalBound global_abs_bound(hid_t in, const ChunkPlan& plan, const std::vector<fz::Bytes>& exclude, double noa,
                               const std::string& path);
  void write_chunks(hid_t in, hid_t out, const ChunkPlan& plan, const fz::Options& options, DatasetReport& report);

  const Settings& settings_;
  hid_t in_file_, out_file_;
  std::string out_path_;  // the partial file, for the free-space checks
  StructureCopy copy_;
  Progress* progress_ = nullptr;
  std::vector<DatasetReport> reports_;
  std::vector<std::string> notes_;  // datasets that could not take the mode asked for
};

// H5Ovisit's callback signature changed twice (1.10.3 fields argument, 1.12
// H5O_info2_t); only the object type is needed.
template <typename Info>
herr_t sum_dataset_bytes(hid_t file, const char* name, const Info* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* state = static_cast<std::pair<const Settings*, uint64_t>*>(data);
  Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) return 0;
  const std::string path = std::string("/") + name;
  if (!copy_reason(dataset.get(), path, *state->first).empty()) return 0;
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  state->second += static_cast<uint64_t>(H5Sget_simple_extent_npoints(space.get())) * H5Tget_size(type.get());
  return 0;
}

uint64_t Repack::bytes_to_compress() {
  std::pair<const Settings*, uint64_t> state{&settings_, 0};
#if H5_VERSION_GE(1, 12, 0)
  H5Ovisit3(in_file_, H5_INDEX_NAME, H5_ITER_INC, sum_dataset_bytes<H5O_info2_t>, &state, H5O_INFO_BASIC);
#elif H5_VERSION_GE(1, 10, 3)
  H5Ovisit2(in_file_, H5_INDEX_NAME, H5_ITER_INC, sum_dataset_bytes<H5O_info_t>, &state, H5O_INFO_BASIC);
#else
  H5Ovisit(in_file_, H5_INDEX_NAME, H5_ITER_INC, sum_dataset_bytes<H5O_info_t>, &state);
#endif
  H5Eclear2(H5E_DEFAULT);
  return state.second;
}

bool Repack::create_dataset(hid_t in_group, hid_t parent, const std::string& name, const std::string& path) {
  Handle opened(H5Dopen2(in_group, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!opened.ok()) throw ToolError("cannot open " + path + ": " + hdf5_error_text("unreadable dataset"));
  hid_t in = opened.get();
  DatasetReport report;
  report.path = path;
  Handle type(H5Dget_type(in), H5Tclose);
  Handle space(H5Dget_space(in), H5Sclose);
  Handle in_dcpl(H5Dget_create_plist(in), H5Pclose);
  std::vector<hsize_t> max_dims;
  const std::vector<hsize_t> dims = extent_of(space.get(), &max_dims);
  report.shape = dims.empty() ? "scalar" : dims_text(dims);
  report.raw_bytes = static_cast<uint64_t>(std::max<hssize_t>(H5Sget_simple_extent_npoints(space.get()), 0)) *
                     H5Tget_size(type.get());
  const std::string reason = copy_reason(in, path, settings_);
  if (!reason.empty()) {
    report.stored_as = "copied (" + reason + ")";
    report.stored_bytes = H5Dget_storage_size(in);
    reports_.push_back(report);
    return false;
  }
  const fz::DataType dtype = *numeric_type(type.get());
  ChunkPlan plan;
  plan.dtype = dtype;
  plan.dims = dims;
  plan.chunks = output_chunks(in_dcpl.get(), dims, max_dims, dtype.size, settings_);
  plan.chunk_bytes = dtype.size;
  for (hsize_t c : plan.chunks) plan.chunk_bytes *= static_cast<size_t>(c);
  if (plan.chunk_bytes > 0xFFFFFFFFull) {
    throw ToolError(path + ": chunks of " + dims_text(plan.chunks) + " are over HDF5's 4 GiB limit; give --chunks auto");
  }
  report.chunks = dims_text(plan.chunks);

  // The user's choice for this dataset: coordinates (dimension scales) and
  // integers are kept exactly.
  fz::Options choice = settings_.options;
  const bool scale = is_dimension_scale(in);
  if (scale && fz::preset_is_lossy(choice.preset)) choice.preset = fz::Preset::Lossless;
  const bool lossy = fz::preset_is_lossy(choice.preset) && dtype.element_class == fz::ElementClass::Float;
  report.lossy = lossy;
  std::optional<double> missing = lossy ? netcdf_missing_value(in, dtype) : std::nullopt;
  bool noa_global = lossy && settings_.noa_global;
  if (noa_global) {
    // The values the filter keeps exactly stay out of the range, as it
    // leaves them out: the missing value and HDF5's user-defined fill value
    // (both: a netCDF missing_value beside the default fill 9.97e36).
    std::vector<fz::Bytes> exclude;
    if (missing) {
      fz::Bytes element(dtype.size);
      if (dtype.size == 4) {
        const float value = static_cast<float>(*missing);
        std::memcpy(element.data(), &value, 4);
      } else {
        std::memcpy(element.data(), &*missing, 8);
      }
      if (dtype.order == fz::ByteOrder::Big) std::reverse(element.begin(), element.end());
      exclude.push_back(element);
    }
    H5D_fill_value_t status;
    if (H5Pfill_value_defined(in_dcpl.get(), &status) >= 0 && status == H5D_FILL_VALUE_USER_DEFINED) {
      fz::Bytes fill(dtype.size);
      if (H5Pget_fill_value(in_dcpl.get(), type.get(), fill.data()) >= 0) exclude.push_back(fill);
    }
    H5Eclear2(H5E_DEFAULT);
    ChunkPlan range_plan = plan;
    range_plan.type = type.get();
    const GlobalBound global = global_abs_bound(in, range_plan, exclude, settings_.options.bound, path);
    if (global.bound) {
      choice.mode = fz::ErrorMode::Abs;
      choice.bound = *global.bound;
      report.abs_bound = choice.bound;
    } else {
      // No absolute bound means the same in every chunk (issue 28 item 13):
      // this dataset alone takes each chunk's own range (noa), said at the end.
      noa_global = false;
      notes_.push_back(path + ": --mode noa-global cannot hold here (" + global.why +
                       "): compressed with noa (bound x each chunk's own range) instead");
    }
  } else if (lossy && choice.mode == fz::ErrorMode::Abs) {
    report.abs_bound = choice.bound;
  }
  std::vector<unsigned> cd_values;
  if (fz::preset_is_lossy(choice.preset)) {
    cd_values = user_cd_values(choice, missing ? &*missing : nullptr, false);
  } else {
    cd_values = user_cd_values(choice);
  }
  report.stored_as = !lossy ? std::string("lossless") + (scale ? " (dimension scale)" : "")
                            : std::string(fz::preset_name(choice.preset)) + " " +
                                  (noa_global ? "noa-global" : fz::mode_name(choice.mode)) + " " +
                                  shortest_double(settings_.options.bound) +
                                  (noa_global ? " = abs " + short_number(choice.bound) : "") +
                                  (missing ? " (missing value)" : "");

  // The input's creation properties (fill value and time, attribute order)
  // with the new chunks and H5Z-FZ as the only filter. Space is allocated
  // as chunks are written: early allocation would run the filter on fill
  // chunks first.
  Handle dcpl(H5Pcopy(in_dcpl.get()), H5Pclose);
  H5Premove_filter(dcpl.get(), H5Z_FILTER_ALL);
  H5Eclear2(H5E_DEFAULT);
  require_hdf5(H5Pset_chunk(dcpl.get(), static_cast<int>(plan.chunks.size()), plan.chunks.data()),
               path + ": cannot set chunks " + report.chunks);
  H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_INCR);
  require_hdf5(H5Pset_filter(dcpl.get(), kFzFilterId, H5Z_FLAG_MANDATORY, cd_values.size(), cd_values.data()),
               path + ": cannot add the H5Z-FZ filter");
  // A committed datatype stays shared (h5dump -H names it); else a transient copy.
  Handle file_type(copy_.output_committed_type(type.get()), H5Tclose);
  if (!file_type.ok()) file_type = Handle(H5Tcopy(type.get()), H5Tclose);
  Handle out(H5Dcreate2(parent, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
             H5Dclose);
  if (!out.ok()) throw ToolError(path + ": the filter refused the dataset: " + hdf5_error_text("H5Dcreate failed"));
  copy_.copy_attributes(in, out.get(), path);

  // The options the filter itself would compress these chunks with.
  WrittenAs written = written_as(out.get(), file_type.get(), path);
  fz::filter::apply_policy(settings_.options, written.options);

  report.compressed = true;
  // Opened again with a chunk cache that holds the input chunks a batch
  // spans (the dataset must be closed for HDF5 to take new access properties).
  const size_t per_batch = std::max<size_t>(1, settings_.batch_bytes / written.plan.chunk_bytes);
  Handle dapl(chunk_cache_access(input_chunk_cache(in_dcpl.get(), dims, written.plan.chunks, dtype.size, per_batch,
                                                   settings_.batch_bytes)),
              H5Pclose);
  opened.reset();
  opened = Handle(H5Dopen2(in_group, name.c_str(), dapl.get()), H5Dclose);
  if (!opened.ok()) throw ToolError("cannot reopen " + path + ": " + hdf5_error_text("unreadable dataset"));
  write_chunks(opened.get(), out.get(), written.plan, written.options, report);
  reports_.push_back(report);
  return true;
}

Repack::GlobalBound Repack::global_abs_bound(hid_t in, const ChunkPlan& plan, const std::vector<fz::Bytes>& exclude,
                                             double noa, const std::string& path) {
  const ChunkGrid grid(plan.dims, plan.chunks);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  fz::Bytes chunk;
  // Padding takes all ones (a NaN), so it never counts.
  ChunkPlan unpadded = plan;
  unpadded.fill_element = fz::Bytes(plan.dtype.size, 0xFF);
  const bool big = plan.dtype.order == fz::ByteOrder::Big;
  for (uint64_t index = 0; index < grid.count(); ++index) {
    check_interrupted();
    read_chunk(in, unpadded, grid.offset(index), chunk, path);
    const size_t size = plan.dtype.size;
    for (size_t at = 0; at + size <= chunk.size(); at += size) {
      unsigned char element[8];
      for (size_t k = 0; k < size; ++k) element[k] = chunk[at + (big ? size - 1 - k : k)];
      if (std::any_of(exclude.begin(), exclude.end(),
                      [&](const fz::Bytes& e) { return std::memcmp(chunk.data() + at, e.data(), size) == 0; }))
        continue;
      double value;
      if (size == 4) {
        float f;
        std::memcpy(&f, element, 4);
        value = f;
      } else if (size == 8) {
        std::memcpy(&value, element, 8);
      } else {
        continue;  // float16: its range is not needed, noa-global binds float32/float64
      }
      if (!std::isfinite(value)) continue;
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
    progress_->advance(0, path + " (range)");
  }
  GlobalBound global;
  if (!(hi > lo)) {  // one value (or none): every value comes back exactly
    global.bound = plan.dtype.size == 4 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
    return global;
  }
  // Near the type's limits the product leaves what the filter accepts: a
  // range of +-1.5e308 is inf, one of denormals gives a bound of 0.
  const double bound = noa * (hi - lo);
  if (!std::isfinite(bound)) {
    global.why = "the value range " + short_number(lo) + " .. " + short_number(hi) + " overflows a double";
  } else if (!(bound > 0)) {
    global.why = "the value range " + short_number(lo) + " .. " + short_number(hi) + " times " + short_number(noa) +
                 " is 0 in floating point";
  } else {
    global.bound = bound;
  }
  return global;
}

void Repack::write_chunks(hid_t in, hid_t out, const ChunkPlan& plan, const fz::Options& options,
                          DatasetReport& report) {
  const ChunkGrid grid(plan.dims, plan.chunks);
  const size_t per_batch = std::max<size_t>(1, settings_.batch_bytes / plan.chunk_bytes);
  const std::vector<uint64_t> chunk_dims(plan.chunks.begin(), plan.chunks.end());
  // Bytes of the dataset inside its extent, per chunk, for the progress line.
  auto inside_bytes = [&](const std::vector<hsize_t>& offset) {
    uint64_t bytes = plan.dtype.size;
    for (size_t i = 0; i < offset.size(); ++i) bytes *= std::min(plan.chunks[i], plan.dims[i] - offset[i]);
    return bytes;
  };

  auto read_batch = [&](uint64_t first) {
    std::vector<ChunkJob> batch;
    for (uint64_t index = first; index < std::min<uint64_t>(grid.count(), first + per_batch); ++index) {
      check_interrupted();
      ChunkJob job;
      job.offset = grid.offset(index);
      read_chunk(in, plan, job.offset, job.data, report.path);
      batch.push_back(std::move(job));
    }
    return batch;
  };
  // Compression, and the errors measured on a decode in memory: no HDF5 here,
  // so it runs beside the HDF5 reads and writes of the main thread.
  struct Measured {
    double max_abs_error = 0;
    uint64_t violations = 0, mismatches = 0;
  };
  auto compress = [&](std::vector<ChunkJob>* batch) {
    std::vector<fz::ChunkView> views;
    for (const ChunkJob& job : *batch) views.push_back({job.data.data(), job.data.size(), chunk_dims});
    std::vector<fz::Bytes> frames = fz::compress_batch(views, plan.dtype, options);
    for (size_t i = 0; i < batch->size(); ++i) (*batch)[i].frame = std::move(frames[i]);
    if (!settings_.measure_errors) return;
    std::vector<fz::Bytes> decoded(batch->size(), fz::Bytes(plan.chunk_bytes));
    std::vector<fz::FrameView> frame_views;
    for (size_t i = 0; i < batch->size(); ++i) {
      frame_views.push_back({(*batch)[i].frame.data(), (*batch)[i].frame.size(), decoded[i].data(), plan.chunk_bytes});
    }
    fz::Options policy;
    fz::filter::apply_policy(options, policy);
    fz::decompress_batch(frame_views, policy);
    std::vector<ChunkCheck> checks(batch->size());
    parallel_for(batch->size(), [&](size_t i) { checks[i] = check_chunk((*batch)[i].data, decoded[i], plan.dtype, options); });
    for (const ChunkCheck& check : checks) account(report, check);
    report.errors_measured = true;
  };
  auto write_batch = [&](std::vector<ChunkJob>& batch) {
    // A full disk is found here, before HDF5 meets it halfway through a
    // chunk (its error path has crashed there).
    uint64_t frame_bytes = 0;
    for (const ChunkJob& job : batch) frame_bytes += job.frame.size();
    if (frame_bytes) require_free_space(out_path_, frame_bytes, report.path);
    for (ChunkJob& job : batch) {
      require_hdf5(H5Dwrite_chunk(out, H5P_DEFAULT, 0, job.offset.data(), job.frame.size(), job.frame.data()),
                   report.path + ": cannot write a chunk");
      report.stored_bytes += job.frame.size();
      progress_->advance(inside_bytes(job.offset), report.path);
    }
    batch.clear();
  };

  std::vector<ChunkJob> next = read_batch(0), working, done;
  for (uint64_t first = 0; first < grid.count(); first += per_batch) {
    working = std::move(next);
    std::future<void> compressing = std::async(std::launch::async, compress, &working);
    try {
      write_batch(done);
      next = first + per_batch < grid.count() ? read_batch(first + per_batch) : std::vector<ChunkJob>{};
    } catch (...) {
      compressing.wait();
      throw;
    }
    compressing.get();
    done = std::move(working);
  }
  write_batch(done);
}

void Repack::verify(hid_t written_file, Progress& progress) {
  for (DatasetReport& report : reports_) {
    if (!report.compressed) continue;
    Handle in(H5Dopen2(in_file_, report.path.c_str(), H5P_DEFAULT), H5Dclose);
    Handle out(H5Dopen2(written_file, report.path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!in.ok() || !out.ok()) throw ToolError("--verify: cannot open " + report.path + ": " + hdf5_error_text("?"));
    Handle type(H5Dget_type(out.get()), H5Tclose);
    const WrittenAs written = written_as(out.get(), type.get(), "--verify: " + report.path);
    const fz::Options& options = written.options;
    const ChunkPlan& plan = written.plan;
    {  // IN is read as OUT's chunks: with the cache write_chunks has
      Handle in_dcpl(H5Dget_create_plist(in.get()), H5Pclose);
      Handle dapl(chunk_cache_access(input_chunk_cache(in_dcpl.get(), plan.dims, plan.chunks, plan.dtype.size, 1,
                                                       settings_.batch_bytes)),
                  H5Pclose);
      in.reset();  // closed first: HDF5 takes new access properties only on a first open
      in = Handle(H5Dopen2(in_file_, report.path.c_str(), dapl.get()), H5Dclose);
      if (!in.ok()) throw ToolError("--verify: cannot open " + report.path + ": " + hdf5_error_text("?"));
    }
    const ChunkGrid grid(plan.dims, plan.chunks);
    fz::Bytes original, decoded;
    DatasetReport check;
    for (uint64_t index = 0; index < grid.count(); ++index) {
      check_interrupted();
      const std::vector<hsize_t> offset = grid.offset(index);
      read_chunk(in.get(), plan, offset, original, report.path);
      read_chunk(out.get(), plan, offset, decoded, report.path);  // through the filter
      // The filter's own rule for this chunk (quality.hpp): the chunk as the
      // filter saw it, padded with HDF5's fill value, which the rule leaves out.
      account(check, check_chunk(original, decoded, plan.dtype, options));
      progress.advance(original.size(), report.path + " (verify)");
    }
    report.verified = true;
    report.verify_violations = check.violations + check.mismatches;
    report.max_abs_error = std::max(report.max_abs_error, check.max_abs_error);
    report.errors_measured = true;
  }
}

void print_table(const std::vector<DatasetReport>& reports, bool verified) {
  bool bounded_only = false;
  size_t width = 7;
  for (const DatasetReport& r : reports) width = std::max(width, r.path.size());
  std::printf("%-*s  %-15s  %-15s  %-36s  %10s  %8s  %11s%s\n", static_cast<int>(width), "dataset", "shape", "chunks",
              "stored as", "MiB", "ratio", "max error", verified ? "  verify" : "");
  for (const DatasetReport& r : reports) {
    char ratio[32] = "-", error[32] = "-";
    if (r.compressed && r.stored_bytes) std::snprintf(ratio, sizeof ratio, "%.2f", double(r.raw_bytes) / r.stored_bytes);
    if (r.compressed && r.errors_measured) {
      std::snprintf(error, sizeof error, "%.4g", r.max_abs_error);
    } else if (r.compressed && !r.lossy) {
      std::snprintf(error, sizeof error, "exact");
    } else if (r.compressed && r.abs_bound >= 0) {
      std::snprintf(error, sizeof error, "<= %.3g", r.abs_bound);
    }
    std::string verify_text;
    if (verified) {
      verify_text = !r.compressed ? "  -" : r.verify_violations ? "  FAILED (" + std::to_string(r.verify_violations) + ")"
                                                                : "  ok";
    }
    bounded_only |= r.compressed && r.lossy && !r.errors_measured;
    std::printf("%-*s  %-15s  %-15s  %-36s  %10.1f  %8s  %11s%s\n", static_cast<int>(width), r.path.c_str(),
                r.shape.c_str(), r.chunks.empty() ? "-" : r.chunks.c_str(), r.stored_as.c_str(),
                r.raw_bytes / 1048576.0, ratio, error, verify_text.c_str());
  }
  if (bounded_only) {
    std::printf("(max error: \"<= B\" is the absolute bound every chunk holds, \"-\" a bound per chunk (noa);\n"
                " --errors or --verify measure the errors)\n");
  }
}

// What failed, by dataset: the elements outside the bound the filter
// guarantees (or changed where they must come back exactly) and the largest
// error, so that the message stands alone.
std::string failure_summary(const std::vector<DatasetReport>& reports, bool verified, bool quiet) {
  std::string text = verified ? "--verify failed" : "the error check failed";
  uint64_t total = 0;
  std::string which;
  for (const DatasetReport& r : reports) {
    const uint64_t failed = r.violations + r.mismatches + r.verify_violations;
    if (failed == 0) continue;
    total += failed;
    which += (which.empty() ? ": " : ", ") + r.path + " " + std::to_string(failed) + " element(s)";
    if (r.errors_measured) which += " (max error " + short_number(r.max_abs_error) + ")";
  }
  text += which + " outside the bound the filter guarantees, or changed where they must be exact";
  if (!quiet) text += " (" + std::to_string(total) + " in all; see the table)";
  return text;
}

uint64_t count_failed(const std::vector<DatasetReport>& reports) {
  uint64_t failed = 0;
  for (const DatasetReport& r : reports) failed += r.violations + r.mismatches + r.verify_violations;
  return failed;
}

Settings parse_settings(const ParsedArgs& parsed) {
  Settings settings;
  fz::Options& options = settings.options;
  options.preset = parse_preset(parsed.get("--preset", "lossless"));
  const std::string mode = parsed.get("--mode", "abs");
  if (mode == "noa-global") {
    settings.noa_global = true;
    options.mode = fz::ErrorMode::Noa;
  } else {
    options.mode = parse_mode(mode);
  }
  if (parsed.has("--bound")) options.bound = parse_positive_double("--bound", parsed.get("--bound"));
  if (fz::preset_is_lossy(options.preset) && !parsed.has("--bound")) {
    throw UsageError(std::string("preset ") + fz::preset_name(options.preset) + " needs --bound");
  }
  apply_spline_tuning(parsed, options);
  // Checks preset, mode and bound as the filter will (float32 stands for any float).
  if (fz::preset_is_lossy(options.preset)) {
    fz::Options check = options;
    if (settings.noa_global) check.mode = fz::ErrorMode::Abs;
    try {
      fz::validate(check, fz::DataType::of<float>());
    } catch (const fz::Error& e) {
      throw UsageError(e.what());
    }
  }
  fz::filter::apply_policy(fz::filter::policy_from_environment(), options);
  if (parsed.has("--device")) options.device = parsed.get("--device");
  if (parsed.has("--threads")) options.threads = parse_unsigned("--threads", parsed.get("--threads"));
  settings.patterns = split_commas(parsed.get("--datasets"));
  const std::string chunks = parsed.get("--chunks", "keep");
  if (chunks == "keep") {
    settings.chunks = ChunkChoice::kKeep;
  } else if (chunks == "auto") {
    settings.chunks = ChunkChoice::kAuto;
  } else {
    settings.chunks = ChunkChoice::kShape;
    settings.chunk_shape = parse_shape(chunks);
    for (uint64_t c : settings.chunk_shape) {
      if (c == 0) throw UsageError("--chunks: extents must be at least 1");
    }
  }
  if (parsed.has("--batch-mib")) {
    const unsigned mib = parse_unsigned("--batch-mib", parsed.get("--batch-mib"));
    if (mib == 0) throw UsageError("--batch-mib must be at least 1");
    settings.batch_bytes = size_t{mib} << 20;
  }
  settings.verify = parsed.has("--verify");
  if (parsed.has("--errors") && parsed.has("--no-errors")) throw UsageError("--errors and --no-errors contradict");
  // By default only where a decode costs little: chunks compressed on a GPU.
  const bool on_gpu = fz::device_api_available() && options.device != "cpu";
  settings.measure_errors = parsed.has("--errors") || (!parsed.has("--no-errors") && on_gpu);
  settings.quiet = parsed.has("--quiet");
  settings.progress = !settings.quiet && (parsed.has("--progress") || isatty(STDERR_FILENO));
  return settings;
}

}  // namespace

int run_repack(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(repack_help_text().c_str(), stdout);
    return 0;
  }
  const ParsedArgs parsed = parse_args(
      args, {"--preset", "--mode", "--bound", "--tuning", "--alpha", "--beta", "--datasets", "--chunks", "--device",
             "--threads", "--batch-mib"},
      {"--verify", "--errors", "--no-errors", "--progress", "--quiet"});
  if (parsed.positional.size() != 2) throw UsageError("repack needs an input and an output file");
  const std::string in_path = parsed.positional[0], out_path = parsed.positional[1];
  const Settings settings = parse_settings(parsed);
  check_repack_target(in_path, out_path);  // before any work: not IN, not a directory, a writable folder

  // After a failed write (a full disk, a file size limit) HDF5 cannot close
  // the output, and closing it again when the program exits crashed
  // (SIGSEGV in H5F__close_cb): every handle is closed here, on every path,
  // so HDF5's own close at exit is not needed. Before any other HDF5 call.
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  require_plugin();
  Handle in_file(H5Fopen(in_path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!in_file.ok()) throw ToolError("cannot open " + in_path + " as HDF5: " + hdf5_error_text("not an HDF5 file"));

  InterruptGuard guard;
  Stopwatch clock;
  std::vector<DatasetReport> reports;
  std::vector<std::string> warnings;
  double write_seconds = 0;
  PartialOutput partial(out_path);  // removed on every way out unless committed
  try {
    // The input's file creation properties keep the root group's link and
    // attribute order tracking (netCDF-4 relies on it) and its user block.
    // The root group's own creation order flags are not in the file's
    // creation properties HDF5 returns; they come from the group.
    Handle fcpl(H5Pcopy(Handle(H5Fget_create_plist(in_file.get()), H5Pclose).get()), H5Pclose);
    {
      Handle root(H5Gopen2(in_file.get(), "/", H5P_DEFAULT), H5Gclose);
      Handle gcpl(H5Gget_create_plist(root.get()), H5Pclose);
      unsigned order = 0;
      if (H5Pget_link_creation_order(gcpl.get(), &order) >= 0) H5Pset_link_creation_order(fcpl.get(), order);
      if (H5Pget_attr_creation_order(gcpl.get(), &order) >= 0) H5Pset_attr_creation_order(fcpl.get(), order);
      H5Eclear2(H5E_DEFAULT);
    }
    hsize_t user_block = 0;
    H5Pget_userblock(fcpl.get(), &user_block);
    // The partial file exists (created empty by this run): HDF5 truncates it.
    hid_t out_id = H5Fcreate(partial.path().c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT);
    if (out_id < 0) throw ToolError("cannot create " + partial.path() + ": " + hdf5_error_text("?"));
    Handle out_file(out_id, H5Fclose);
    Repack run(settings, in_file.get(), out_file.get(), partial.path());
    {
      Progress progress(settings.progress, run.bytes_to_compress());
      run.run(progress);
    }
    require_hdf5(H5Fflush(out_file.get(), H5F_SCOPE_GLOBAL), "cannot write " + partial.path());
    out_file.reset();
    // HDF5 sizes the user block but writes zeros: its bytes are IN's (as h5repack copies them).
    copy_user_block(in_path, partial.path(), user_block);
    write_seconds = clock.seconds();
    if (settings.verify) {
      Handle written(H5Fopen(partial.path().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
      if (!written.ok()) throw ToolError("--verify: cannot reopen " + partial.path() + ": " + hdf5_error_text("?"));
      uint64_t total = 0;
      for (const DatasetReport& r : run.reports()) total += r.compressed ? r.raw_bytes : 0;
      Progress progress(settings.progress, total);
      run.verify(written.get(), progress);
    }
    reports = run.reports();
    warnings = run.warnings();
    check_interrupted();
    // A failed check keeps an existing OUT as it was: only a good copy replaces it.
    if (count_failed(reports) == 0) partial.commit();
  } catch (const Interrupted&) {
    partial.remove();
    std::fprintf(stderr, "h5fz repack: interrupted (signal %d); removed the partial output, %s was not written\n",
                 static_cast<int>(g_interrupt_signal), out_path.c_str());
    return 130;
  }

  uint64_t raw = 0, stored = 0, failed = 0, compressed = 0;
  for (const DatasetReport& r : reports) {
    if (!r.compressed) continue;
    ++compressed;
    raw += r.raw_bytes;
    stored += r.stored_bytes;
  }
  failed = count_failed(reports);
  if (!settings.quiet) {
    print_table(reports, settings.verify);
    struct stat in_stat {}, out_stat {};
    stat(in_path.c_str(), &in_stat);
    stat(out_path.c_str(), &out_stat);
    std::printf("%llu of %zu datasets compressed: %s -> %s (ratio %.2f) in %.2f s, %.0f MB/s; file %s -> %s\n",
                static_cast<unsigned long long>(compressed), reports.size(), human_bytes(raw).c_str(),
                human_bytes(stored).c_str(), stored ? double(raw) / stored : 0.0, write_seconds,
                megabytes_per_second(raw, write_seconds), human_bytes(in_stat.st_size).c_str(),
                human_bytes(out_stat.st_size).c_str());
  }
  for (const std::string& w : warnings) std::fprintf(stderr, "h5fz repack: warning: %s\n", w.c_str());
  if (failed) {
    // Complete on its own: under --quiet there is no table to point at.
    std::fprintf(stderr, "h5fz repack: %s; %s was not written\n",
                 failure_summary(reports, settings.verify, settings.quiet).c_str(), out_path.c_str());
    return 1;
  }
  return 0;
}

}  // namespace h5fz
