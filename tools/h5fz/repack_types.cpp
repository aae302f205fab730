// StructureCopy's committed datatypes. A dataset that uses a committed
// (named) datatype must use the output's copy of it, so h5dump -H names the
// same type in both files. The datasets repack compresses are created with
// that copy; the ones H5Ocopy copies find it through HDF5's "merge committed
// datatypes", told the exact paths (HDF5's own search of the whole output
// crashes, see copy_object_unchanged). A dataset can come before its type in
// the walk (by name, "/g/v" before "/t"), so every committed type is first
// copied under a temporary name in the output's root, then moved to its own
// path when the walk reaches it: creation order is kept, as a link's order
// is the order of its creation in its group.
#include <string>
#include <vector>

#include "cli.hpp"
#include "hdf5_handle.hpp"
#include "repack_copy.hpp"
#include "repack_copy_internal.hpp"

namespace h5fz {

namespace {

constexpr const char* kPendingPrefix = "/.h5fz-repack-committed-type-";

// H5Ovisit's callback changed in 1.10.3 and 1.12; only the type and the
// path are needed.
template <typename Info>
herr_t collect_committed_type(hid_t, const char* name, const Info* info, void* data) {
  if (info->type == H5O_TYPE_NAMED_DATATYPE) static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

bool is_pending(const std::string& path) { return path.rfind(kPendingPrefix, 0) == 0; }

}  // namespace

void StructureCopy::prepare_committed_types() {
  std::vector<std::string> found;
#if H5_VERSION_GE(1, 12, 0)
  const herr_t visited = H5Ovisit3(in_file_, H5_INDEX_NAME, H5_ITER_INC, collect_committed_type<H5O_info2_t>, &found,
                                   H5O_INFO_BASIC);
#elif H5_VERSION_GE(1, 10, 3)
  const herr_t visited = H5Ovisit2(in_file_, H5_INDEX_NAME, H5_ITER_INC, collect_committed_type<H5O_info_t>, &found,
                                   H5O_INFO_BASIC);
#else
  const herr_t visited = H5Ovisit(in_file_, H5_INDEX_NAME, H5_ITER_INC, collect_committed_type<H5O_info_t>, &found);
#endif
  // Not fatal: a type not found here is copied where the walk meets it,
  // and datasets met before it get their own copy of it, as before.
  if (visited < 0) H5Eclear2(H5E_DEFAULT);
  size_t number = 0;
  for (const std::string& name : found) {
    check_interrupted();
    Handle in(H5Topen2(in_file_, name.c_str(), H5P_DEFAULT), H5Tclose);
    if (!in.ok()) throw ToolError("cannot open the datatype /" + name + ": " + hdf5_error_text("?"));
    const std::string identity = object_identity(in.get());
    if (type_paths_.count(identity)) continue;
    std::string pending;
    do {
      pending = kPendingPrefix + std::to_string(number++);
    } while (H5Lexists(in_file_, pending.c_str(), H5P_DEFAULT) > 0);
    H5Eclear2(H5E_DEFAULT);
    Handle copy(H5Tcopy(in.get()), H5Tclose);  // transient: its own, in the output's file
    require_hdf5(H5Tcommit2(out_file_, pending.c_str(), copy.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 "cannot copy the datatype /" + name);
    type_paths_[identity] = pending;
  }
}

bool StructureCopy::place_committed_type(const std::string& identity, hid_t in_type, hid_t out_group,
                                         const std::string& name, const std::string& path) {
  const auto known = type_paths_.find(identity);
  if (known == type_paths_.end() || !is_pending(known->second)) return false;
  require_hdf5(H5Lmove(out_file_, known->second.c_str(), out_group, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
               "cannot place the datatype " + path);
  known->second = path;
  Handle out(H5Oopen(out_group, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!out.ok()) throw ToolError("cannot reopen " + path + ": " + hdf5_error_text("?"));
  copy_attributes(in_type, out.get(), path);
  return true;
}

void StructureCopy::finish_committed_types() {
  // A type the walk never reached (only behind a link type not copied)
  // loses its temporary name; datasets using it keep it, unnamed.
  for (auto& [identity, path] : type_paths_) {
    if (!is_pending(path)) continue;
    require_hdf5(H5Ldelete(out_file_, path.c_str(), H5P_DEFAULT), "cannot remove " + path);
    path.clear();
  }
}

std::vector<std::string> StructureCopy::committed_type_paths() const {
  std::vector<std::string> paths;
  for (const auto& entry : type_paths_) {
    if (!entry.second.empty()) paths.push_back(entry.second);
  }
  return paths;
}

hid_t StructureCopy::output_committed_type(hid_t in_type) {
  if (H5Tcommitted(in_type) <= 0) return -1;
  const auto copied = type_paths_.find(object_identity(in_type));
  if (copied == type_paths_.end() || copied->second.empty()) return -1;
  const hid_t type = H5Topen2(out_file_, copied->second.c_str(), H5P_DEFAULT);
  if (type < 0) H5Eclear2(H5E_DEFAULT);
  return type;
}

}  // namespace h5fz
