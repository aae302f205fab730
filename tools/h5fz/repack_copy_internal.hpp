// What the parts of StructureCopy share (repack_copy.cpp: groups, links,
// attributes, datasets; repack_references.cpp: references mapped into the
// output; repack_types.cpp: committed datatypes). Not for other users.
#pragma once

#include <hdf5.h>

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

}  // namespace h5fz
