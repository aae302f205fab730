#include "repack_copy.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "hdf5_handle.hpp"

namespace h5fz {

volatile int g_interrupt_signal = 0;

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (error->desc != nullptr && *error->desc != '\0') messages->push_back(error->desc);
  return 0;
}

// An object's identity within its file, so a second hard link to it becomes
// a hard link in the output instead of a second copy.
std::string object_identity(hid_t object) {
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  require_hdf5(H5Oget_info3(object, &info, H5O_INFO_BASIC), "cannot read an object's header");
  char* text = nullptr;
  require_hdf5(H5Otoken_to_str(object, &info.token, &text), "cannot name an object");
  std::string key = std::to_string(info.fileno) + ":" + text;
  H5free_memory(text);
  return key;
#elif H5_VERSION_GE(1, 10, 3)
  H5O_info_t info;
  require_hdf5(H5Oget_info2(object, &info, H5O_INFO_BASIC), "cannot read an object's header");
  return std::to_string(info.fileno) + ":" + std::to_string(info.addr);
#else
  H5O_info_t info;
  require_hdf5(H5Oget_info(object, &info), "cannot read an object's header");
  return std::to_string(info.fileno) + ":" + std::to_string(info.addr);
#endif
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

// Frees what HDF5 allocated for variable-length elements read into `buffer`.
void reclaim(hid_t type, hid_t space, void* buffer) {
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(type, space, H5P_DEFAULT, buffer);
#else
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer);
#endif
}

// Where object references sit in an attribute's elements, for the forms
// HDF5 files use: a reference (object-reference attributes), a variable-
// length sequence of references (DIMENSION_LIST) and a compound with
// reference members (REFERENCE_LIST). Anything else holding references
// (region references, deeper nesting) is not rebuilt.
struct ReferenceLayout {
  enum Kind { kPlain, kSequence, kCompound } kind = kPlain;
  std::vector<size_t> offsets;  // kCompound: the reference members' offsets
};

std::optional<ReferenceLayout> reference_layout(hid_t type) {
  ReferenceLayout layout;
  if (H5Tequal(type, H5T_STD_REF_OBJ) > 0) return layout;
  const H5T_class_t type_class = H5Tget_class(type);
  if (type_class == H5T_VLEN) {
    Handle base(H5Tget_super(type), H5Tclose);
    if (H5Tequal(base.get(), H5T_STD_REF_OBJ) <= 0) return std::nullopt;
    layout.kind = ReferenceLayout::kSequence;
    return layout;
  }
  if (type_class == H5T_COMPOUND) {
    layout.kind = ReferenceLayout::kCompound;
    for (int i = 0; i < H5Tget_nmembers(type); ++i) {
      Handle member(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
      if (H5Tequal(member.get(), H5T_STD_REF_OBJ) > 0) {
        layout.offsets.push_back(H5Tget_member_offset(type, static_cast<unsigned>(i)));
      } else if (H5Tdetect_class(member.get(), H5T_REFERENCE) > 0) {
        return std::nullopt;
      }
    }
    return layout;
  }
  return std::nullopt;
}

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

StructureCopy::StructureCopy(hid_t in_file, hid_t out_file, DatasetCreator creator)
    : in_file_(in_file), out_file_(out_file), creator_(std::move(creator)) {}

void StructureCopy::copy_all() {
  Handle in_root(H5Gopen2(in_file_, "/", H5P_DEFAULT), H5Gclose);
  Handle out_root(H5Gopen2(out_file_, "/", H5P_DEFAULT), H5Gclose);
  if (!in_root.ok() || !out_root.ok()) throw ToolError("cannot open the root group: " + hdf5_error_text("?"));
  copied_[object_identity(in_root.get())] = "/";
  copy_attributes(in_root.get(), out_root.get(), "/");
  copy_group(in_root.get(), out_root.get(), "/");
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
      if (creator_(object.get(), out_group, name, path)) return;
      copy_object_unchanged(in_group, out_group, name, path);
      return;
    case H5I_DATATYPE:
      copy_object_unchanged(in_group, out_group, name, path);
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
    // before, so datasets sharing one keep sharing it.
    Handle ocpypl(H5Pcreate(H5P_OBJECT_COPY), H5Pclose);
    H5Pset_copy_object(ocpypl.get(), H5O_COPY_WITHOUT_ATTR_FLAG | H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG);
    require_hdf5(H5Ocopy(in_group, name.c_str(), out_group, name.c_str(), ocpypl.get(), H5P_DEFAULT),
                 "cannot copy " + path);
  }
  Handle out(H5Oopen(out_group, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!out.ok()) throw ToolError("cannot reopen " + path + ": " + hdf5_error_text("?"));
  copy_attributes(in.get(), out.get(), path);
  if (type.ok() && H5Tdetect_class(type.get(), H5T_REFERENCE) > 0) {
    warnings_.push_back(path + ": a dataset of references, copied, but its references do not point into the "
                        "new file");
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
  const int rank = H5Sget_simple_extent_ndims(space.get());
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  H5D_space_status_t allocated = H5D_SPACE_STATUS_ERROR;
  H5Dget_space_status(in, &allocated);
  // Never written: nothing to copy, and the copy stays unwritten too.
  if (points <= 0 || H5Sget_simple_extent_type(space.get()) == H5S_NULL || allocated == H5D_SPACE_STATUS_NOT_ALLOCATED)
    return;
  const size_t element = H5Tget_size(memory_type.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  const hsize_t rows = rank > 0 ? dims[0] : 1;
  const hsize_t row_points = rows ? static_cast<hsize_t>(points) / rows : 0;
  const hsize_t rows_per_block = std::max<hsize_t>(1, (hsize_t{16} << 20) / std::max<hsize_t>(1, row_points * element));
  for (hsize_t first = 0; first < rows; first += rows_per_block) {
    check_interrupted();
    const hsize_t count = std::min(rows_per_block, rows - first);
    Handle file_space(H5Scopy(space.get()), H5Sclose);
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
    std::vector<unsigned char> buffer(static_cast<size_t>(count * row_points) * element + 1);
    require_hdf5(H5Dread(in, memory_type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()),
                 "cannot read " + path);
    const herr_t written =
        H5Dwrite(out.get(), memory_type.get(), memory_space.get(), file_space.get(), H5P_DEFAULT, buffer.data());
    reclaim(memory_type.get(), memory_space.get(), buffer.data());
    require_hdf5(written, "cannot write " + path);
  }
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

void StructureCopy::rewrite_reference_attribute(const std::string& object_path, const std::string& attribute) {
  const std::string where = object_path + "@" + attribute;
  Handle in_object(H5Oopen(in_file_, object_path.c_str(), H5P_DEFAULT), H5Oclose);
  Handle out_object(H5Oopen(out_file_, object_path.c_str(), H5P_DEFAULT), H5Oclose);
  Handle in(H5Aopen(in_object.get(), attribute.c_str(), H5P_DEFAULT), H5Aclose);
  Handle out(H5Aopen(out_object.get(), attribute.c_str(), H5P_DEFAULT), H5Aclose);
  if (!in.ok() || !out.ok()) throw ToolError("cannot reopen " + where + ": " + hdf5_error_text("?"));
  Handle type(H5Aget_type(in.get()), H5Tclose);
  Handle memory_type(H5Tcopy(type.get()), H5Tclose);
  Handle space(H5Aget_space(in.get()), H5Sclose);
  const std::optional<ReferenceLayout> layout = reference_layout(type.get());
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (!layout || count < 0) throw ToolError("cannot read the references of " + where);
  const size_t element = H5Tget_size(memory_type.get());
  std::vector<unsigned char> buffer(static_cast<size_t>(count) * element + 1);
  require_hdf5(H5Aread(in.get(), memory_type.get(), buffer.data()), "cannot read " + where);
  size_t lost = 0;
  // The same object by its path in the output; a null reference stays null.
  auto remap = [&](unsigned char* at) {
    hobj_ref_t reference;
    std::memcpy(&reference, at, sizeof reference);
    if (reference == 0) return;
    char target[4096] = {};
    const ssize_t length = H5Rget_name(in_object.get(), H5R_OBJECT, &reference, target, sizeof target);
    hobj_ref_t mapped = 0;
    if (length <= 0 || static_cast<size_t>(length) >= sizeof target ||
        H5Rcreate(&mapped, out_file_, target, H5R_OBJECT, -1) < 0) {
      H5Eclear2(H5E_DEFAULT);
      ++lost;
      mapped = 0;
    }
    std::memcpy(at, &mapped, sizeof mapped);
  };
  for (hssize_t i = 0; i < count; ++i) {
    unsigned char* item = buffer.data() + static_cast<size_t>(i) * element;
    switch (layout->kind) {
      case ReferenceLayout::kPlain: remap(item); break;
      case ReferenceLayout::kSequence: {
        hvl_t sequence;
        std::memcpy(&sequence, item, sizeof sequence);
        for (size_t k = 0; k < sequence.len; ++k) remap(static_cast<unsigned char*>(sequence.p) + k * sizeof(hobj_ref_t));
        break;
      }
      case ReferenceLayout::kCompound:
        for (size_t offset : layout->offsets) remap(item + offset);
        break;
    }
  }
  const herr_t written = H5Awrite(out.get(), memory_type.get(), buffer.data());
  if (layout->kind == ReferenceLayout::kSequence) reclaim(memory_type.get(), space.get(), buffer.data());
  require_hdf5(written, "cannot write " + where);
  if (lost) {
    warnings_.push_back(where + ": " + std::to_string(lost) + " reference(s) to objects without a path, left null");
  }
}

void StructureCopy::link_references() {
  for (const auto& [path, attribute] : reference_attributes_) {
    check_interrupted();
    rewrite_reference_attribute(path, attribute);
  }
}

}  // namespace h5fz
