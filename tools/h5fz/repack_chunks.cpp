// Reading a dataset's chunks as the filter sees them, and the plan a dataset
// created with the filter is written with (repack_chunks.hpp).
#include "repack_chunks.hpp"

#include <algorithm>
#include <cstring>

#include "cd_values.hpp"
#include "filter_params.hpp"
#include "hdf5_handle.hpp"
#include "plugin_lookup.hpp"
#include "repack_copy.hpp"

namespace h5fz {

std::vector<hsize_t> extent_of(hid_t space, std::vector<hsize_t>* max_dims) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), maxima(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), maxima.data());
  if (max_dims) *max_dims = maxima;
  return dims;
}

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

}  // namespace h5fz
