// What `h5fz repack` says of each dataset and of the run: the row a dataset
// gets (how it was stored, its ratio, its error), the table and the totals
// line printed at the end, and the message that names what failed the error
// check. Filled in by repack_dataset.cpp and repack_pipeline.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace h5fz {

struct DatasetReport {
  std::string path;
  std::string shape, chunks;
  std::string stored_as;  // "fzgpu noa 1e-3", "lossless (dimension scale)", "copied (string)"
  bool compressed = false;
  bool lossy = false;  // a lossy preset on floats (else every element is kept exactly)
  uint64_t raw_bytes = 0, stored_bytes = 0;
  bool errors_measured = false;
  double max_abs_error = 0;
  double abs_bound = -1;  // the absolute bound every chunk holds (abs, noa-global), -1 when per chunk
  uint64_t violations = 0, mismatches = 0;  // elements outside the bound; NaN/Inf/exact elements changed
  bool verified = false;
  uint64_t verify_violations = 0;
};

// "%.4g": a bound or an error as the table and the messages spell it.
std::string short_number(double value);

// The table (a row per dataset) and the totals line: datasets compressed,
// bytes before and after, time and rate, the files' sizes on disk
// (`in_path`, `out_path`). `verified`: the table has a verify column.
void print_report(const std::vector<DatasetReport>& reports, bool verified, const std::string& in_path,
                  const std::string& out_path, double write_seconds);

// What failed, by dataset, as one message that stands alone (`quiet`: no
// table to point at).
std::string failure_summary(const std::vector<DatasetReport>& reports, bool verified, bool quiet);

// The elements that failed the error check or --verify, over all datasets.
uint64_t count_failed(const std::vector<DatasetReport>& reports);

}  // namespace h5fz
