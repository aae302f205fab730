// The RZE/RRE CUDA encode kernels (schedule: elimination_cuda.cu): one block
// per sub-chunk, a fast path from registers for full sub-chunks of bytes and
// the general path through shared memory for the rest.
// Internal to the elimination coder: included by elimination_cuda.cu and by
// the kernels that fuse a stage in front of it (bitshuffle_rze/).
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "elimination/block_helpers_cuda.cuh"
#include "elimination/elimination_cuda.cuh"

namespace fz::elimination::cuda {
namespace {  // internal linkage: each including file instantiates what it launches

using namespace fz::elimination::cuda_detail;
using fz::cuda_detail::block_copy_bytes;
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;
using fz::cuda_detail::swizzled_vector;

// ---- encode ----------------------------------------------------------------


// Shared memory of the encoder: the fast path's staged input and coded
// output, or the general path's sub-chunk, levels and ranks.
struct FastEncodeShared {
  uint4 staged[kBlockBytes / 16];
  uint4 coded[kBlockBytes / 16];  // zeroed first: kept bytes are ORed into words two threads share
  uint32_t last_b0[kThreads / 32];
  uint32_t last_b1[kThreads / 32];
  uint32_t b2[kThreads / 32];
  ByteMaskSelectors selectors;
  typename PackedScan::TempStorage scan;
};
struct GeneralEncodeShared {
  uint8_t data[kBlockBytes];
  uint8_t levels[kLevelStorage];
  unsigned prefix[kMaxBitmapBytes];
  union {
    typename PopcountScan::TempStorage scan;
    typename SizeReduce::TempStorage reduce;
  };
};
union EncodeShared {
  FastEncodeShared fast;
  GeneralEncodeShared general;
};

struct EncodeTile {
  size_t chunk;
  unsigned size;
  uint64_t offset;
  uint32_t b3;
};

__device__ __forceinline__ unsigned packed_field(uint64_t v, unsigned field) {
  return static_cast<unsigned>((v >> (20 * field)) & 0xFFFFFu);
}

// Thread t's kept input bytes (bit j of kept: byte 64t + j of the staged
// sub-chunk is not zero) written in order from byte `at` of `coded`, whose
// words past the levels are zero: four bytes at a time, packed in a register.
// The first and last word may hold a neighbour's bytes too, so those are ORed
// in; the words between are this thread's alone.
__device__ __forceinline__ void append_kept_bytes(const uint4* staged, const uint32_t kept[2], unsigned at,
                                                  const uint32_t* compact, uint32_t* coded) {
  const unsigned t = threadIdx.x;
  unsigned word = at / 4, fill = at % 4;  // bytes of `word` before this thread's next byte
  bool shared_word = fill != 0;
  uint64_t pending = 0;                   // the bytes of `word` (and one beyond) not yet written
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const uint4 x = staged[swizzled_vector<4>(4 * t + i)];
    const uint32_t in[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (unsigned c = 0; c < 4; ++c) {
      const unsigned q = 4 * i + c;  // the thread's input word q: bits 4q..4q+3 of kept
      const unsigned mask = (kept[q / 8] >> (4 * (q % 8))) & 0xFu;
      pending |= static_cast<uint64_t>(__byte_perm(in[c], 0u, compact[mask])) << (8 * fill);
      fill += static_cast<unsigned>(__popc(mask));
      if (fill >= 4) {
        if (shared_word) atomicOr(&coded[word], static_cast<uint32_t>(pending));
        else coded[word] = static_cast<uint32_t>(pending);
        shared_word = false;
        ++word;
        pending >>= 32;
        fill -= 4;
      }
    }
  }
  if (fill > 0) atomicOr(&coded[word], static_cast<uint32_t>(pending));
}

// RZE of a full sub-chunk of bytes (16-byte aligned input), as Block loads
// it (block_helpers_cuda.cuh). Levels: B_0 2048 bytes, B_1 256, B_2 32, B_3 4
// (the raw top). Thread t holds input bytes 64t..64t+63, B_0 bytes 8t..8t+7
// (b0[0], b0[1]) and B_1 byte t.
template <typename Block>
__device__ void encode_fast(const uint8_t* src, size_t chunks, uint8_t* out, uint64_t* states, EncodeTile& tile,
                            FastEncodeShared& sh) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  Block::load(src, sh.staged, sh.coded);
  __syncthreads();  // staged is complete, coded (the load's spare) free
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) sh.coded[i * kThreads + t] = make_uint4(0, 0, 0, 0);
  fill_selectors(sh.selectors);
  __syncthreads();
  uint32_t b0[2] = {0, 0};
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const uint4 x = sh.staged[swizzled_vector<4>(4 * t + i)];
    // Input words 4i..4i+3 are B_0 bytes 2i and 2i+1.
    const unsigned even = nonzero_bytes(x.x) | (nonzero_bytes(x.y) << 4);
    const unsigned odd = nonzero_bytes(x.z) | (nonzero_bytes(x.w) << 4);
    b0[i / 2] |= (even | (odd << 8)) << (16 * (i % 2));
  }
  if (lane == 31) sh.last_b0[warp] = b0[1] >> 24;
  __syncthreads();
  // B_1 bit j: B_0 byte 8t+j differs from the one before it (0 before the first).
  uint32_t before = __shfl_up_sync(0xFFFFFFFFu, b0[1] >> 24, 1);
  if (lane == 0) before = warp > 0 ? sh.last_b0[warp - 1] : 0u;
  const uint32_t b1 = differing_bytes(b0[0], (b0[0] << 8) | before) |
                      (differing_bytes(b0[1], (b0[1] << 8) | (b0[0] >> 24)) << 4);
  if (lane == 31) sh.last_b1[warp] = b1;
  __syncthreads();
  // B_2 bit t: B_1 byte t differs from byte t-1; a warp's ballot is 4 bytes of B_2.
  uint32_t b1_before = __shfl_up_sync(0xFFFFFFFFu, b1, 1);
  if (lane == 0) b1_before = warp > 0 ? sh.last_b1[warp - 1] : 0u;
  const bool b1_kept = b1 != b1_before;
  const uint32_t b2_word = __ballot_sync(0xFFFFFFFFu, b1_kept);
  if (lane == 0) sh.b2[warp] = b2_word;
  // Ranks: kept input bytes (field 0), kept B_0 bytes (1), kept B_1 bytes (2).
  const uint64_t mine = static_cast<uint64_t>(__popc(b0[0]) + __popc(b0[1])) |
                        (static_cast<uint64_t>(__popc(b1)) << 20) | (static_cast<uint64_t>(b1_kept) << 40);
  uint64_t rank = 0, all = 0;
  PackedScan(sh.scan).ExclusiveSum(mine, rank, all);
  __syncthreads();  // sh.b2 complete
  const unsigned kept_input = packed_field(all, 0), kept_b0 = packed_field(all, 1), kept_b1 = packed_field(all, 2);
  // B_3 (warp 0): bit i set iff B_2 byte i differs from byte i-1. The size
  // is announced at once; warp 0 looks back for the offset while the other
  // warps assemble the coded sub-chunk.
  uint8_t b2_byte = 0;
  bool b2_kept = false;
  if (warp == 0) {
    b2_byte = static_cast<uint8_t>(sh.b2[lane / 4] >> (8 * (lane % 4)));
    uint32_t b2_before = __shfl_up_sync(0xFFFFFFFFu, static_cast<uint32_t>(b2_byte), 1);
    if (lane == 0) b2_before = 0;
    b2_kept = b2_byte != b2_before;
    const uint32_t b3 = __ballot_sync(0xFFFFFFFFu, b2_kept);
    const unsigned coded = 4 + static_cast<unsigned>(__popc(b3)) + kept_b1 + kept_b0 + kept_input;
    const unsigned size = coded < kBlockBytes ? coded : kBlockBytes;
    if (lane == 0) {
      announce_size(states, tile.chunk, size);
      tile.size = size;
      tile.b3 = b3;
    }
  }
  __syncthreads();
  const unsigned size = tile.size;
  if (warp == 0) {
    const uint64_t offset = look_back(states, tile.chunk, size);
    if (lane == 0) tile.offset = offset;
  }
  if (size < kBlockBytes) {
    // B_3 | K_2 | K_1 | K_0 | kept bytes, assembled in shared memory while
    // warp 0 looks back. A level byte is ORed into its (zeroed) word, which
    // the next level's or the kept bytes' first word may share, so no barrier
    // separates the levels from the kept bytes.
    uint32_t* coded = reinterpret_cast<uint32_t*>(sh.coded);
    auto put_level_byte = [&](unsigned at, uint32_t byte) {
      atomicOr(&coded[at / 4], (byte & 0xFFu) << (8 * (at % 4)));
    };
    const unsigned k2 = static_cast<unsigned>(__popc(tile.b3));
    if (warp == 0) {
      if (lane == 0) coded[0] = tile.b3;  // a word of its own
      if (b2_kept) put_level_byte(4 + __popc(tile.b3 & ((1u << lane) - 1u)), b2_byte);
    }
    if (b1_kept) put_level_byte(4 + k2 + packed_field(rank, 2), b1);
    unsigned at = 4 + k2 + kept_b1 + packed_field(rank, 1);
#pragma unroll
    for (unsigned j = 0; j < 8; ++j) {
      if ((b1 >> j) & 1u) put_level_byte(at++, b0[j / 4] >> (8 * (j % 4)));
    }
    append_kept_bytes(sh.staged, b0, 4 + k2 + kept_b1 + kept_b0 + packed_field(rank, 0), sh.selectors.compact, coded);
  }
  __syncthreads();  // tile.offset and the coded sub-chunk
  uint8_t* dst = out + 8 + 2 * chunks + tile.offset;
  if (size == kBlockBytes) {
    store_bytes(dst, kBlockBytes, [&](unsigned q) { return staged_at<4>(sh.staged, 4 * q); });
  } else {
    const uint32_t* coded_words = reinterpret_cast<const uint32_t*>(sh.coded);
    store_bytes(dst, size, [&](unsigned q) { return coded_words[q]; });
  }
}

template <typename Word, bool kChanged>
__device__ void encode_general(const uint8_t* src, unsigned osize, size_t chunks, uint8_t* out, uint64_t* states,
                               EncodeTile& tile, GeneralEncodeShared& sh) {
  constexpr unsigned k = sizeof(Word);
  const unsigned words = osize / k;
  block_copy_bytes(src, sh.data, osize);
  __syncthreads();
  const LevelPlan plan = plan_levels(words);
  unsigned size = osize;  // raw unless coding is strictly smaller
  if (words > 0) {
    build_levels<Word, kChanged>(sh.data, words, plan, sh.levels);
    // Stored bytes: k per kept word (bits of B_0), one per kept byte of each
    // lower level (bits of B_1 .. B_top), the raw top level, the leftover bytes.
    unsigned mine = 0;
    for (unsigned b = threadIdx.x; b < plan.bytes(0); b += kThreads) mine += k * __popc(sh.levels[b]);
    for (unsigned l = 1; l < plan.count; ++l) {
      for (unsigned b = threadIdx.x; b < plan.bytes(l); b += kThreads) mine += __popc(sh.levels[plan.offset[l] + b]);
    }
    const unsigned kept = SizeReduce(sh.reduce).Sum(mine);
    const unsigned total = kept + plan.bytes(plan.top()) + osize % k;
    if (threadIdx.x == 0 && total < osize) tile.size = total;
  }
  if (threadIdx.x == 0 && (words == 0 || tile.size > osize)) tile.size = osize;
  __syncthreads();
  size = tile.size;
  if (threadIdx.x < 32) {
    if (threadIdx.x == 0) announce_size(states, tile.chunk, size);
    __syncwarp();
    const uint64_t offset = look_back(states, tile.chunk, size);
    if (threadIdx.x == 0) tile.offset = offset;
  }
  __syncthreads();
  uint8_t* dst = out + 8 + 2 * chunks + tile.offset;
  if (size == osize) {
    block_copy_bytes(sh.data, dst, osize);
    return;
  }
  // B_top | K_{top-1} | ... | K_0 | kept words | leftover bytes
  const unsigned top = plan.top();
  block_copy_bytes(sh.levels + plan.offset[top], dst, plan.bytes(top));
  unsigned pos = plan.bytes(top);
  for (unsigned l = top; l-- > 0;) {
    const uint8_t* above = sh.levels + plan.offset[l + 1];
    const uint8_t* level = sh.levels + plan.offset[l];
    const unsigned count = scan_popcounts(above, plan.bytes(l + 1), sh.prefix, sh.scan);
    for (unsigned i = threadIdx.x; i < plan.bits[l + 1]; i += kThreads) {
      if (bit_set(above, i)) dst[pos + rank_before(above, sh.prefix, i)] = level[i];
    }
    __syncthreads();  // prefix is rewritten by the next scan
    pos += count;
  }
  const unsigned kept_words = scan_popcounts(sh.levels, plan.bytes(0), sh.prefix, sh.scan);
  for (unsigned w = threadIdx.x; w < words; w += kThreads) {
    if (bit_set(sh.levels, w)) {
      const unsigned at = pos + rank_before(sh.levels, sh.prefix, w) * k;
#pragma unroll
      for (unsigned b = 0; b < k; ++b) dst[at + b] = sh.data[w * k + b];
    }
  }
  pos += kept_words * k;
  for (unsigned i = threadIdx.x; i < osize % k; i += kThreads) dst[pos + i] = sh.data[words * k + i];
}

// The input's length: on the host (a kernel argument), or written to the
// device by the stage before (a Huffman stream), read by every block; then
// the grid covers `capacity` bytes and the blocks past the length's
// sub-chunks leave at once.
struct InputLength {
  uint64_t n;                  // when on_device is null
  const uint64_t* on_device;   // or the length here, at most capacity
  uint64_t capacity;
};

// One block per sub-chunk, taken in start order from *ticket; the last one
// also writes the header and the stream's length. With a Block other than
// PlainBlock (RZE of bytes only, 16-aligned input: the caller's duty), full
// sub-chunks are coded from what Block::load makes of them and a partial
// last one from `tail`, where the caller put the same transform of it.
// At most 51 registers, so that five blocks share an SM (their shared
// memory allows six): the kernel spends most of its time waiting at barriers
// and on the look-back, which more resident blocks hide. sm_75 holds 1024
// threads an SM: four there.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr unsigned kEncodeBlocksPerSm = 4;
#else
constexpr unsigned kEncodeBlocksPerSm = 5;
#endif
template <typename Word, bool kChanged, typename Block = PlainBlock>
__global__ void __launch_bounds__(kThreads, kEncodeBlocksPerSm)
    encode_subchunks(const uint8_t* in, InputLength length, bool aligned_input, uint8_t* out, uint64_t* states,
                     unsigned* ticket, uint64_t* encoded_size, const uint8_t* tail) {
  constexpr bool kPlain = std::is_same_v<Block, PlainBlock>;
  static_assert(kPlain || (sizeof(Word) == 1 && !kChanged), "a fused block transform feeds RZE of bytes");
  __shared__ __align__(16) EncodeShared sh;
  __shared__ EncodeTile tile;
  if (threadIdx.x == 0) {
    tile.chunk = atomicAdd(ticket, 1u);
    tile.size = 0xFFFFFFFFu;
  }
  __syncthreads();
  const size_t chunk = tile.chunk;
  const uint64_t n = length.on_device ? *length.on_device : length.n;
  if (n > length.capacity) {  // a producer's bug: a length no allocation holds, refused by the host
    if (chunk == 0 && threadIdx.x == 0) *encoded_size = ~uint64_t{0};
    return;
  }
  const size_t chunks = chunks_of(n);
  if (chunk >= chunks) {  // past the input (uniform over the block; nothing waits on these)
    if (chunks == 0 && chunk == 0 && threadIdx.x == 0) {
      for (unsigned b = 0; b < 8; ++b) out[b] = 0;
      *encoded_size = 8;
    }
    return;
  }
  const unsigned osize = subchunk_length(n, chunk);
  const uint8_t* src = in + chunk * kBlockBytes;
  if (sizeof(Word) == 1 && !kChanged && osize == kBlockBytes && (aligned_input || !kPlain))
    encode_fast<Block>(src, chunks, out, states, tile, sh.fast);
  else
    encode_general<Word, kChanged>(kPlain ? src : tail, osize, chunks, out, states, tile, sh.general);
  if (chunk == chunks - 1 && threadIdx.x == 0) {
    // tile.offset + tile.size: every payload byte before this one's end.
    out[8 + 2 * chunk] = static_cast<uint8_t>(tile.size);
    out[8 + 2 * chunk + 1] = static_cast<uint8_t>(tile.size >> 8);
    for (unsigned b = 0; b < 8; ++b) out[b] = static_cast<uint8_t>(n >> (8 * b));
    *encoded_size = 8 + 2 * static_cast<uint64_t>(chunks) + tile.offset + tile.size;
  } else if (threadIdx.x == 0) {
    out[8 + 2 * chunk] = static_cast<uint8_t>(tile.size);
    out[8 + 2 * chunk + 1] = static_cast<uint8_t>(tile.size >> 8);
  }
}

// An empty input: the header alone.
__global__ void encode_empty(uint8_t* out, uint64_t* encoded_size) {
  for (unsigned b = 0; b < 8; ++b) out[b] = 0;
  *encoded_size = 8;
}

}  // namespace
}  // namespace fz::elimination::cuda
