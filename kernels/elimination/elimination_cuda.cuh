// Block-level device pieces of the RZE/RRE coder (stream format:
// elimination/elimination.hpp): the bitmap level plan, building a bitmap level from
// the words or bytes below it, and ranks of set bits through a block-wide
// prefix sum of per-byte popcounts. A kept word's or byte's place in the
// stream is its rank among the set bits, so every thread places its own
// elements without waiting for the others, and the order never depends on
// scheduling.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "common/blocks.hpp"
#include "common/words_cuda.cuh"

namespace fz::elimination::cuda_detail {

constexpr unsigned kThreads = 256;

// A sub-chunk has at most 16384 words: level bitmaps of at most 2048, 256, 32
// and 4 bytes (kMaxLevels leaves room to spare, as on the CPU).
constexpr unsigned kMaxLevels = 8;
constexpr unsigned kMaxBitmapBytes = kBlockBytes / 8;
constexpr unsigned kLevelStorage = 2048 + 256 + 32 + 4 + 4 * kMaxLevels;
constexpr unsigned kScanItems = kMaxBitmapBytes / kThreads;
static_assert(kScanItems * kThreads == kMaxBitmapBytes, "one scan covers the largest bitmap");

// The CPU's LevelPlan: level l has bits[l] meaningful bits; the top level is
// at most 8 bytes and stored raw.
struct LevelPlan {
  unsigned count = 0;
  unsigned bits[kMaxLevels] = {};
  unsigned offset[kMaxLevels] = {};  // where level l lives in a kLevelStorage buffer

  __device__ unsigned bytes(unsigned level) const { return (bits[level] + 7) / 8; }
  __device__ unsigned top() const { return count - 1; }
};

__device__ inline LevelPlan plan_levels(unsigned words) {
  LevelPlan plan;
  plan.bits[0] = words;
  plan.count = 1;
  while (plan.bytes(plan.count - 1) > 8) {
    plan.bits[plan.count] = plan.bytes(plan.count - 1);
    plan.offset[plan.count] = plan.offset[plan.count - 1] + plan.bytes(plan.count - 1);
    ++plan.count;
  }
  return plan;
}

// Writes the bitmap of `count` elements (bit i set iff element i is kept:
// kChanged: it differs from element i-1, with element -1 = 0; else: it is not
// zero) into ceil(count/8) bytes at `bitmap`, padding bits 0. One thread per
// bitmap byte; `elements` is 8-aligned shared memory.
template <typename Element, bool kChanged>
__device__ void build_bitmap(const uint8_t* elements, unsigned count, uint8_t* bitmap) {
  const unsigned bytes = (count + 7) / 8;
  for (unsigned b = threadIdx.x; b < bytes; b += kThreads) {
    unsigned mask = 0;
#pragma unroll
    for (unsigned j = 0; j < 8; ++j) {
      const unsigned i = 8 * b + j;
      if (i < count) {
        const Element v = reinterpret_cast<const Element*>(elements)[i];
        const Element reference = kChanged && i > 0 ? reinterpret_cast<const Element*>(elements)[i - 1] : Element(0);
        mask |= static_cast<unsigned>(v != reference) << j;
      }
    }
    bitmap[b] = static_cast<uint8_t>(mask);
  }
}

using PopcountScan = cub::BlockScan<unsigned, kThreads>;

// prefix[i] = set bits in bitmap bytes [0, i), for i < bytes (at most
// kMaxBitmapBytes); returns all set bits. Call with every thread after the
// bitmap is complete; on return prefix is visible to all threads and `storage`
// may be reused.
__device__ inline unsigned scan_popcounts(const uint8_t* bitmap, unsigned bytes, unsigned* prefix,
                                          typename PopcountScan::TempStorage& storage) {
  unsigned items[kScanItems];
#pragma unroll
  for (unsigned j = 0; j < kScanItems; ++j) {
    const unsigned i = threadIdx.x * kScanItems + j;
    items[j] = i < bytes ? static_cast<unsigned>(__popc(bitmap[i])) : 0u;
  }
  unsigned total = 0;
  PopcountScan(storage).ExclusiveSum(items, items, total);
#pragma unroll
  for (unsigned j = 0; j < kScanItems; ++j) {
    const unsigned i = threadIdx.x * kScanItems + j;
    if (i < bytes) prefix[i] = items[j];
  }
  __syncthreads();
  return total;
}

// Set bits of `bitmap` before bit i (exclusive rank), given scan_popcounts' prefix.
__device__ __forceinline__ unsigned rank_before(const uint8_t* bitmap, const unsigned* prefix, unsigned i) {
  return prefix[i / 8] + static_cast<unsigned>(__popc(bitmap[i / 8] & ((1u << (i % 8)) - 1u)));
}

__device__ __forceinline__ bool bit_set(const uint8_t* bitmap, unsigned i) { return (bitmap[i / 8] >> (i % 8)) & 1u; }

// True iff the unused high bits of a bitmap of `bits` meaningful bits are 0.
__device__ __forceinline__ bool padding_clear(const uint8_t* bitmap, unsigned bits) {
  const unsigned used = bits % 8;
  return used == 0 || (bitmap[bits / 8] >> used) == 0;
}

}  // namespace fz::elimination::cuda_detail
