// h5fz inspect on an HDF5 file: every dataset with its type, shape, chunking,
// filter pipeline (H5Z-FZ's cd_values in words) and stored ratio. Needs no
// plugin: filter parameters and raw chunks are read without running filters.
#include <hdf5.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.hpp"
#include "filter_params.hpp"
#include "hdf5_handle.hpp"

namespace h5fz {

namespace {

// H5Ovisit's callback signature changed twice (1.10.3 fields argument, 1.12
// H5O_info2_t); the visitor only needs the object type.
template <typename Info>
herr_t collect_dataset(hid_t, const char* name, const Info* info, void* paths) {
  if (info->type == H5O_TYPE_DATASET) {
    std::string path = std::string("/") + name;
    static_cast<std::vector<std::string>*>(paths)->push_back(path);
  }
  return 0;
}

std::vector<std::string> dataset_paths(hid_t file) {
  std::vector<std::string> paths;
  herr_t status;
#if H5_VERSION_GE(1, 12, 0)
  status = H5Ovisit3(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset<H5O_info2_t>, &paths, H5O_INFO_BASIC);
#elif H5_VERSION_GE(1, 10, 3)
  status = H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset<H5O_info_t>, &paths, H5O_INFO_BASIC);
#else
  status = H5Ovisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_dataset<H5O_info_t>, &paths);
#endif
  if (status < 0) throw ToolError("cannot walk the objects of the file");
  return paths;
}

std::string hdf5_type_text(hid_t type) {
  size_t size = H5Tget_size(type);
  const char* order = "";
  H5T_order_t byte_order = H5Tget_order(type);
  if (size > 1) order = byte_order == H5T_ORDER_BE ? " big-endian" : byte_order == H5T_ORDER_LE ? " little-endian" : "";
  std::string bits = std::to_string(size * 8);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits + order;
    case H5T_FLOAT: return "float" + bits + order;
    case H5T_STRING:
      return H5Tis_variable_str(type) > 0 ? "string (variable length)" : "string (" + std::to_string(size) + " bytes)";
    case H5T_COMPOUND: return "compound (" + std::to_string(size) + " bytes, " + std::to_string(H5Tget_nmembers(type)) + " members)";
    case H5T_ENUM: return "enum (" + std::to_string(size) + " bytes)";
    case H5T_ARRAY: return "array (" + std::to_string(size) + " bytes)";
    case H5T_OPAQUE: return "opaque (" + std::to_string(size) + " bytes)";
    case H5T_BITFIELD: return "bitfield (" + std::to_string(size) + " bytes)";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_TIME: return "time (" + std::to_string(size) + " bytes)";
    default: return "unknown class (" + std::to_string(size) + " bytes)";
  }
}

const char* known_filter_name(H5Z_filter_t id) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "deflate (gzip)";
    case H5Z_FILTER_SHUFFLE: return "shuffle";
    case H5Z_FILTER_FLETCHER32: return "fletcher32";
    case H5Z_FILTER_SZIP: return "szip";
    case H5Z_FILTER_NBIT: return "nbit";
    case H5Z_FILTER_SCALEOFFSET: return "scaleoffset";
    case 32001: return "blosc";
    case 32004: return "lz4";
    case 32008: return "bitshuffle";
    case 32013: return "zfp";
    case 32015: return "zstd";
    case 32017: return "sz";
    case 32024: return "sz3";
    case 32026: return "blosc2";
    case kFzFilterId: return "H5Z-FZ";
    default: return nullptr;
  }
}

struct FilterEntry {
  H5Z_filter_t id;
  unsigned flags;
  std::vector<unsigned> cd_values;
  std::string stored_name;
};

std::vector<FilterEntry> filter_pipeline(hid_t dcpl) {
  std::vector<FilterEntry> filters;
  int count = H5Pget_nfilters(dcpl);
  for (int i = 0; i < count; ++i) {
    FilterEntry entry;
    std::vector<unsigned> cd(64);
    size_t n = cd.size();
    char name[256] = {};
    unsigned config = 0;
    entry.id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &entry.flags, &n, cd.data(), sizeof name, name, &config);
    if (n > cd.size()) {  // n comes back as the true count: ask again with room for all
      cd.resize(n);
      entry.id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &entry.flags, &n, cd.data(), sizeof name, name, &config);
    }
    cd.resize(n);
    entry.cd_values = cd;
    entry.stored_name = name;
    filters.push_back(entry);
  }
  return filters;
}

std::string values_text(const std::vector<unsigned>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "}";
}

// The stored bytes of the first chunk, read past the filters, and its frame.
void inspect_first_chunk(hid_t dataset, hid_t space, int rank, const std::vector<FilterEntry>& filters) {
#if H5_VERSION_GE(1, 10, 5)
  // H5S_ALL is documented for these calls but mishandled by HDF5 1.10.x; the
  // dataset's own dataspace is the documented workaround.
  hsize_t chunk_count = 0;
  if (H5Dget_num_chunks(dataset, space, &chunk_count) < 0) {
    std::printf("  chunks      cannot count the chunks\n");
    return;
  }
  std::printf("  chunks      %llu stored\n", static_cast<unsigned long long>(chunk_count));
  if (chunk_count == 0) return;

  // An optional filter that fails makes HDF5 store the chunk without it and set
  // its bit in the chunk's filter mask: exactly what users must learn about.
  int fz_index = -1;
  for (size_t i = 0; i < filters.size(); ++i)
    if (filters[i].id == static_cast<H5Z_filter_t>(kFzFilterId)) fz_index = static_cast<int>(i);
  if (fz_index >= 0 && chunk_count <= 100000) {
    hsize_t skipped = 0;
    std::vector<hsize_t> offset(rank);
    for (hsize_t k = 0; k < chunk_count; ++k) {
      unsigned mask = 0;
      haddr_t address = 0;
      hsize_t size = 0;
      if (H5Dget_chunk_info(dataset, space, k, offset.data(), &mask, &address, &size) >= 0 &&
          (mask >> fz_index) & 1u)
        ++skipped;
    }
    std::printf("  H5Z-FZ      %s\n", skipped ? (std::to_string(skipped) + " chunk(s) stored WITHOUT H5Z-FZ (filter skipped)").c_str()
                                               : "applied to every chunk");
  }

  std::vector<hsize_t> offset(rank > 0 ? rank : 1);
  unsigned mask = 0;
  haddr_t address = 0;
  hsize_t stored_size = 0;
  if (H5Dget_chunk_info(dataset, space, 0, offset.data(), &mask, &address, &stored_size) < 0) {
    std::printf("  first chunk cannot be located\n");
    return;
  }
  std::string where;
  for (int d = 0; d < rank; ++d) where += (d ? "," : "") + std::to_string(offset[d]);
  std::vector<uint8_t> stored(stored_size);
  uint32_t read_mask = 0;
  if (H5Dread_chunk(dataset, H5P_DEFAULT, offset.data(), &read_mask, stored.data()) < 0) {
    std::printf("  first chunk at (%s): cannot read it\n", where.c_str());
    return;
  }
  std::printf("  first chunk at (%s): %llu stored bytes, filter mask 0x%x\n", where.c_str(),
              static_cast<unsigned long long>(stored_size), read_mask);
  if (stored.size() < 4 || std::memcmp(stored.data(), "FZM", 4) != 0) {
    std::printf("    not an FZM frame (H5Z-FZ absent, skipped, or followed by another filter)\n");
    return;
  }
  // fletcher32 after H5Z-FZ appends a 4-byte checksum to the frame.
  bool checksum_after = false;
  for (size_t i = fz_index >= 0 ? fz_index + 1 : filters.size(); i < filters.size(); ++i)
    if (filters[i].id == H5Z_FILTER_FLETCHER32 && !((read_mask >> i) & 1u)) checksum_after = true;
  size_t frame_size = stored.size() - (checksum_after && stored.size() >= 4 ? 4 : 0);
  try {
    fz::FrameInfo info = fz::inspect(stored.data(), frame_size);
    print_frame_info(info, "    ");
  } catch (const fz::Error& e) {
    std::printf("    bad FZM frame: %s\n", e.what());
  }
#else
  (void)dataset, (void)space, (void)rank, (void)filters;
  std::printf("  chunks      --chunks needs HDF5 >= 1.10.5 (H5Dget_chunk_info)\n");
#endif
}

struct Totals {
  uint64_t raw_bytes = 0, stored_bytes = 0;
};

void inspect_dataset(hid_t file, const std::string& path, bool with_chunks, Totals& totals) {
  Handle dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  std::printf("%s\n", path.c_str());
  if (!dataset.ok()) {
    std::printf("  cannot open this dataset\n");
    return;
  }
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  Handle dcpl(H5Dget_create_plist(dataset.get()), H5Pclose);
  if (!type.ok() || !space.ok() || !dcpl.ok()) {
    std::printf("  cannot read this dataset's type, shape or creation properties\n");
    return;
  }
  int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  std::vector<uint64_t> shape(dims.begin(), dims.end());
  std::printf("  dtype       %s\n", hdf5_type_text(type.get()).c_str());
  std::printf("  shape       %s\n", shape_text(shape).c_str());

  H5D_layout_t layout = H5Pget_layout(dcpl.get());
  std::vector<FilterEntry> filters;
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(rank > 0 ? rank : 1);
    int chunk_rank = H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    std::vector<uint64_t> chunk_shape(chunk.begin(), chunk.begin() + (chunk_rank > 0 ? chunk_rank : 0));
    std::printf("  chunk shape %s\n", shape_text(chunk_shape).c_str());
    filters = filter_pipeline(dcpl.get());
  } else {
    std::printf("  layout      %s\n", layout == H5D_CONTIGUOUS ? "contiguous" : layout == H5D_COMPACT ? "compact" : "virtual/other");
  }
  if (filters.empty()) std::printf("  filters     none\n");
  for (size_t i = 0; i < filters.size(); ++i) {
    const FilterEntry& f = filters[i];
    const char* known = known_filter_name(f.id);
    std::string name = known ? known : (f.stored_name.empty() ? "unknown" : f.stored_name);
    std::printf("  filter [%zu]  %d %s%s cd_values(%zu) %s\n", i, static_cast<int>(f.id), name.c_str(),
                (f.flags & H5Z_FLAG_OPTIONAL) ? " (optional)" : "", f.cd_values.size(), values_text(f.cd_values).c_str());
    if (f.id == static_cast<H5Z_filter_t>(kFzFilterId))
      std::printf("              %s\n", describe_fz_cd_values(f.cd_values).c_str());
  }

  hssize_t points = H5Sget_simple_extent_npoints(space.get());
  uint64_t raw_bytes = points > 0 ? static_cast<uint64_t>(points) * H5Tget_size(type.get()) : 0;
  uint64_t stored_bytes = H5Dget_storage_size(dataset.get());
  totals.raw_bytes += raw_bytes;
  totals.stored_bytes += stored_bytes;
  if (stored_bytes)
    std::printf("  stored      %llu bytes of %llu raw, ratio %.3f\n", static_cast<unsigned long long>(stored_bytes),
                static_cast<unsigned long long>(raw_bytes), static_cast<double>(raw_bytes) / stored_bytes);
  else
    std::printf("  stored      nothing allocated (%llu raw bytes)\n", static_cast<unsigned long long>(raw_bytes));

  if (with_chunks && layout == H5D_CHUNKED) inspect_first_chunk(dataset.get(), space.get(), rank, filters);
}

}  // namespace

int inspect_hdf5_file(const std::string& path, bool with_chunks) {
  // The tool reports failures in its own words; HDF5's stack dumps would bury them.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
#if H5_VERSION_GE(1, 12, 0)
  htri_t is_hdf5 = H5Fis_accessible(path.c_str(), H5P_DEFAULT);
#else
  htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
#endif
  if (is_hdf5 <= 0) throw ToolError("'" + path + "' is neither an FZM frame nor an HDF5 file");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw ToolError("cannot open HDF5 file '" + path + "'");
  std::vector<std::string> paths = dataset_paths(file.get());
  std::printf("%s: HDF5 file, %zu dataset(s)\n", path.c_str(), paths.size());
  Totals totals;
  for (const std::string& dataset_path : paths) inspect_dataset(file.get(), dataset_path, with_chunks, totals);
  if (totals.stored_bytes)
    std::printf("all datasets: %llu bytes stored of %llu raw, ratio %.3f\n",
                static_cast<unsigned long long>(totals.stored_bytes),
                static_cast<unsigned long long>(totals.raw_bytes),
                static_cast<double>(totals.raw_bytes) / totals.stored_bytes);
  return 0;
}

}  // namespace h5fz
