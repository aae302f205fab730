// StructureCopy's references: attributes and datasets of object references
// are written once every object exists in the output, each reference mapped
// to the same object by its path. And the helpers the parts of StructureCopy
// share (repack_copy_internal.hpp).
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "cli.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy.hpp"
#include "repack_copy_internal.hpp"

namespace h5fz {

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

void reclaim(hid_t type, hid_t space, void* buffer) {
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(type, space, H5P_DEFAULT, buffer);
#else
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer);
#endif
}

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

// Maps the object references in `count` elements of `type` (as read into
// `buffer` from `in_object`'s file) to the same objects by path in the
// output; a null reference stays null. Returns how many had no path.
size_t StructureCopy::remap_references(hid_t in_object, hid_t type, hid_t, unsigned char* buffer, size_t count) {
  const std::optional<ReferenceLayout> layout = reference_layout(type);
  if (!layout) return 0;
  const size_t element = H5Tget_size(type);
  size_t lost = 0;
  auto remap = [&](unsigned char* at) {
    hobj_ref_t reference;
    std::memcpy(&reference, at, sizeof reference);
    if (reference == 0) return;
    char target[4096] = {};
    const ssize_t length = H5Rget_name(in_object, H5R_OBJECT, &reference, target, sizeof target);
    hobj_ref_t mapped = 0;
    if (length <= 0 || static_cast<size_t>(length) >= sizeof target ||
        H5Rcreate(&mapped, out_file_, target, H5R_OBJECT, -1) < 0) {
      H5Eclear2(H5E_DEFAULT);
      ++lost;
      mapped = 0;
    }
    std::memcpy(at, &mapped, sizeof mapped);
  };
  for (size_t i = 0; i < count; ++i) {
    unsigned char* item = buffer + i * element;
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
  return lost;
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
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (!reference_layout(type.get()) || count < 0) throw ToolError("cannot read the references of " + where);
  const size_t element = H5Tget_size(memory_type.get());
  std::vector<unsigned char> buffer(static_cast<size_t>(count) * element + 1);
  require_hdf5(H5Aread(in.get(), memory_type.get(), buffer.data()), "cannot read " + where);
  const size_t lost =
      remap_references(in_object.get(), memory_type.get(), space.get(), buffer.data(), static_cast<size_t>(count));
  const herr_t written = H5Awrite(out.get(), memory_type.get(), buffer.data());
  if (H5Tdetect_class(memory_type.get(), H5T_VLEN) > 0) reclaim(memory_type.get(), space.get(), buffer.data());
  require_hdf5(written, "cannot write " + where);
  if (lost) {
    warnings_.push_back(where + ": " + std::to_string(lost) + " reference(s) to objects without a path, left null");
  }
}

// A dataset of object references was copied with the input's references
// (H5Ocopy leaves them pointing at addresses in the input): written again,
// each mapped by path as the attributes are. A block of rows at a time.
void StructureCopy::rewrite_reference_dataset(const std::string& path) {
  Handle in(H5Dopen2(in_file_, path.c_str(), H5P_DEFAULT), H5Dclose);
  Handle out(H5Dopen2(out_file_, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!in.ok() || !out.ok()) throw ToolError("cannot reopen " + path + ": " + hdf5_error_text("?"));
  Handle type(H5Dget_type(in.get()), H5Tclose);
  Handle memory_type(H5Tcopy(type.get()), H5Tclose);
  Handle space(H5Dget_space(in.get()), H5Sclose);
  size_t lost = 0;
  copy_row_blocks(in.get(), out.get(), memory_type.get(), space.get(), path,
                  [&](hid_t memory_space, unsigned char* buffer, size_t points) {
                    lost += remap_references(in.get(), memory_type.get(), memory_space, buffer, points);
                  });
  if (lost) {
    warnings_.push_back(path + ": " + std::to_string(lost) + " reference(s) to objects without a path, left null");
  }
}

void StructureCopy::link_references() {
  for (const auto& [path, attribute] : reference_attributes_) {
    check_interrupted();
    rewrite_reference_attribute(path, attribute);
  }
  for (const std::string& path : reference_datasets_) rewrite_reference_dataset(path);
}

}  // namespace h5fz
