// Exclusive prefix sums of small uint64_t arrays in one launch of one block.
// cub's device-wide scan takes two launches per array (an initialisation and
// the scan), and each launch costs about 4 us of host time on the H100
// machine, which is most of what a small chunk costs there. Callers scan with
// this when the arrays are short (kOneBlockScanItems) and with cub otherwise;
// both give the same sums.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

namespace fz::cuda_detail {

constexpr unsigned kOneBlockScanThreads = 256;
constexpr unsigned kOneBlockScanPerThread = 16;
constexpr size_t kOneBlockScanItems = size_t{kOneBlockScanThreads} * kOneBlockScanPerThread;

// Up to three arrays of the same length, scanned one after the other.
struct OneBlockScans {
  const uint64_t* in[3] = {nullptr, nullptr, nullptr};
  uint64_t* out[3] = {nullptr, nullptr, nullptr};
  unsigned count = 0;
};

// out[k][i] = in[k][0] + ... + in[k][i - 1] for i < n (n <= kOneBlockScanItems);
// with write_total, also out[k][n] = the sum of all n (out then holds n + 1).
// Launch with one block of kOneBlockScanThreads threads. (A template, so that
// every file that includes this has its own copy.)
template <int kUnused = 0>
__global__ void __launch_bounds__(kOneBlockScanThreads)
    exclusive_sums_one_block(OneBlockScans scans, size_t n, bool write_total) {
  using Scan = cub::BlockScan<uint64_t, kOneBlockScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  const size_t first = static_cast<size_t>(threadIdx.x) * kOneBlockScanPerThread;
  for (unsigned k = 0; k < scans.count; ++k) {
    uint64_t local[kOneBlockScanPerThread];
    uint64_t sum = 0;
#pragma unroll
    for (unsigned j = 0; j < kOneBlockScanPerThread; ++j) {
      const size_t i = first + j;
      local[j] = i < n ? scans.in[k][i] : 0;
      sum += local[j];
    }
    uint64_t before = 0, all = 0;
    Scan(temp).ExclusiveSum(sum, before, all);
#pragma unroll
    for (unsigned j = 0; j < kOneBlockScanPerThread; ++j) {
      const size_t i = first + j;
      if (i < n) scans.out[k][i] = before;
      before += local[j];
    }
    if (write_total && threadIdx.x == 0) scans.out[k][n] = all;
    __syncthreads();  // temp is used again for the next array
  }
}

}  // namespace fz::cuda_detail
