// The run of `h5fz repack` (cmd_repack.cpp drives it): the settings from the
// command line, and the Repack class that copies IN's structure
// (StructureCopy, repack_copy.hpp) and creates the datasets to compress
// itself. Its parts live apart: what each dataset becomes and its creation
// with the filter (repack_dataset.cpp, noa-global's range in
// repack_noa_global.cpp), its chunks read, compressed and
// written a batch at a time and checked again by --verify
// (repack_pipeline.cpp), the rows it fills in (repack_report.hpp).
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fz/fz.hpp"
#include "repack_chunks.hpp"
#include "repack_copy.hpp"
#include "repack_progress.hpp"
#include "repack_report.hpp"

namespace h5fz {

// --chunks: keep IN's chunks, the advised shape, or one shape for all.
enum class ChunkChoice { kKeep, kAuto, kShape };

// The command line, parsed once (cmd_repack.cpp).
struct RepackSettings {
  fz::Options options;  // preset, mode, bound, tuning, policy
  bool noa_global = false;
  std::vector<std::string> patterns;
  ChunkChoice chunks = ChunkChoice::kKeep;
  std::vector<uint64_t> chunk_shape;
  bool verify = false;
  bool measure_errors = false;
  bool quiet = false;
  bool progress = false;
  size_t batch_bytes = size_t{128} << 20;
};

// One run: IN's structure copied into OUT, the datasets to compress created
// with the filter and written by the batch pipeline, a report row each.
class Repack {
 public:
  Repack(const RepackSettings& settings, hid_t in_file, hid_t out_file, std::string out_path)
      : settings_(settings), in_file_(in_file), out_file_(out_file), out_path_(std::move(out_path)),
        copy_(in_file, out_file, out_path_,
              [this](hid_t in_group, hid_t parent, const std::string& name, const std::string& path) {
                return create_dataset(in_group, parent, name, path);
              }) {}

  // The bytes of the datasets that will be compressed, for the progress line.
  uint64_t bytes_to_compress();
  void run(Progress& progress) {
    progress_ = &progress;
    copy_.copy_all();
    copy_.link_references();
  }
  // --verify: every compressed dataset read back from `written_file`
  // through the filter and checked against IN chunk by chunk.
  void verify(hid_t written_file, Progress& progress);
  const std::vector<DatasetReport>& reports() const { return reports_; }
  std::vector<std::string> warnings() const {
    std::vector<std::string> all = notes_;
    all.insert(all.end(), copy_.warnings().begin(), copy_.warnings().end());
    return all;
  }

 private:
  // repack_dataset.cpp: StructureCopy's callback for each dataset.
  bool create_dataset(hid_t in_group, hid_t parent, const std::string& name, const std::string& path);
  // repack_noa_global.cpp: the abs bound noa-global comes to, or why none holds.
  struct GlobalBound {
    std::optional<double> bound;  // empty: none holds in every chunk, for `why`
    std::string why;
  };
  GlobalBound global_abs_bound(hid_t in, const ChunkPlan& plan, const std::vector<fz::Bytes>& exclude, double noa,
                               const std::string& path);
  // repack_pipeline.cpp: reads, compresses and writes a batch at a time.
  void write_chunks(hid_t in, hid_t out, const ChunkPlan& plan, const fz::Options& options, DatasetReport& report);

  const RepackSettings& settings_;
  hid_t in_file_, out_file_;
  std::string out_path_;  // the partial file, for the free-space checks
  StructureCopy copy_;
  Progress* progress_ = nullptr;
  std::vector<DatasetReport> reports_;
  std::vector<std::string> notes_;  // datasets that could not take the mode asked for
};

}  // namespace h5fz
