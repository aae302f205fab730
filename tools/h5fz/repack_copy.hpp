// The part of `h5fz repack` that copies a file's structure: groups with their
// creation properties, attributes, links (hard, soft, external), committed
// datatypes and the datasets that stay as they are, then the references
// between objects (dimension scales' DIMENSION_LIST and REFERENCE_LIST,
// object-reference attributes and datasets), which can only be written once
// every object exists in the output: each reference is mapped to the same
// object by path. The datasets to
// compress are handed to a callback that creates them itself.
#pragma once

#include <hdf5.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace h5fz {

// HDF5's error stack as one line (the deepest messages, which name the cause),
// then cleared; `fallback` when the stack is empty.
std::string hdf5_error_text(const std::string& fallback);

// Throws ToolError("<what>: <HDF5's message>") when `status` < 0.
void require_hdf5(long long status, const std::string& what);

class StructureCopy {
 public:
  // Decides for a dataset (`name` in the input group `in_group`, at `path`)
  // whether the callback creates it (true) or it is copied unchanged
  // (false). The dataset is not open when it is called, so the callback
  // may open it with access properties of its own (a chunk cache).
  using DatasetCreator = std::function<bool(hid_t in_group, hid_t out_parent, const std::string& name,
                                            const std::string& path)>;
  // `out_path` names the output file on disk, for the free-space check
  // before a large object is copied.
  StructureCopy(hid_t in_file, hid_t out_file, std::string out_path, DatasetCreator creator);

  // Copies the root group's attributes and everything below it. Checks
  // `interrupted` between objects and throws Interrupted when it is set.
  void copy_all();
  // Writes the attributes that hold object references (created in place by
  // copy_attributes, so their order stays): after every object exists.
  void link_references();

  // What could not be carried over exactly (said at the end of the run).
  const std::vector<std::string>& warnings() const { return warnings_; }

  // Copies every attribute of `in_object` to `out_object`, with the same
  // type, shape and order (those holding references are filled in by
  // link_references()). For datasets the callback creates.
  void copy_attributes(hid_t in_object, hid_t out_object, const std::string& path);

  // The output's copy of the committed datatype `in_type` is (opened; the
  // caller closes it), or -1 when `in_type` is not committed or its copy
  // does not exist yet: datasets the callback creates keep sharing it.
  hid_t output_committed_type(hid_t in_type);

 private:
  void copy_group(hid_t in_group, hid_t out_group, const std::string& path);
  void copy_link(hid_t in_group, hid_t out_group, const std::string& name, int link_type, const std::string& path);
  void copy_object_unchanged(hid_t in_group, hid_t out_group, const std::string& name, const std::string& path);
  void copy_variable_length_dataset(hid_t in, hid_t out_group, const std::string& name, const std::string& path);
  void rewrite_reference_attribute(const std::string& object_path, const std::string& attribute);
  void rewrite_reference_dataset(const std::string& path);
  // repack_types.cpp: committed datatypes.
  void prepare_committed_types();
  bool place_committed_type(const std::string& identity, hid_t in_type, hid_t out_group, const std::string& name,
                            const std::string& path);
  void finish_committed_types();
  std::vector<std::string> committed_type_paths() const;
  size_t remap_references(hid_t in_object, hid_t type, hid_t space, unsigned char* buffer, size_t count);

  hid_t in_file_, out_file_;
  std::string out_path_;
  DatasetCreator creator_;
  std::map<std::string, std::string> copied_;  // input object identity -> its first path in the output
  std::vector<std::pair<std::string, std::string>> reference_attributes_;  // (object path, attribute)
  std::vector<std::string> reference_datasets_;  // datasets of object references, rewritten at the end
  std::map<std::string, std::string> type_paths_;  // committed datatype identity -> its output path
  std::vector<std::string> warnings_;
};

// Raised when SIGINT, SIGTERM or SIGHUP arrived (repack stops, removes its
// partial output and exits 130).
struct Interrupted {};
extern volatile int g_interrupt_signal;
inline void check_interrupted() {
  if (g_interrupt_signal) throw Interrupted{};
}

}  // namespace h5fz
