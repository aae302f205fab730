// Stage type 15's tile kernels on the GPU (host dispatch: interleaved_cuda.cu;
// format: interleaved.hpp): a warp per tile of kTileSymbols counts the
// tokens of the tile tokenization for both caps (count_tiles_kernel: the
// TileHistograms the plan needs, and each tile's pair count), then, once the
// host chose C, writes the tile's pairs at its offset (tokenize_kernel). Both
// walk a tile the same way (walk_tile), 256 symbols a step: thread j holds 8
// consecutive symbols, a max-scan over the warp gives each thread the last
// symbol other than m before its own, so each run R is known where its
// symbol is. Internal to interleaved_cuda.cu, which alone includes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/rans_common_cuda.cuh"
#include "common/words_cuda.cuh"

namespace fz::ans::interleaved_cuda {
namespace {  // internal linkage, as in interleaved_cuda.cu, the one file that includes this

using cuda::kFullMask;
using cuda_detail::load_word;
using cuda_detail::store_word;

constexpr unsigned kTileThreads = 256;  // a warp per tile
constexpr unsigned kTileWarps = kTileThreads / 32;
constexpr uint32_t kSmallCap = interleaved_format::kCapSmall;
constexpr uint32_t kLargeCap = interleaved_format::kCapLarge;

// Device layout of count_tiles' output: TileHistograms (u64 run63[64],
// run255[256], esc63, esc255), then u64 pairs63[tiles + 1] and
// pairs255[tiles + 1] at 256-byte boundaries (the extra 0 for the scan).
struct HistogramWords {
  unsigned long long run63[kSmallCap + 1];
  unsigned long long run255[kLargeCap + 1];
  unsigned long long esc63, esc255;
};
static_assert(sizeof(HistogramWords) == sizeof(interleaved_format::TileHistograms), "the same layout as the host's");

__device__ __forceinline__ int warp_max_inclusive(int v, unsigned lane) {
  for (unsigned d = 1; d < 32; d <<= 1) {
    const int o = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v = max(v, o);
  }
  return v;
}

__device__ __forceinline__ uint32_t warp_sum_exclusive(uint32_t v, unsigned lane, uint32_t& total) {
  uint32_t incl = v;
  for (unsigned d = 1; d < 32; d <<= 1) {
    const uint32_t o = __shfl_up_sync(kFullMask, incl, d);
    if (lane >= d) incl += o;
  }
  total = __shfl_sync(kFullMask, incl, 31);
  return incl - v;
}

// The tile's symbols in steps of 256, thread `lane` holding 8 consecutive
// ones (a 16-byte load when the input is 16-byte aligned): on_chunk(v, mask,
// base, prev) for each step, v the thread's 8 symbols, mask their bits not m
// (inside the tile), base the tile position of v[0], prev the tile position
// of the last symbol not m before v[0] (-1: none). Returns that of the
// tile's last symbol not m (the same in every thread).
template <typename OnChunk>
__device__ __forceinline__ int walk_tile(const uint8_t* symbols, uint64_t begin, uint32_t len, uint32_t mode,
                                         unsigned lane, OnChunk&& on_chunk) {
  const bool vec = (reinterpret_cast<uintptr_t>(symbols) & 15) == 0;
  int carry = -1;
  for (uint32_t chunk = 0; chunk < len; chunk += 256) {
    const uint32_t base = chunk + 8 * lane;
    uint16_t v[8];
    if (vec && base + 8 <= len) {
      const uint4 q = __ldg(reinterpret_cast<const uint4*>(symbols + 2 * (begin + base)));
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (unsigned i = 0; i < 8; ++i) v[i] = static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)));
    } else {
#pragma unroll
      for (unsigned i = 0; i < 8; ++i)
        v[i] = base + i < len ? load_word<uint16_t>(symbols + 2 * (begin + base + i)) : static_cast<uint16_t>(mode);
    }
    uint32_t mask = 0;
#pragma unroll
    for (unsigned i = 0; i < 8; ++i) mask |= (v[i] != mode ? 1u : 0u) << i;
    const int top = mask != 0 ? static_cast<int>(base + 31 - __clz(mask)) : -1;
    const int inclusive = warp_max_inclusive(top, lane);
    int prev = __shfl_up_sync(kFullMask, inclusive, 1);
    if (lane == 0) prev = -1;
    prev = max(prev, carry);
    on_chunk(v, mask, base, prev);
    carry = max(carry, __shfl_sync(kFullMask, inclusive, 31));
  }
  return carry;
}

// Counts (a warp per tile, kTileWarps tiles a block): the histograms summed
// into `h` (zeroed by the caller) and each tile's pairs for both caps.
// Runs shorter than 63 count for both caps in one shared bin (runs of 0, the
// most common by far, per thread); longer ones per cap.
__global__ void __launch_bounds__(kTileThreads)
    count_tiles_kernel(const uint8_t* symbols, uint64_t n, uint64_t tiles, uint32_t mode, HistogramWords* h,
                       unsigned long long* pairs63, unsigned long long* pairs255) {
  __shared__ uint32_t both[kSmallCap], only63[kSmallCap], only255[kLargeCap];
  __shared__ uint32_t totals[5];  // runs of 0, caps 63, caps 255, final remainders 63, 255
  for (unsigned i = threadIdx.x; i < kLargeCap; i += blockDim.x) {
    only255[i] = 0;
    if (i < kSmallCap) both[i] = only63[i] = 0;
    if (i < 5) totals[i] = 0;
  }
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  const uint64_t tile = uint64_t{blockIdx.x} * kTileWarps + threadIdx.x / 32;
  if (tile < tiles) {  // the same for the whole warp
    const uint64_t begin = tile * kTileSymbols;
    const uint32_t len = static_cast<uint32_t>(n - begin < kTileSymbols ? n - begin : kTileSymbols);
    uint32_t items = 0, zeros = 0, caps63 = 0, caps255 = 0;
    const int last = walk_tile(symbols, begin, len, mode, lane,
                               [&](const uint16_t(&)[8], uint32_t mask, uint32_t base, int prev) {
                                 while (mask != 0) {
                                   const int pos = static_cast<int>(base) + __ffs(mask) - 1;
                                   mask &= mask - 1;
                                   const uint32_t R = static_cast<uint32_t>(pos - prev - 1);
                                   prev = pos;
                                   ++items;
                                   if (R == 0) {
                                     ++zeros;
                                   } else if (R < kSmallCap) {
                                     atomicAdd(&both[R], 1u);
                                   } else {
                                     caps63 += R / kSmallCap;
                                     atomicAdd(&only63[R % kSmallCap], 1u);
                                     caps255 += R / kLargeCap;
                                     atomicAdd(&only255[R % kLargeCap], 1u);
                                   }
                                 }
                               });
    uint32_t fin63 = 0, fin255 = 0;
    if (lane == 0) {  // the tile's final run: a pairs (C, ESC), then (b, ESC) when b > 0
      const uint32_t R = static_cast<uint32_t>(static_cast<int>(len) - last - 1);
      caps63 += R / kSmallCap;
      caps255 += R / kLargeCap;
      fin63 = R % kSmallCap != 0 ? 1 : 0;
      fin255 = R % kLargeCap != 0 ? 1 : 0;
      if (fin63) atomicAdd(&only63[R % kSmallCap], 1u);
      if (fin255) atomicAdd(&only255[R % kLargeCap], 1u);
    }
    for (unsigned d = 16; d > 0; d >>= 1) {
      items += __shfl_down_sync(kFullMask, items, d);
      zeros += __shfl_down_sync(kFullMask, zeros, d);
      caps63 += __shfl_down_sync(kFullMask, caps63, d);
      caps255 += __shfl_down_sync(kFullMask, caps255, d);
    }
    if (lane == 0) {
      pairs63[tile] = items + caps63 + fin63;
      pairs255[tile] = items + caps255 + fin255;
      atomicAdd(&totals[0], zeros);
      atomicAdd(&totals[1], caps63);
      atomicAdd(&totals[2], caps255);
      atomicAdd(&totals[3], fin63);
      atomicAdd(&totals[4], fin255);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) pairs63[tiles] = pairs255[tiles] = 0;
  __syncthreads();
  const auto add = [](unsigned long long* at, uint32_t v) {
    if (v != 0) atomicAdd(at, static_cast<unsigned long long>(v));
  };
  for (unsigned i = threadIdx.x; i <= kLargeCap; i += blockDim.x) {
    if (i < kSmallCap) add(&h->run63[i], both[i] + only63[i] + (i == 0 ? totals[0] : 0));
    if (i < kLargeCap) add(&h->run255[i], (i < kSmallCap ? both[i] : 0) + only255[i] + (i == 0 ? totals[0] : 0));
  }
  if (threadIdx.x == 0) {
    add(&h->run63[kSmallCap], totals[1]);
    add(&h->run255[kLargeCap], totals[2]);
    add(&h->esc63, totals[1] + totals[3]);
    add(&h->esc255, totals[2] + totals[4]);
  }
}

// The most pairs one step of walk_tile makes: a pair per symbol, and the
// cap tokens of the runs that end in the step, which together are at most a
// tile long (the smaller cap, 63, the most of them).
constexpr uint32_t kStepPairs = 256 + kTileSymbols / kSmallCap + 1;

// The pairs (run token << 16 | symbol token, ESC = esc) of each tile with
// cap C (kSmallCap or kLargeCap), tile t's from pairs + start[t] (the
// exclusive scan of its pair counts): a warp per tile, each thread's pairs
// placed by a warp scan into the warp's shared buffer, then written out by
// the warp in consecutive words (each thread storing its own pairs where they
// fall took 3-4x as long: 0.9 of 1.2 ms for 117M codes on the H200).
__global__ void __launch_bounds__(kTileThreads)
    tokenize_kernel(const uint8_t* symbols, uint64_t n, uint64_t tiles, uint32_t mode, uint32_t cap, uint32_t esc,
                    const unsigned long long* start, uint32_t* pairs) {
  __shared__ uint32_t staged[kTileWarps][kStepPairs];
  const unsigned lane = threadIdx.x % 32;
  const uint64_t tile = uint64_t{blockIdx.x} * kTileWarps + threadIdx.x / 32;
  if (tile >= tiles) return;  // the same for the whole warp
  uint32_t* step_pairs = staged[threadIdx.x / 32];
  const uint64_t begin = tile * kTileSymbols;
  const uint32_t len = static_cast<uint32_t>(n - begin < kTileSymbols ? n - begin : kTileSymbols);
  uint32_t* out = pairs + start[tile];
  const uint32_t full = cap << 16 | esc;
  const int last = walk_tile(symbols, begin, len, mode, lane,
                             [&](const uint16_t(&v)[8], uint32_t mask, uint32_t base, int prev) {
                               uint32_t count = 0;
                               int p = prev;
#pragma unroll
                               for (unsigned i = 0; i < 8; ++i) {
                                 if ((mask >> i & 1) == 0) continue;
                                 const int pos = static_cast<int>(base + i);
                                 count += static_cast<uint32_t>(pos - p - 1) / cap + 1;
                                 p = pos;
                               }
                               uint32_t total = 0;
                               uint32_t at = warp_sum_exclusive(count, lane, total);
#pragma unroll
                               for (unsigned i = 0; i < 8; ++i) {  // static indices: v stays in registers
                                 if ((mask >> i & 1) == 0) continue;
                                 const int pos = static_cast<int>(base + i);
                                 uint32_t R = static_cast<uint32_t>(pos - prev - 1);
                                 prev = pos;
                                 for (; R >= cap; R -= cap) step_pairs[at++] = full;
                                 step_pairs[at++] = R << 16 | v[i];
                               }
                               __syncwarp();
                               for (uint32_t i = lane; i < total; i += 32) out[i] = step_pairs[i];
                               __syncwarp();  // (the buffer is written again in the next step)
                               out += total;
                             });
  if (lane == 0) {  // the tile's final run
    uint32_t R = static_cast<uint32_t>(static_cast<int>(len) - last - 1);
    for (; R >= cap; R -= cap) *out++ = full;
    if (R > 0) *out = R << 16 | esc;
  }
}

}  // namespace
}  // namespace fz::ans::interleaved_cuda
