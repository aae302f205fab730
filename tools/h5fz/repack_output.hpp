// Where `h5fz repack` writes: OUT is checked before any work (not IN, not a
// directory, in a folder that exists and can be written), written under a
// partial name of its own and renamed over OUT only when complete and
// verified. The partial file is created exclusively (O_EXCL, a name no other
// file has), so a run never truncates or removes a file it did not create:
// not its input, not the partial file of another run to the same OUT. It is
// removed on every failure, a crash inside HDF5 (SIGSEGV, SIGBUS) or a file
// size limit (SIGXFSZ) included.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace h5fz {

// Throws UsageError when OUT is IN (the same file by device and inode:
// symbolic and hard links included) or is a directory, ToolError when OUT's
// folder does not exist or cannot be written. Called before any work.
void check_repack_target(const std::string& in_path, const std::string& out_path);

class PartialOutput {
 public:
  // Creates "<OUT>.<unique>.h5fz-partial" exclusively (ToolError if it cannot).
  explicit PartialOutput(const std::string& out_path);
  // Removes the partial file unless commit() renamed it.
  ~PartialOutput();
  PartialOutput(const PartialOutput&) = delete;
  PartialOutput& operator=(const PartialOutput&) = delete;

  const std::string& path() const { return path_; }
  // Renames the partial file over OUT (ToolError if it cannot).
  void commit();
  // Removes the partial file now, if it is still the one this run created.
  void remove();

 private:
  std::string out_path_, path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  bool owned_ = false;
};

// Copies IN's user block (its first `size` bytes: a MATLAB v7.3 header, for
// one) over the same bytes of `partial`, which HDF5 created with a user block
// of that size and left zero.
void copy_user_block(const std::string& in_path, const std::string& partial, uint64_t size);

// Throws ToolError when the file system holding `path` has fewer than
// `bytes` (plus a margin for HDF5's metadata) free, naming `what`: a full
// disk found before HDF5 meets it halfway through a write.
void require_free_space(const std::string& path, uint64_t bytes, const std::string& what);

}  // namespace h5fz
