// What the parts of StructureCopy share (repack_copy.cpp: groups, links,
// attributes, datasets; repack_references.cpp: references mapped into the
// output; repack_types.cpp: committed datatypes). Not for other users.
#pragma once

#include <hdf5.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace h5fz {

// An object's identity within its file, so a second hard link to it becomes
// a hard link in the output instead of a second copy.
std::string object_identity(hid_t object);

// Frees what HDF5 allocated for variable-length elements read into `buffer`.
void reclaim(hid_t type, hid_t space, void* buffer);

// Where object references sit in an attribute's or dataset's elements, for
// the forms HDF5 files use: a reference (object-reference attributes and
// datasets), a variable-length sequence of references (DIMENSION_LIST) and a
// compound with reference members (REFERENCE_LIST). Anything else holding
// references (region references, deeper nesting) is not rebuilt.
struct ReferenceLayout {
  enum Kind { kPlain, kSequence, kCompound } kind = kPlain;
  std::vector<size_t> offsets;  // kCompound: the reference members' offsets
};
std::optional<ReferenceLayout> reference_layout(hid_t type);

// Copies dataset `in` to `out` (same type and shape) a block of rows at a
// time, through `memory_type`; `edit` (may be empty) changes each block in
// place before it is written (references mapped into the output).
void copy_row_blocks(hid_t in, hid_t out, hid_t memory_type, hid_t space, const std::string& path,
                     const std::function<void(hid_t memory_space, unsigned char* buffer, size_t points)>& edit);

}  // namespace h5fz
