// The Huffman CUDA kernels (schedule and host dispatch: huffman_cuda.cu):
// the histogram, the encoder's block codes, and the decoder's segment
// synchronisation and decode over the tables of huffman_segments.hpp.
// Internal to huffman_cuda.cu, which alone includes it.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>

#include "huffman/huffman_cuda.hpp"
#include "huffman/huffman_segments.hpp"

namespace fz::huffman::cuda {
namespace {  // internal linkage, as in huffman_cuda.cu, the one file that includes this

using segments::BlockWords;
using segments::CanonicalCode;
using segments::kFastEntries;
using segments::Segment;
using segments::Tables;

constexpr unsigned kThreads = 256;       // per thread block, every kernel
constexpr uint32_t kSharedBins = 8192;   // alphabets up to this count in shared memory
constexpr uint32_t kStageSymbols = 16384;  // blocks up to this size are staged for decoding
constexpr unsigned kMaxGrid = 65535;

__device__ __forceinline__ uint32_t load_symbol(const uint8_t* p) {
  if ((reinterpret_cast<uintptr_t>(p) & 1) == 0) return *reinterpret_cast<const uint16_t*>(p);
  return uint32_t{p[0]} | uint32_t{p[1]} << 8;
}

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  if ((reinterpret_cast<uintptr_t>(p) & 3) == 0) return *reinterpret_cast<const uint32_t*>(p);
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// ---- histogram ---------------------------------------------------------------

template <bool kShared>
__global__ void __launch_bounds__(kThreads)
    count_symbols(const uint8_t* symbols, size_t n, uint32_t alphabet, unsigned long long* counts,
                  uint32_t* bad_symbols) {
  extern __shared__ uint32_t bins[];  // alphabet + 1 (the last: symbols outside) when kShared
  if (kShared) {
    for (uint32_t s = threadIdx.x; s <= alphabet; s += kThreads) bins[s] = 0;
    __syncthreads();
  }
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  const unsigned lane = threadIdx.x & 31u;
  // `base` is the same for the whole thread block, so every lane of a warp
  // runs every iteration (the full mask below is exact).
  for (size_t base = size_t{blockIdx.x} * kThreads; base < n; base += size_t{gridDim.x} * kThreads) {
    const size_t i = base + threadIdx.x;
    uint32_t key = kNone;
    if (i < n) key = min(load_symbol(symbols + 2 * i), alphabet);
    const unsigned same = __match_any_sync(0xFFFFFFFFu, key);
    if (key != kNone && lane == static_cast<unsigned>(__ffs(same) - 1)) {
      const unsigned k = static_cast<unsigned>(__popc(same));
      if (kShared) {
        atomicAdd(&bins[key], k);
      } else if (key == alphabet) {
        atomicOr(bad_symbols, 1u);
      } else {
        atomicAdd(&counts[key], static_cast<unsigned long long>(k));
      }
    }
  }
  if (kShared) {
    __syncthreads();
    for (uint32_t s = threadIdx.x; s < alphabet; s += kThreads) {
      if (bins[s] != 0) atomicAdd(&counts[s], static_cast<unsigned long long>(bins[s]));
    }
    if (threadIdx.x == 0 && bins[alphabet] != 0) atomicOr(bad_symbols, 1u);
  }
}

// The same counts from 16-byte aligned symbols, eight a thread at a time (one
// vector load each, so that many loads are in flight): a thread's equal
// neighbours are counted as runs, and the run a thread ends on is merged
// across the warp with the equal (symbol, length) runs of the other lanes, so
// that mostly-constant streams (the finest spline level, mostly q = 0) cost
// one shared atomic per warp per eight symbols instead of one per symbol. The
// last n mod 8 symbols are block 0's. Alphabets up to kSharedBins only.
__global__ void __launch_bounds__(kThreads)
    count_symbol_vectors(const uint8_t* symbols, size_t n, uint32_t alphabet, unsigned long long* counts,
                         uint32_t* bad_symbols) {
  extern __shared__ uint32_t bins[];  // alphabet + 1 (the last: symbols outside)
  for (uint32_t s = threadIdx.x; s <= alphabet; s += kThreads) bins[s] = 0;
  __syncthreads();
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  const size_t vectors = n / 8;
  const uint4* words = reinterpret_cast<const uint4*>(symbols);
  const unsigned lane = threadIdx.x & 31u;
  // `base` is the same for the whole thread block: every lane runs every iteration.
  for (size_t base = size_t{blockIdx.x} * kThreads; base < vectors; base += size_t{gridDim.x} * kThreads) {
    const size_t v = base + threadIdx.x;
    uint32_t key = kNone, run = 0;
    if (v < vectors) {
      const uint4 w = words[v];
      const uint32_t pairs[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (unsigned j = 0; j < 8; ++j) {
        const uint32_t symbol = min((pairs[j / 2] >> (16 * (j % 2))) & 0xFFFFu, alphabet);
        if (symbol == key) {
          ++run;
        } else {
          if (run != 0) atomicAdd(&bins[key], run);
          key = symbol;
          run = 1;
        }
      }
    }
    // key < 2^16 + 1, run <= 8: one word names the run.
    const uint32_t named = key == kNone ? kNone : key | run << 20;
    const unsigned same = __match_any_sync(0xFFFFFFFFu, named);
    if (named != kNone && lane == static_cast<unsigned>(__ffs(same) - 1))
      atomicAdd(&bins[key], run * static_cast<unsigned>(__popc(same)));
  }
  if (blockIdx.x == 0) {
    for (size_t i = vectors * 8 + threadIdx.x; i < n; i += kThreads)
      atomicAdd(&bins[min(load_symbol(symbols + 2 * i), alphabet)], 1u);
  }
  __syncthreads();
  for (uint32_t s = threadIdx.x; s < alphabet; s += kThreads) {
    if (bins[s] != 0) atomicAdd(&counts[s], static_cast<unsigned long long>(bins[s]));
  }
  if (threadIdx.x == 0 && bins[alphabet] != 0) atomicOr(bad_symbols, 1u);
}

// ---- encode ------------------------------------------------------------------

__device__ __forceinline__ uint32_t block_count(uint64_t n, uint32_t S, uint64_t block) {
  const uint64_t rest = n - block * S;
  return static_cast<uint32_t>(rest < S ? rest : S);
}

__global__ void __launch_bounds__(kThreads)
    measure_blocks(const uint8_t* symbols, uint64_t n, uint32_t S, uint64_t blocks, const uint32_t* table,
                   uint64_t* block_words) {
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  for (uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const uint32_t count = block_count(n, S, b);
    const uint8_t* src = symbols + 2 * b * S;
    uint64_t bits = 0;
    uint32_t done = 0;
    if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {  // uniform: eight symbols a load
      const uint32_t vectors = count / 8;
      for (uint32_t v = threadIdx.x; v < vectors; v += kThreads) {
        const uint4 w = reinterpret_cast<const uint4*>(src)[v];
        const uint32_t pairs[4] = {w.x, w.y, w.z, w.w};
        uint32_t sum = 0;
#pragma unroll
        for (unsigned j = 0; j < 8; ++j) sum += __ldg(table + ((pairs[j / 2] >> (16 * (j % 2))) & 0xFFFFu)) & 31u;
        bits += sum;
      }
      done = 8 * vectors;
    }
    for (uint32_t i = done + threadIdx.x; i < count; i += kThreads) bits += __ldg(table + load_symbol(src + 2 * i)) & 31u;
    const uint64_t total = Reduce(reduce_storage).Sum(bits);
    if (threadIdx.x == 0) block_words[b] = (total + 31) / 32;
    __syncthreads();  // reduce_storage is reused
  }
}

// end[] into the stream, and the stream's length.
__global__ void write_block_table(const uint64_t* ends, uint64_t blocks, uint8_t* out, size_t ends_at,
                                  size_t payload_at, uint64_t* encoded_size) {
  auto* table = reinterpret_cast<uint32_t*>(out + ends_at);
  for (uint64_t b = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; b < blocks; b += uint64_t{gridDim.x} * blockDim.x)
    table[b] = static_cast<uint32_t>(ends[b]);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const uint64_t words = ends[blocks - 1];
    *encoded_size = words > UINT32_MAX ? 0 : payload_at + 4 * words;
  }
}

// The codes of block b (count symbols) into its words of the payload
// (ends: the blocks' end words), for write_blocks and write_staged_blocks:
// each thread takes a run of consecutive symbols, sums their code lengths,
// finds its first bit by a block scan, and writes its codes (words it shares
// with a neighbour by atomicOr onto zeroed words). entry(k): the code table
// entry (code << 5 | length) of the block's symbol k. Ends with a barrier
// (scan_storage, and whatever entry reads, may be reused after it).
template <typename Entry>
__device__ __forceinline__ void write_block_codes(const uint64_t* ends, uint8_t* payload, uint64_t b,
                                                  uint32_t count,
                                                  typename cub::BlockScan<uint32_t, kThreads>::TempStorage& scan_storage,
                                                  Entry&& entry) {
  const uint64_t first_word = b == 0 ? 0 : ends[b - 1];
  const uint32_t words = static_cast<uint32_t>(ends[b] - first_word);
  uint32_t* dst = reinterpret_cast<uint32_t*>(payload) + first_word;
  const uint32_t per = (count + kThreads - 1) / kThreads;
  const uint32_t run_first = min(threadIdx.x * per, count);
  const uint32_t run_count = min(per, count - run_first);
  const auto run_entry = [&](uint32_t i) { return entry(run_first + i); };
  uint32_t bits = 0;
  for (uint32_t i = 0; i < run_count; ++i) bits += run_entry(i) & 31u;
  uint32_t first_bit = 0;
  cub::BlockScan<uint32_t, kThreads>(scan_storage).ExclusiveSum(bits, first_bit);
  for (uint32_t w = threadIdx.x; w < words; w += kThreads) dst[w] = 0;
  __syncthreads();  // zeros before any code
  segments::encode_run(first_bit, run_count, run_entry, [&](uint32_t w, uint32_t value, bool whole) {
    if (whole) {
      dst[w] = value;
    } else if (value != 0) {
      atomicOr(dst + w, value);
    }
  });
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    write_blocks(const uint8_t* symbols, uint64_t n, uint32_t S, uint64_t blocks, const uint32_t* table,
                 const uint64_t* ends, uint8_t* payload) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  for (uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const uint32_t count = block_count(n, S, b);
    const uint8_t* src = symbols + 2 * b * S;
    write_block_codes(ends, payload, b, count, scan_storage,
                      [&](uint32_t k) { return __ldg(table + load_symbol(src + 2 * size_t{k})); });
  }
}

// write_blocks with the block's symbols staged in shared memory first
// (16-byte loads, coalesced; blocks of at most kStageSymbols symbols, each
// starting 16-byte aligned): each thread then reads its run of consecutive
// symbols from there instead of from global memory, where its run lay 2 *
// per bytes from its neighbours' (one load in flight per thread, and lines
// evicted between the two passes over the run). Symbol i sits at
// staged_index(i): two symbols of padding every 64, so that runs of 64 (full
// blocks) start in different banks. The same words, written the same way.
__device__ __forceinline__ uint32_t staged_index(uint32_t i) { return i + 2 * (i >> 6); }
inline size_t staged_symbols_bytes(uint32_t block_symbols) {
  return 2 * size_t{block_symbols + 2 * ((block_symbols + 63) / 64)};
}

__global__ void __launch_bounds__(kThreads)
    write_staged_blocks(const uint8_t* symbols, uint64_t n, uint32_t S, uint64_t blocks, const uint32_t* table,
                        const uint64_t* ends, uint8_t* payload) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  extern __shared__ uint16_t staged[];
  for (uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const uint32_t count = block_count(n, S, b);
    const uint8_t* src = symbols + 2 * b * S;  // 16-byte aligned (the caller checks)
    const uint32_t vectors = count / 8;
    for (uint32_t v = threadIdx.x; v < vectors; v += kThreads) {
      const uint4 w = reinterpret_cast<const uint4*>(src)[v];
      const uint32_t at = staged_index(8 * v);  // 8 symbols never straddle padding: even, 4-byte aligned
      uint32_t* dst = reinterpret_cast<uint32_t*>(staged + at);
      dst[0] = w.x;
      dst[1] = w.y;
      dst[2] = w.z;
      dst[3] = w.w;
    }
    for (uint32_t i = 8 * vectors + threadIdx.x; i < count; i += kThreads)
      staged[staged_index(i)] = static_cast<uint16_t>(load_symbol(src + 2 * i));
    __syncthreads();
    write_block_codes(ends, payload, b, count, scan_storage,
                      [&](uint32_t k) { return __ldg(table + staged[staged_index(k)]); });
    // write_block_codes' last barrier: the staged symbols are free again.
  }
}

// ---- decode ------------------------------------------------------------------

// Both lookup levels, one entry per thread: the first level's kFastEntries,
// then the second level's entries.
__global__ void build_lookup_tables(const __grid_constant__ CanonicalCode code, const uint16_t* sorted,
                                    uint32_t* fast, uint32_t* second) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const Tables t{nullptr, nullptr, code.long_first, code.second_bits, code.start, code.limit, code.index, sorted,
                 code.max_used};
  if (i < kFastEntries) {
    fast[i] = segments::fast_entry(t, i);
  } else if (i - kFastEntries < code.second_entries) {
    second[i - kFastEntries] = segments::second_entry(t, i - kFastEntries);
  }
}

struct DecodeGeometry {
  uint64_t n;
  uint64_t blocks;
  size_t ends_at;
  size_t payload_at;
  uint32_t block_symbols;
  // Dynamic shared memory: the symbols of a block, staged so that they leave
  // in wide stores (blocks of at most kStageSymbols; 0 bytes otherwise), then
  // the second lookup level.
  uint32_t staged_bytes;  // a multiple of 16
};

// Copies `bytes` bytes from shared memory to `dst`, as wide as dst's alignment allows.
__device__ void copy_out(const uint8_t* staged, uint8_t* dst, uint32_t bytes) {
  uint32_t done = 0;
  if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
    const uint32_t vectors = bytes / 16;
    for (uint32_t i = threadIdx.x; i < vectors; i += kThreads)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(staged)[i];
    done = vectors * 16;
  }
  for (uint32_t i = done + threadIdx.x; i < bytes; i += kThreads) dst[i] = staged[i];
}

__device__ __forceinline__ void store_symbol(uint8_t* p, uint32_t symbol) {
  if ((reinterpret_cast<uintptr_t>(p) & 1) == 0) {
    *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(symbol);
  } else {
    p[0] = static_cast<uint8_t>(symbol);
    p[1] = static_cast<uint8_t>(symbol >> 8);
  }
}

__global__ void __launch_bounds__(kThreads)
    decode_blocks(const uint8_t* in, DecodeGeometry g, const __grid_constant__ CanonicalCode code,
                  const uint16_t* sorted, const uint32_t* fast_table, const uint32_t* second_table, uint8_t* out,
                  uint32_t* status) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ uint32_t fast[kFastEntries];
  __shared__ uint64_t start[kMaxLengthLimit + 2];
  __shared__ uint64_t limit[kMaxLengthLimit + 2];
  __shared__ uint32_t index[kMaxLengthLimit + 2];
  __shared__ uint32_t exits[kThreads];
  __shared__ uint32_t last_end;  // end of the block's last code
  __shared__ typename Scan::TempStorage scan_storage;
  extern __shared__ __align__(16) uint8_t dynamic_shared[];
  uint8_t* staged = dynamic_shared;
  uint32_t* second = reinterpret_cast<uint32_t*>(dynamic_shared + g.staged_bytes);

  for (uint32_t i = threadIdx.x; i < kFastEntries; i += kThreads) fast[i] = fast_table[i];
  for (uint32_t i = threadIdx.x; i < code.second_entries; i += kThreads) second[i] = second_table[i];
  for (uint32_t l = threadIdx.x; l < kMaxLengthLimit + 2; l += kThreads) {
    start[l] = code.start[l];
    limit[l] = code.limit[l];
    index[l] = code.index[l];
  }
  __syncthreads();
  const Tables t{fast, code.second_entries > 0 ? second : nullptr, code.long_first, code.second_bits, start, limit,
                 index, sorted, code.max_used};

  // Every branch below depends on values all threads share, so the thread
  // block leaves each block together.
  for (uint64_t b = blockIdx.x; b < g.blocks; b += gridDim.x) {
    const uint32_t first_word = b == 0 ? 0u : load_u32(in + g.ends_at + 4 * (b - 1));
    const uint32_t words = load_u32(in + g.ends_at + 4 * b) - first_word;  // > 0: checked on the host
    const uint32_t count = block_count(g.n, g.block_symbols, b);
    if (segments::surely_unused_word(words, count, code.max_used)) {
      if (threadIdx.x == 0) atomicOr(status, static_cast<uint32_t>(segments::kUnusedWord));
      continue;
    }
    const BlockWords src{in + g.payload_at + 4 * size_t{first_word}, words};
    const segments::SegmentBounds bounds = segments::segment_bounds(words, threadIdx.x, kThreads);

    // Guessed starts, then rounds until each start is its predecessor's exit.
    uint32_t from = bounds.first_bit;
    Segment seg = segments::count_segment(src, from, bounds.end_bit, t);
    for (;;) {
      exits[threadIdx.x] = seg.exit;
      __syncthreads();
      const uint32_t true_start = threadIdx.x == 0 ? 0u : exits[threadIdx.x - 1];
      const bool moved = true_start != from;
      if (moved) {
        from = true_start;
        seg = segments::count_segment(src, from, bounds.end_bit, t);
      }
      if (!__syncthreads_or(moved)) break;
    }
    if (__syncthreads_or(seg.exit == segments::kInvalid)) {
      if (threadIdx.x == 0) atomicOr(status, static_cast<uint32_t>(segments::kInvalidCode));
      continue;
    }
    uint32_t first_code = 0, codes = 0;
    Scan(scan_storage).ExclusiveSum(seg.codes, first_code, codes);
    if (codes < count) {
      if (threadIdx.x == 0) atomicOr(status, static_cast<uint32_t>(segments::kRunsPast));
      continue;
    }

    uint8_t* dst = out + 2 * b * g.block_symbols;
    uint8_t* sink = g.staged_bytes > 0 ? staged : dst;
    segments::decode_segment(src, from, bounds.end_bit, t, [&](uint32_t k, uint32_t symbol, uint32_t end_bit) {
      const uint32_t i = first_code + k;
      if (i < count) store_symbol(sink + 2 * size_t{i}, symbol);
      if (i == count - 1) last_end = end_bit;  // exactly one thread decodes code count - 1
    });
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint32_t bad = segments::block_end_status(words, codes, count, last_end, src(words - 1));
      if (bad != 0) atomicOr(status, bad);
    }
    if (g.staged_bytes > 0) copy_out(staged, dst, 2 * count);
    __syncthreads();  // staged, last_end and scan_storage are reused
  }
}

}  // namespace
}  // namespace fz::huffman::cuda
