#include "repack_copy.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy_internal.hpp"
#include "repack_output.hpp"

namespace h5fz {

volatile int g_interrupt_signal = 0;

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (error->desc != nullptr && *error->desc != '\0') messages->push_back(error->desc);
  return 0;
}


struct LinkEntry {
  std::string name;
  H5L_type_t type;
};

herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  static_cast<std::vector<LinkEntry>*>(data)->push_back({name, info->type});
  return 0;
}

// A group's links in creation order where the group tracks it (netCDF-4 and
// h5py with track_order do), else by name as HDF5 lists them.
std::vector<LinkEntry> links_of(hid_t group, const std::string& path) {
  for (H5_index_t index : {H5_INDEX_CRT_ORDER, H5_INDEX_NAME}) {
    std::vector<LinkEntry> links;
    hsize_t position = 0;
    if (H5Literate(group, index, H5_ITER_INC, &position, collect_link, &links) >= 0) return links;
    H5Eclear2(H5E_DEFAULT);
  }
  throw ToolError("cannot list the members of " + path + ": " + hdf5_error_text("unreadable group"));
}

herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

std::vector<std::string> attributes_of(hid_t object, const std::string& path) {
  for (H5_index_t index : {H5_INDEX_CRT_ORDER, H5_INDEX_NAME}) {
    std::vector<std::string> names;
    hsize_t position = 0;
    if (H5Aiterate2(object, index, H5_ITER_INC, &position, collect_attribute, &names) >= 0) return names;
    H5Eclear2(H5E_DEFAULT);
  }
  throw ToolError("cannot list the attributes of " + path + ": " + hdf5_error_text("unreadable attributes"));
}

std::string child_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}


H5O_mcdt_search_ret_t stop_datatype_search(void*) { return H5O_MCDT_SEARCH_STOP; }

}  // namespace

std::string hdf5_error_text(const std::string& fallback) {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return fallback;
  // The innermost message names the cause (a filter's refusal, a missing
  // file); the outermost one the call that failed.
  std::string text = messages.back();
  if (messages.size() > 1 && messages.front() != text) text = messages.front() + ": " + text;
  return text;
}

void require_hdf5(long long status, const std::string& what) {
  if (status < 0) throw ToolError(what + ": " + hdf5_error_text("HDF5 call failed"));
}

StructureCopy::StructureCopy(hid_t in_file, hid_t out_file, std::string out_path, DatasetCreator creator)
    : in_file_(in_file), out_file_(out_file), out_path_(std::move(out_path)), creator_(std::move(creator)) {}

void StructureCopy::copy_all() {
  Handle in_root(H5Gopen2(in_file_, "/", H5P_DEFAULT), H5Gclose);
  Handle out_root(H5Gopen2(out_file_, "/", H5P_DEFAULT), H5Gclose);
  if (!in_root.ok() || !out_root.ok()) throw ToolError("cannot open the root group: " + hdf5_error_text("?"));
  copied_[object_identity(in_root.get())] = "/";
  prepare_committed_types();
  copy_attributes(in_root.get(), out_root.get(), "/");
  copy_group(in_root.get(), out_root.get(), "/");
  finish_committed_types();
}

void StructureCopy::copy_group(hid_t in_group, hid_t out_group, const std::string& path) {
  for (const LinkEntry& link : links_of(in_group, path)) {
    check_interrupted();
    copy_link(in_group, out_group, link.name, link.type, child_path(path, link.name));
  }
}

void StructureCopy::copy_link(hid_t in_group, hid_t out_group, const std::string& name, int link_type,
                              const std::string& path) {
  if (link_type == H5L_TYPE_SOFT || link_type == H5L_TYPE_EXTERNAL) {
    H5L_info_t info;
    require_hdf5(H5Lget_info(in_group, name.c_str(), &info, H5P_DEFAULT), "cannot read the link " + path);
    std::vector<char> value(info.u.val_size + 1, '\0');
    require_hdf5(H5Lget_val(in_group, name.c_str(), value.data(), value.size(), H5P_DEFAULT),
                 "cannot read the link " + path);
    if (link_type == H5L_TYPE_SOFT) {
      require_hdf5(H5Lcreate_soft(value.data(), out_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                   "cannot create the soft link " + path);
    } else {
      unsigned flags = 0;
      const char* file = nullptr;
      const char* object = nullptr;
      require_hdf5(H5Lunpack_elink_val(value.data(), info.u.val_size, &flags, &file, &object),
                   "cannot read the external link " + path);
      require_hdf5(H5Lcreate_external(file, object, out_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                   "cannot create the external link " + path);
    }
    return;
  }
  if (link_type != H5L_TYPE_HARD) {
    warnings_.push_back(path + ": a user-defined link (type " + std::to_string(link_type) + "), not copied");
    return;
  }
  Handle object(H5Oopen(in_group, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object.ok()) throw ToolError("cannot open " + path + ": " + hdf5_error_text("unreadable object"));
  const std::string identity = object_identity(object.get());
  if (auto seen = copied_.find(identity); seen != copied_.end()) {
    require_hdf5(H5Lcreate_hard(out_file_, seen->second.c_str(), out_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                 "cannot link " + path + " to " + seen->second);
    return;
  }
  copied_[identity] = path;
  switch (H5Iget_type(object.get())) {
    case H5I_GROUP: {
      Handle gcpl(H5Gget_create_plist(object.get()), H5Pclose);
      Handle out(H5Gcreate2(out_group, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
      if (!out.ok()) throw ToolError("cannot create the group " + path + ": " + hdf5_error_text("?"));
      copy_attributes(object.get(), out.get(), path);
      copy_group(object.get(), out.get(), path);
      return;
    }
    case H5I_DATASET:
      object.reset();  // closed, so the creator can open it with its own chunk cache
      if (creator_(in_group, out_group, name, path)) return;
      copy_object_unchanged(in_group, out_group, name, path);
      return;
    case H5I_DATATYPE:
      if (place_committed_type(identity, object.get(), out_group, name, path)) return;
      copy_object_unchanged(in_group, out_group, name, path);
      type_paths_[identity] = path;
      return;
    default:
      warnings_.push_back(path + ": an object of unknown kind, not copied");
  }
}

void StructureCopy::copy_object_unchanged(hid_t in_group, hid_t out_group, const std::string& name,
                                          const std::string& path) {
  Handle in(H5Oopen(in_group, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!in.ok()) throw ToolError("cannot open " + path + ": " + hdf5_error_text("?"));
  Handle type(H5Iget_type(in.get()) == H5I_DATASET ? H5Dget_type(in.get()) : -1, H5Tclose);
  if (type.ok() && (H5Tdetect_class(type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(type.get()) > 0)) {
    copy_variable_length_dataset(in.get(), out_group, name, path);
  } else {
    // H5Ocopy keeps the storage, filters, fill value and data as they are;
    // the attributes follow through copy_attributes, which rebuilds the
    // references among them. Committed datatypes merge with the ones copied
    // before, so datasets sharing one keep sharing it: HDF5 is told where
    // those are and not to search the whole output for others. Its search
    // (H5G_visit of the output while groups with tracked creation order
    // are being filled) crashes HDF5 1.10.8 and 2.0 with SIGSEGV on
    // ordinary netCDF-4 files, and costs a walk of the output per object.
    // A full disk is found before HDF5 meets it inside H5Ocopy, whose error
    // path has crashed there.
    if (H5Iget_type(in.get()) == H5I_DATASET && !out_path_.empty())
      require_free_space(out_path_, H5Dget_storage_size(in.get()), path);
    Handle ocpypl(H5Pcreate(H5P_OBJECT_COPY), H5Pclose);
    H5Pset_copy_object(ocpypl.get(), H5O_COPY_WITHOUT_ATTR_FLAG | H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG);
    for (const std::string& committed : committed_type_paths())
      require_hdf5(H5Padd_merge_committed_dtype_path(ocpypl.get(), committed.c_str()), "cannot copy " + path);
    require_hdf5(H5Pset_mcdt_search_cb(ocpypl.get(), stop_datatype_search, nullptr), "cannot copy " + path);
    require_hdf5(H5Ocopy(in_group, name.c_str(), out_group, name.c_str(), ocpypl.get(), H5P_DEFAULT),
                 "cannot copy " + path);
  }
  Handle out(H5Oopen(out_group, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!out.ok()) throw ToolError("cannot reopen " + path + ": " + hdf5_error_text("?"));
  copy_attributes(in.get(), out.get(), path);
  if (type.ok() && H5Tdetect_class(type.get(), H5T_REFERENCE) > 0) {
    if (reference_layout(type.get())) {
      reference_datasets_.push_back(path);  // its references are mapped once every object exists
    } else {
      warnings_.push_back(path + ": a dataset of region or nested references, copied, but its references do not "
                          "point into the new file");
    }
  }
}

// Reads `in` a block of rows at a time (about 16 MiB), lets `edit` change
// each block in place, writes it at the same place in `out` and frees what
// HDF5 allocated for variable-length elements. A dataset never written stays
// unwritten.
void copy_row_blocks(hid_t in, hid_t out, hid_t memory_type, hid_t space, const std::string& path,
                     const std::function<void(hid_t memory_space, unsigned char* buffer, size_t points)>& edit) {
  const int rank = H5Sget_simple_extent_ndims(space);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  H5D_space_status_t allocated = H5D_SPACE_STATUS_ERROR;
  H5Dget_space_status(in, &allocated);
  if (points <= 0 || H5Sget_simple_extent_type(space) == H5S_NULL || allocated == H5D_SPACE_STATUS_NOT_ALLOCATED)
    return;
  const size_t element = H5Tget_size(memory_type);
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  const hsize_t rows = rank > 0 ? dims[0] : 1;
  const hsize_t row_points = rows ? static_cast<hsize_t>(points) / rows : 0;
  const hsize_t rows_per_block = std::max<hsize_t>(1, (hsize_t{16} << 20) / std::max<hsize_t>(1, row_points * element));
  for (hsize_t first = 0; first < rows; first += rows_per_block) {
    check_interrupted();
    const hsize_t count = std::min(rows_per_block, rows - first);
    Handle file_space(H5Scopy(space), H5Sclose);
    Handle memory_space(-1, H5Sclose);
    if (rank > 0) {
      std::vector<hsize_t> start(dims.size(), 0), block = dims;
      start[0] = first;
      block[0] = count;
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr);
      memory_space = Handle(H5Screate_simple(rank, block.data(), nullptr), H5Sclose);
    } else {
      memory_space = Handle(H5Screate(H5S_SCALAR), H5Sclose);
    }
    const size_t block_points = static_cast<size_t>(count * row_points);
    std::vector<unsigned char> buffer(block_points * element + 1);
    require_hdf5(H5Dread(in, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()),
                 "cannot read " + path);
    if (edit) edit(memory_space.get(), buffer.data(), block_points);
    const herr_t written = H5Dwrite(out, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, buffer.data());
    reclaim(memory_type, memory_space.get(), buffer.data());
    require_hdf5(written, "cannot write " + path);
  }
}

void StructureCopy::copy_variable_length_dataset(hid_t in, hid_t out_group, const std::string& name,
                                                 const std::string& path) {
  // H5Ocopy of HDF5 1.10 copies a variable-length fill value (every netCDF-4
  // string variable has one) without its heap object, and the copy's
  // creation properties then cannot be read ("bad global heap collection
  // signature"). So these datasets are created anew from their creation
  // properties, where HDF5 converts the fill value itself, and their
  // elements are read and written a block of rows at a time.
  Handle type(H5Dget_type(in), H5Tclose);
  Handle space(H5Dget_space(in), H5Sclose);
  Handle dcpl(H5Dget_create_plist(in), H5Pclose);
  Handle memory_type(H5Tcopy(type.get()), H5Tclose);
  Handle out(H5Dcreate2(out_group, name.c_str(), memory_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
             H5Dclose);
  if (!out.ok()) throw ToolError("cannot create " + path + ": " + hdf5_error_text("?"));
  copy_row_blocks(in, out.get(), memory_type.get(), space.get(), path, nullptr);
}

void StructureCopy::copy_attributes(hid_t in_object, hid_t out_object, const std::string& path) {
  for (const std::string& name : attributes_of(in_object, path)) {
    Handle attribute(H5Aopen(in_object, name.c_str(), H5P_DEFAULT), H5Aclose);
    if (!attribute.ok()) throw ToolError("cannot open the attribute " + path + "@" + name + ": " + hdf5_error_text("?"));
    Handle file_type(H5Aget_type(attribute.get()), H5Tclose);
    Handle space(H5Aget_space(attribute.get()), H5Sclose);
    const bool references = H5Tdetect_class(file_type.get(), H5T_REFERENCE) > 0;
    if (references && !reference_layout(file_type.get())) {
      warnings_.push_back(path + "@" + name + ": holds region or nested references, not copied");
      continue;
    }
    // A transient copy of the type: a committed type belongs to the input file.
    Handle type(H5Tcopy(file_type.get()), H5Tclose);
    Handle out(H5Acreate2(out_object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!out.ok()) throw ToolError("cannot create the attribute " + path + "@" + name + ": " + hdf5_error_text("?"));
    if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) continue;
    if (references) {
      // Created here, so the attribute order stays; its references point
      // into the input and are written once every object exists.
      reference_attributes_.emplace_back(path, name);
      continue;
    }
    const hssize_t count = H5Sget_simple_extent_npoints(space.get());
    if (count < 0) throw ToolError("cannot size the attribute " + path + "@" + name);
    std::vector<unsigned char> buffer(static_cast<size_t>(count) * H5Tget_size(type.get()) + 1);
    require_hdf5(H5Aread(attribute.get(), type.get(), buffer.data()), "cannot read the attribute " + path + "@" + name);
    const herr_t written = H5Awrite(out.get(), type.get(), buffer.data());
    const bool variable = H5Tdetect_class(type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(type.get()) > 0;
    if (variable) reclaim(type.get(), space.get(), buffer.data());
    require_hdf5(written, "cannot write the attribute " + path + "@" + name);
  }
}

}  // namespace h5fz
