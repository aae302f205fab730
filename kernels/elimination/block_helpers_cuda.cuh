// Block-level pieces of the RZE/RRE CUDA coder (elimination_cuda.cu) beyond
// the bitmap levels of elimination_cuda.cuh: sub-chunk geometry, byte masks,
// staged stores, and the chained scan (decoupled look-back) that gives each
// sub-chunk its payload offset while the encode kernel runs.
// Internal to the elimination coder: included by elimination_cuda.cu and by
// the kernels that fuse a stage in front of it (bitshuffle_rze/).
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/blocks.hpp"
#include "common/words_cuda.cuh"
#include "elimination/elimination_cuda.cuh"

namespace fz::elimination::cuda {
namespace {  // internal linkage: each including file instantiates what it launches

using namespace fz::elimination::cuda_detail;
using fz::cuda_detail::block_copy_bytes;
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;
using fz::cuda_detail::swizzled_vector;

__host__ __device__ inline size_t chunks_of(uint64_t n) {
  return static_cast<size_t>(n / kBlockBytes + (n % kBlockBytes != 0 ? 1 : 0));
}

__device__ inline unsigned subchunk_length(uint64_t n, size_t chunk) {
  const uint64_t rest = n - static_cast<uint64_t>(chunk) * kBlockBytes;
  return static_cast<unsigned>(rest < kBlockBytes ? rest : kBlockBytes);
}

// Builds B_0 from the words of `data` and every level above it into `levels`
// (the plan's offsets); returns with all levels visible to the block.
template <typename Word, bool kChanged>
__device__ void build_levels(const uint8_t* data, unsigned words, const LevelPlan& plan, uint8_t* levels) {
  build_bitmap<Word, kChanged>(data, words, levels + plan.offset[0]);
  for (unsigned l = 0; l < plan.top(); ++l) {
    __syncthreads();
    build_bitmap<uint8_t, true>(levels + plan.offset[l], plan.bits[l + 1], levels + plan.offset[l + 1]);
  }
  __syncthreads();
}

// ---- block helpers ------------------------------------------------------------

// Bit j set iff byte j of x is nonzero / differs from byte j of y.
__device__ __forceinline__ unsigned nonzero_bytes(uint32_t x) { return (__vsetne4(x, 0u) * 0x01020408u) >> 24; }
__device__ __forceinline__ unsigned differing_bytes(uint32_t x, uint32_t y) {
  return (__vsetne4(x, y) * 0x01020408u) >> 24;
}

// __byte_perm selectors (over a word and 0) for a 4-bit byte mask m, bit j
// meaning byte j is kept. compact: the kept bytes moved down in order, zeros
// above them; expand, its inverse: the word's first popc(m) bytes spread to the
// kept places, zeros elsewhere. A thread then packs or unpacks four bytes with
// one instruction where a byte loop took a shared-memory access per byte.
__host__ __device__ constexpr uint32_t compact_selector(unsigned m) {
  uint32_t selector = 0x4444u;  // nibble 4: a byte of the zero operand
  unsigned kept = 0;
  for (unsigned j = 0; j < 4; ++j) {
    if ((m >> j) & 1u) {
      selector = (selector & ~(0xFu << (4 * kept))) | (j << (4 * kept));
      ++kept;
    }
  }
  return selector;
}
__host__ __device__ constexpr uint32_t expand_selector(unsigned m) {
  uint32_t selector = 0;
  unsigned kept = 0;
  for (unsigned j = 0; j < 4; ++j) selector |= (((m >> j) & 1u) ? kept++ : 4u) << (4 * j);
  return selector;
}

// Both tables in shared memory (16 distinct words: a warp's lookups never
// conflict), filled by the block's first 16 threads before a barrier.
struct ByteMaskSelectors {
  uint32_t compact[16];
  uint32_t expand[16];
};
__device__ __forceinline__ void fill_selectors(ByteMaskSelectors& s) {
  if (threadIdx.x < 16) {
    s.compact[threadIdx.x] = compact_selector(threadIdx.x);
    s.expand[threadIdx.x] = expand_selector(threadIdx.x);
  }
}

// Threads of the block write `count` bytes of a source in shared memory to
// dst (any alignment): single bytes up to the first 4-aligned address, then
// aligned 32-bit words each made of two source words (a funnel shift), then
// the last bytes. word_at(q) is the source's 32-bit word q (bytes 4q..4q+3),
// read only for q < ceil(count / 4).
template <typename WordAt>
__device__ __forceinline__ void store_bytes(uint8_t* dst, unsigned count, WordAt word_at) {
  auto byte_at = [&](unsigned i) { return static_cast<uint8_t>(word_at(i / 4) >> (8 * (i % 4))); };
  unsigned head = (4u - static_cast<unsigned>(reinterpret_cast<uintptr_t>(dst) & 3u)) & 3u;
  if (head > count) head = count;
  if (threadIdx.x < head) dst[threadIdx.x] = byte_at(threadIdx.x);
  const unsigned words = (count - head) / 4;
  uint32_t* body = reinterpret_cast<uint32_t*>(dst + head);
  // Output word w is source bytes head + 4w .. head + 4w + 3: the top of
  // source word w and, unless head is 0, the bottom of word w + 1.
  for (unsigned w = threadIdx.x; w < words; w += kThreads)
    body[w] = head == 0 ? word_at(w) : __funnelshift_r(word_at(w), word_at(w + 1), 8 * head);
  for (unsigned i = head + 4 * words + threadIdx.x; i < count; i += kThreads) dst[i] = byte_at(i);
}

// Threads of the block copy `count` bytes from src (any alignment) into shared
// memory so that byte i lands at sm[src % 16 + i] (sm 16-aligned, count + 16
// bytes): 16-byte loads between single bytes at the ends; nothing outside
// [src, src + count) is read.
__device__ __forceinline__ void stage_bytes(const uint8_t* src, unsigned count, uint8_t* sm) {
  const unsigned a = static_cast<unsigned>(reinterpret_cast<uintptr_t>(src) & 15u);
  unsigned head = (16u - a) & 15u;
  if (head > count) head = count;
  if (threadIdx.x < head) sm[a + threadIdx.x] = src[threadIdx.x];
  const unsigned vectors = (count - head) / 16;
  const uint4* body = reinterpret_cast<const uint4*>(src + head);
  uint4* sbody = reinterpret_cast<uint4*>(sm + a + head);
  // Four loads in flight before the first store (a whole sub-chunk is 4 per thread).
  for (unsigned v0 = threadIdx.x; v0 < vectors; v0 += 4 * kThreads) {
    uint4 loaded[4];
#pragma unroll
    for (unsigned i = 0; i < 4; ++i)
      if (v0 + i * kThreads < vectors) loaded[i] = body[v0 + i * kThreads];
#pragma unroll
    for (unsigned i = 0; i < 4; ++i)
      if (v0 + i * kThreads < vectors) sbody[v0 + i * kThreads] = loaded[i];
  }
  for (unsigned i = head + 16 * vectors + threadIdx.x; i < count; i += kThreads) sm[a + i] = src[i];
}

// ---- what a full sub-chunk of bytes is coded from ------------------------------

// A full 16 KiB sub-chunk of bytes is coded from, and decoded into, shared
// memory in the layout the fast paths read: 16-byte vector v at
// swizzled_vector<4>(v) (thread t owns bytes 64t..64t+63). A block policy
// moves it between that layout and global memory, with every thread of the
// block taking part, and may use `spare`, 16 KiB of shared memory that is free
// meanwhile:
//   load(src, staged, spare): the sub-chunk's bytes from 16-aligned `src`
//     into `staged` (the caller synchronises before reading it or reusing spare);
//   store(decoded, dst, spare): `decoded` (complete) to 16-aligned `dst`.
// PlainBlock codes the bytes as they are. A stage fused in front of the coder
// supplies its own (bitshuffle_rze/: the bit-shuffle of the stream before
// RZE), so that its output never goes through global memory.
//
// Both directions move the 1024 vectors coalesced (vector i * kThreads + t by
// thread t), to and from shared memory at place(v):
template <typename Place>
__device__ __forceinline__ void load_block_vectors(const uint8_t* src, uint4* sm, Place place) {
  const uint4* src4 = reinterpret_cast<const uint4*>(src);
  uint4 loaded[4];  // all four loads in flight before the first store
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) loaded[i] = src4[i * kThreads + threadIdx.x];
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) sm[place(i * kThreads + threadIdx.x)] = loaded[i];
}
template <typename Place>
__device__ __forceinline__ void store_block_vectors(const uint4* sm, Place place, uint8_t* dst) {
  uint4* out = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned v = i * kThreads + threadIdx.x;
    out[v] = sm[place(v)];
  }
}

struct PlainBlock {
  __device__ static void load(const uint8_t* src, uint4* staged, uint4*) {
    load_block_vectors(src, staged, [](unsigned v) { return swizzled_vector<4>(v); });
  }
  __device__ static void store(const uint4* decoded, uint8_t* dst, uint4*) {
    store_block_vectors(decoded, [](unsigned v) { return swizzled_vector<4>(v); }, dst);
  }
};

// The G bytes (G = 1, 2 or 4) at byte `at` (a multiple of G) of a sub-chunk
// in that layout, as one little-endian integer.
template <unsigned G>
using StagedPiece = std::conditional_t<G == 4, uint32_t, std::conditional_t<G == 2, uint16_t, uint8_t>>;
template <unsigned G>
__device__ __forceinline__ StagedPiece<G>& staged_at(uint4* staged, unsigned at) {
  return reinterpret_cast<StagedPiece<G>*>(staged)[swizzled_vector<4>(at >> 4) * (16 / G) + (at & 15u) / G];
}
template <unsigned G>
__device__ __forceinline__ StagedPiece<G> staged_at(const uint4* staged, unsigned at) {
  return reinterpret_cast<const StagedPiece<G>*>(staged)[swizzled_vector<4>(at >> 4) * (16 / G) + (at & 15u) / G];
}

// ---- chained scan of the sub-chunk sizes ---------------------------------------

// A sub-chunk's published state: flag in the top two bits, value below.
constexpr uint64_t kSizeKnown = 1ull << 62;        // value: its own stored size
constexpr uint64_t kPrefixKnown = 2ull << 62;      // value: sizes up to and including it
constexpr uint64_t kStateValue = (1ull << 62) - 1;

__device__ __forceinline__ void publish(uint64_t* state, uint64_t value) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(state), "l"(value) : "memory");
}

__device__ __forceinline__ uint64_t observe(const uint64_t* state) {
  uint64_t value;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(state) : "memory");
  return value;
}

// Publishes sub-chunk `chunk`'s stored size as soon as it is known (the first
// sub-chunk's is already a prefix). One thread.
__device__ __forceinline__ void announce_size(uint64_t* states, size_t chunk, uint64_t size) {
  publish(&states[chunk], (chunk == 0 ? kPrefixKnown : kSizeKnown) | size);
}

// Called by all 32 threads of one warp after announce_size: the sum of the
// stored sizes of the sub-chunks before `chunk`, whose own size is `size`;
// publishes the prefix through it.
__device__ uint64_t look_back(uint64_t* states, size_t chunk, uint64_t size) {
  const unsigned lane = threadIdx.x & 31u;
  if (chunk == 0) return 0;
  uint64_t offset = 0;
  for (long long end = static_cast<long long>(chunk);; end -= 32) {
    const long long i = end - 1 - static_cast<long long>(lane);
    uint64_t state = kPrefixKnown;  // before sub-chunk 0: a known prefix of 0
    if (i >= 0) {
      do {
        state = observe(&states[i]);
      } while ((state >> 62) == 0);
    }
    const unsigned known = __ballot_sync(0xFFFFFFFFu, (state >> 62) == 2);
    const unsigned last = known ? static_cast<unsigned>(__ffs(known)) - 1 : 31u;  // nearest known prefix
    uint64_t value = lane <= last ? (state & kStateValue) : 0;
#pragma unroll
    for (unsigned d = 16; d > 0; d >>= 1) value += __shfl_xor_sync(0xFFFFFFFFu, value, d);
    offset += value;
    if (known) break;
  }
  if (lane == 0) publish(&states[chunk], kPrefixKnown | (offset + size));
  return offset;
}

// Block-wide scans and sums of the encoder and the size-table reader.
using PackedScan = cub::BlockScan<uint64_t, kThreads>;
using SizeReduce = cub::BlockReduce<unsigned, kThreads>;

}  // namespace
}  // namespace fz::elimination::cuda
