// What `h5fz repack` makes of each dataset: copied unchanged (not selected,
// not numeric, scalar, empty, external, virtual) or compressed, and then with
// which chunks, preset, mode and bound (dimension scales and integers
// losslessly; a netCDF missing value kept exactly; noa-global turned into the
// abs bound that holds over the dataset's whole range, repack_noa_global.cpp).
// The compressed dataset is created with the filter, so HDF5's set_local
// stores its parameters, and its chunks are handed to the batch pipeline
// (repack_pipeline.cpp).
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "environment.hpp"
#include "filter_params.hpp"
#include "hdf5_handle.hpp"
#include "repack_cache.hpp"
#include "repack_run.hpp"

namespace h5fz {

namespace {

bool matches(const std::vector<std::string>& patterns, const std::string& path) {
  if (patterns.empty()) return true;
  const std::string last = path.substr(path.rfind('/') + 1);
  for (const std::string& pattern : patterns) {
    const bool whole = pattern.find('/') != std::string::npos;
    if (fnmatch(pattern.c_str(), whole ? path.c_str() : last.c_str(), 0) == 0) return true;
  }
  return false;
}

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

std::string dims_text(const std::vector<hsize_t>& dims) {
  return shape_text(std::vector<uint64_t>(dims.begin(), dims.end()));
}

// Why a dataset is copied instead of compressed, or "" when it is compressed.
std::string copy_reason(hid_t dataset, const std::string& path, const RepackSettings& settings) {
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
                                   const RepackSettings& settings) {
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

// H5Ovisit's callback signature changed twice (1.10.3 fields argument, 1.12
// H5O_info2_t); only the object type is needed.
template <typename Info>
herr_t sum_dataset_bytes(hid_t file, const char* name, const Info* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* state = static_cast<std::pair<const RepackSettings*, uint64_t>*>(data);
  Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) return 0;
  const std::string path = std::string("/") + name;
  if (!copy_reason(dataset.get(), path, *state->first).empty()) return 0;
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  state->second += static_cast<uint64_t>(H5Sget_simple_extent_npoints(space.get())) * H5Tget_size(type.get());
  return 0;
}

}  // namespace

uint64_t Repack::bytes_to_compress() {
  std::pair<const RepackSettings*, uint64_t> state{&settings_, 0};
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

}  // namespace h5fz
