// The report of `h5fz repack` (repack_report.hpp): the table, the totals
// line and the failure message, from the rows the run filled in.
#include "repack_report.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "cli.hpp"

namespace h5fz {

namespace {

void print_table(const std::vector<DatasetReport>& reports, bool verified) {
  bool bounded_only = false;
  size_t width = 7;
  for (const DatasetReport& r : reports) width = std::max(width, r.path.size());
  std::printf("%-*s  %-15s  %-15s  %-36s  %10s  %8s  %11s%s\n", static_cast<int>(width), "dataset", "shape", "chunks",
              "stored as", "MiB", "ratio", "max error", verified ? "  verify" : "");
  for (const DatasetReport& r : reports) {
    char ratio[32] = "-", error[32] = "-";
    if (r.compressed && r.stored_bytes) std::snprintf(ratio, sizeof ratio, "%.2f", double(r.raw_bytes) / r.stored_bytes);
    if (r.compressed && r.errors_measured) {
      std::snprintf(error, sizeof error, "%.4g", r.max_abs_error);
    } else if (r.compressed && !r.lossy) {
      std::snprintf(error, sizeof error, "exact");
    } else if (r.compressed && r.abs_bound >= 0) {
      std::snprintf(error, sizeof error, "<= %.3g", r.abs_bound);
    }
    std::string verify_text;
    if (verified) {
      verify_text = !r.compressed ? "  -" : r.verify_violations ? "  FAILED (" + std::to_string(r.verify_violations) + ")"
                                                                : "  ok";
    }
    bounded_only |= r.compressed && r.lossy && !r.errors_measured;
    std::printf("%-*s  %-15s  %-15s  %-36s  %10.1f  %8s  %11s%s\n", static_cast<int>(width), r.path.c_str(),
                r.shape.c_str(), r.chunks.empty() ? "-" : r.chunks.c_str(), r.stored_as.c_str(),
                r.raw_bytes / 1048576.0, ratio, error, verify_text.c_str());
  }
  if (bounded_only) {
    std::printf("(max error: \"<= B\" is the absolute bound every chunk holds, \"-\" a bound per chunk (noa);\n"
                " --errors or --verify measure the errors)\n");
  }
}

}  // namespace

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

void print_report(const std::vector<DatasetReport>& reports, bool verified, const std::string& in_path,
                  const std::string& out_path, double write_seconds) {
  uint64_t raw = 0, stored = 0, compressed = 0;
  for (const DatasetReport& r : reports) {
    if (!r.compressed) continue;
    ++compressed;
    raw += r.raw_bytes;
    stored += r.stored_bytes;
  }
  print_table(reports, verified);
  struct stat in_stat {}, out_stat {};
  stat(in_path.c_str(), &in_stat);
  stat(out_path.c_str(), &out_stat);
  std::printf("%llu of %zu datasets compressed: %s -> %s (ratio %.2f) in %.2f s, %.0f MB/s; file %s -> %s\n",
              static_cast<unsigned long long>(compressed), reports.size(), human_bytes(raw).c_str(),
              human_bytes(stored).c_str(), stored ? double(raw) / stored : 0.0, write_seconds,
              megabytes_per_second(raw, write_seconds), human_bytes(in_stat.st_size).c_str(),
              human_bytes(out_stat.st_size).c_str());
}

// What failed, by dataset: the elements outside the bound the filter
// guarantees (or changed where they must come back exactly) and the largest
// error, so that the message stands alone.
std::string failure_summary(const std::vector<DatasetReport>& reports, bool verified, bool quiet) {
  std::string text = verified ? "--verify failed" : "the error check failed";
  uint64_t total = 0;
  std::string which;
  for (const DatasetReport& r : reports) {
    const uint64_t failed = r.violations + r.mismatches + r.verify_violations;
    if (failed == 0) continue;
    total += failed;
    which += (which.empty() ? ": " : ", ") + r.path + " " + std::to_string(failed) + " element(s)";
    if (r.errors_measured) which += " (max error " + short_number(r.max_abs_error) + ")";
  }
  text += which + " outside the bound the filter guarantees, or changed where they must be exact";
  if (!quiet) text += " (" + std::to_string(total) + " in all; see the table)";
  return text;
}

uint64_t count_failed(const std::vector<DatasetReport>& reports) {
  uint64_t failed = 0;
  for (const DatasetReport& r : reports) failed += r.violations + r.mismatches + r.verify_violations;
  return failed;
}

}  // namespace h5fz
