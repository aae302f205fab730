// Time the filter callback spent in this process, per direction, counted by
// plugin.cpp around every chunk and read through h5z_fz_filter_totals
// (reader_api.cpp): a parallel job's benchmark (tools/mpi) splits a write's
// time into the filter's part and HDF5's (collective I/O, the file system).
// Two clock reads per chunk; nothing else.
#pragma once

#include <atomic>
#include <cstdint>

namespace fz::filter {

struct FilterTotals {
  std::atomic<uint64_t> compress_ns{0};
  std::atomic<uint64_t> decompress_ns{0};
  std::atomic<uint64_t> compressed_chunks{0};
  std::atomic<uint64_t> decompressed_chunks{0};
};

FilterTotals& filter_totals();

}  // namespace fz::filter
