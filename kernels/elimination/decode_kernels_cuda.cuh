// The RZE/RRE CUDA decode kernels (schedule: elimination_cuda.cu): the header
// and size table read and checked on the device, then one block per
// sub-chunk expands it (or copies a raw one); streams of few sub-chunks take
// it all in one launch.
// Internal to the elimination coder: included by elimination_cuda.cu and by
// the kernels that fuse a stage in front of it (bitshuffle_rze/).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "elimination/block_helpers_cuda.cuh"
#include "elimination/elimination_cuda.cuh"
#include "elimination/elimination_cuda.hpp"

namespace fz::elimination::cuda {
namespace {  // internal linkage: each including file instantiates what it launches

using namespace fz::elimination::cuda_detail;
using fz::cuda_detail::block_copy_bytes;
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;
using fz::cuda_detail::swizzled_vector;

// ---- decode ----------------------------------------------------------------

// The stream's n and sub-chunk count, and whether its size table can be read:
// it fits in the stream and n does not exceed max_out (then chunks <= the
// table capacity the host planned for).
struct Header {
  uint64_t n = 0;
  size_t chunks = 0;
  uint32_t status = 0;
};

__device__ inline Header read_header(const uint8_t* in, size_t in_size, size_t max_out) {
  Header h;
  if (in_size < 8) {
    h.status = kStreamShorterThanHeader;
    return h;
  }
  h.n = load_word<uint64_t>(in);
  if (h.n > max_out) h.status |= kDecodedSizeTooLarge;
  h.chunks = chunks_of(h.n);
  if (h.chunks > (in_size - 8) / 2) h.status |= kSizeTableTruncated;
  return h;
}

// sizes[i] = stored size of sub-chunk i (0 past the stream's sub-chunks), for
// i < table_capacity; flags sizes larger than their sub-chunk.
__global__ void read_size_table(const uint8_t* in, size_t in_size, size_t max_out, size_t table_capacity,
                                uint64_t* sizes, uint32_t* header_status, uint32_t* status) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= table_capacity) return;
  const Header h = read_header(in, in_size, max_out);
  uint64_t size = 0;
  if (h.status == 0 && i < h.chunks) {
    size = static_cast<uint64_t>(in[8 + 2 * i]) | (static_cast<uint64_t>(in[8 + 2 * i + 1]) << 8);
    if (size > subchunk_length(h.n, i)) {
      // The same bit whichever thread sets it first: the result is deterministic.
      atomicOr(header_status, static_cast<uint32_t>(kSubchunkSizeTooLarge));
      atomicOr(status, static_cast<uint32_t>(kSubchunkSizeTooLarge));
    }
  }
  sizes[i] = size;
}

__global__ void check_header(const uint8_t* in, size_t in_size, size_t max_out, const uint64_t* sizes,
                             const uint64_t* offsets, uint32_t* header_status, uint32_t* status) {
  const Header h = read_header(in, in_size, max_out);
  uint32_t flags = h.status;
  if (flags == 0) {
    const uint64_t payload = h.chunks > 0 ? offsets[h.chunks - 1] + sizes[h.chunks - 1] : 0;
    if (payload != in_size - 8 - 2 * static_cast<uint64_t>(h.chunks)) flags |= kPayloadLengthMismatch;
  }
  flags |= *header_status;
  *header_status = flags;
  *status |= flags;
}

// A size table of at most kSmallTableItems entries (64 MiB of output) is
// read, checked and scanned by one block in one launch, where the general
// path takes two memsets, the table read, a device-wide scan and the header
// check (five or six launches, about 4 us of host time each, most of a small
// chunk's decode): the same sizes, offsets and flags, so the same decoding and
// the same refusals.
constexpr unsigned kTableItemsPerThread = 16;
constexpr size_t kSmallTableItems = size_t{kThreads} * kTableItemsPerThread;

// (The body is a device function so that decode_few runs it too.)
__device__ void read_table_in_one_block(const uint8_t* in, size_t in_size, size_t max_out, size_t table_capacity,
                                        uint64_t* sizes, uint64_t* offsets, uint32_t* header_status,
                                        uint32_t* status) {
  __shared__ typename PackedScan::TempStorage scan;
  __shared__ uint32_t table_flags;
  if (threadIdx.x == 0) table_flags = 0;
  __syncthreads();
  const Header h = read_header(in, in_size, max_out);
  const size_t first = static_cast<size_t>(threadIdx.x) * kTableItemsPerThread;
  uint64_t local[kTableItemsPerThread];
  uint64_t total = 0;
#pragma unroll
  for (unsigned j = 0; j < kTableItemsPerThread; ++j) {
    const size_t i = first + j;
    uint64_t size = 0;
    if (h.status == 0 && i < table_capacity && i < h.chunks) {
      size = static_cast<uint64_t>(in[8 + 2 * i]) | (static_cast<uint64_t>(in[8 + 2 * i + 1]) << 8);
      if (size > subchunk_length(h.n, i)) atomicOr(&table_flags, static_cast<uint32_t>(kSubchunkSizeTooLarge));
    }
    local[j] = size;
    total += size;
  }
  uint64_t before = 0;
  PackedScan(scan).ExclusiveSum(total, before);
#pragma unroll
  for (unsigned j = 0; j < kTableItemsPerThread; ++j) {
    const size_t i = first + j;
    if (i < table_capacity) {
      sizes[i] = local[j];
      offsets[i] = before;
    }
    before += local[j];
  }
  __syncthreads();  // every size, offset and flag is in
  if (threadIdx.x == 0) {
    uint32_t flags = h.status;  // as check_header
    if (flags == 0) {
      const uint64_t payload = h.chunks > 0 ? offsets[h.chunks - 1] + sizes[h.chunks - 1] : 0;
      if (payload != in_size - 8 - 2 * static_cast<uint64_t>(h.chunks)) flags |= kPayloadLengthMismatch;
    }
    flags |= table_flags;
    *header_status = flags;
    *status = flags;
  }
}

__global__ void __launch_bounds__(kThreads)
    read_small_table(const uint8_t* in, size_t in_size, size_t max_out, size_t table_capacity, uint64_t* sizes,
                     uint64_t* offsets, uint32_t* header_status, uint32_t* status) {
  read_table_in_one_block(in, in_size, max_out, table_capacity, sizes, offsets, header_status, status);
}

// After every check: n for a valid stream, 0 otherwise (status != 0 implies
// nothing about how far decoding got).
__global__ void finish_decode(const uint8_t* in, const uint32_t* status, uint64_t* decoded_size) {
  *decoded_size = *status == 0 ? load_word<uint64_t>(in) : 0;
}

using RankScan = cub::BlockScan<unsigned, kThreads>;

struct FastDecodeShared {
  uint8_t payload[kBlockBytes + 32];  // the sub-chunk's stored bytes at payload[src % 16 ...]
  uint4 decoded[kBlockBytes / 16];
  uint32_t b2[kThreads / 32];
  ByteMaskSelectors selectors;
  typename RankScan::TempStorage scan;
};
struct GeneralDecodeShared {
  uint8_t levels[kLevelStorage];
  unsigned prefix[kMaxBitmapBytes];
  typename PopcountScan::TempStorage scan;
};
union DecodeShared {
  FastDecodeShared fast;
  GeneralDecodeShared general;
};

// A raw sub-chunk into 4-aligned dst, through shared memory.
__device__ void copy_raw(const uint8_t* src, unsigned osize, uint8_t* dst, FastDecodeShared& sh) {
  stage_bytes(src, osize, sh.payload);
  __syncthreads();
  const unsigned a = static_cast<unsigned>(reinterpret_cast<uintptr_t>(src) & 15u);
  const uint32_t* words = reinterpret_cast<const uint32_t*>(sh.payload) + a / 4;
  const unsigned shift = 8 * (a % 4);
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  for (unsigned w = threadIdx.x; w < osize / 4; w += kThreads) out[w] = __funnelshift_r(words[w], words[w + 1], shift);
  for (unsigned i = osize / 4 * 4 + threadIdx.x; i < osize; i += kThreads) dst[i] = sh.payload[a + i];
}

// A coded full sub-chunk of bytes (16-byte aligned dst): the levels B_3 (4
// bytes), B_2 (32), B_1 (256, byte t in thread t), B_0 (2048, bytes 8t..8t+7
// in thread t), then output bytes 64t..64t+63 from thread t. The checks are
// decode_general's, in its order (no padding bits: every level is whole bytes).
template <bool kRepeat, typename Block>
__device__ void decode_fast(const uint8_t* src, unsigned size, uint8_t* dst, uint32_t* status,
                            FastDecodeShared& sh) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  auto reject = [&](uint32_t bit) {
    if (t == 0) atomicOr(status, bit);
  };
  stage_bytes(src, size, sh.payload);
  if (!kRepeat) fill_selectors(sh.selectors);
  __syncthreads();
  const uint8_t* p = sh.payload + (reinterpret_cast<uintptr_t>(src) & 15u);
  if (size < 4) return reject(kTopBitmapTruncated);
  const uint32_t b3 = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                      (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  unsigned pos = 4;
  const unsigned k2 = static_cast<unsigned>(__popc(b3));
  if (k2 > size - pos) return reject(kBitmapLevelTruncated);
  // B_2 byte i (i < 32, warp 0): the kept byte of its inclusive rank in B_3.
  if (warp == 0) {
    const unsigned rank = static_cast<unsigned>(__popc(b3 & (0xFFFFFFFFu >> (31 - lane))));
    const uint32_t byte = rank > 0 ? p[pos + rank - 1] : 0u;
    // Lanes 4w..4w+3 make word w of B_2.
    uint32_t word = byte << (8 * (lane % 4));
    word |= __shfl_xor_sync(0xFFFFFFFFu, word, 1);
    word |= __shfl_xor_sync(0xFFFFFFFFu, word, 2);
    if (lane % 4 == 0) sh.b2[lane / 4] = word;
  }
  __syncthreads();
  pos += k2;
  unsigned k1 = 0, b1_rank = 0;
#pragma unroll
  for (unsigned w = 0; w < kThreads / 32; ++w) {
    const uint32_t word = sh.b2[w];
    k1 += static_cast<unsigned>(__popc(word));
    if (w < warp) b1_rank += static_cast<unsigned>(__popc(word));
    if (w == warp) b1_rank += static_cast<unsigned>(__popc(word & (0xFFFFFFFFu >> (31 - lane))));
  }
  if (k1 > size - pos) return reject(kBitmapLevelTruncated);
  const uint32_t b1 = b1_rank > 0 ? p[pos + b1_rank - 1] : 0u;
  pos += k1;
  unsigned b0_first = 0, k0 = 0;
  RankScan(sh.scan).ExclusiveSum(static_cast<unsigned>(__popc(b1)), b0_first, k0);
  if (k0 > size - pos) return reject(kBitmapLevelTruncated);
  uint32_t b0[2] = {0, 0};
  unsigned rank = b0_first;
#pragma unroll
  for (unsigned j = 0; j < 8; ++j) {
    rank += (b1 >> j) & 1u;
    const uint32_t byte = rank > 0 ? p[pos + rank - 1] : 0u;
    b0[j / 4] |= byte << (8 * (j % 4));
  }
  pos += k0;
  __syncthreads();  // sh.scan is reused
  unsigned kept_first = 0, kept = 0;
  RankScan(sh.scan).ExclusiveSum(static_cast<unsigned>(__popc(b0[0]) + __popc(b0[1])), kept_first, kept);
  if (size - pos != kept) return reject(kSubchunkLengthMismatch);
  const uint8_t* values = p + pos;
  uint32_t r[16];
  if (kRepeat) {  // a dropped byte repeats the one before: byte by byte
    rank = kept_first;
#pragma unroll
    for (unsigned m = 0; m < 64; ++m) {
      const unsigned set = (b0[m / 32] >> (m % 32)) & 1u;
      rank += set;
      const uint32_t byte = rank > 0 ? values[rank - 1] : 0u;
      if (m % 4 == 0) r[m / 4] = byte;
      else r[m / 4] |= byte << (8 * (m % 4));
    }
  } else {
    // Four output bytes at a time: the next kept bytes, a window read from two
    // aligned shared words, spread to their places. payload holds 32 bytes
    // past the largest sub-chunk, so the word after the last is in it (its
    // bytes are never selected).
    const uint32_t* payload_words = reinterpret_cast<const uint32_t*>(sh.payload);
    unsigned at = static_cast<unsigned>(values - sh.payload) + kept_first;
    unsigned word = at / 4;
    uint32_t low = payload_words[word], high = payload_words[word + 1];
#pragma unroll
    for (unsigned q = 0; q < 16; ++q) {
      const unsigned mask = (b0[q / 8] >> (4 * (q % 8))) & 0xFu;
      r[q] = __byte_perm(__funnelshift_r(low, high, 8 * (at % 4)), 0u, sh.selectors.expand[mask]);
      at += static_cast<unsigned>(__popc(mask));
      if (at / 4 != word) {  // at most one word on: a mask keeps at most 4 bytes
        ++word;
        low = high;
        high = payload_words[word + 1];
      }
    }
  }
#pragma unroll
  for (unsigned i = 0; i < 4; ++i)
    sh.decoded[swizzled_vector<4>(4 * t + i)] = make_uint4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
  __syncthreads();  // decoded is complete; payload is no longer read
  Block::store(sh.decoded, dst, reinterpret_cast<uint4*>(sh.payload));
}

// A raw full sub-chunk (any alignment) through Block::store to 16-aligned dst:
// staged, shifted into the fast path's decoded layout, stored.
template <typename Block>
__device__ void copy_raw_block(const uint8_t* src, uint8_t* dst, FastDecodeShared& sh) {
  stage_bytes(src, kBlockBytes, sh.payload);
  __syncthreads();
  const unsigned a = static_cast<unsigned>(reinterpret_cast<uintptr_t>(src) & 15u);
  const uint32_t* words = reinterpret_cast<const uint32_t*>(sh.payload) + a / 4;  // 32 spare bytes: q + 1 is in
  const unsigned shift = 8 * (a % 4);
  auto word = [&](unsigned q) { return __funnelshift_r(words[q], words[q + 1], shift); };
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned v = i * kThreads + threadIdx.x;
    sh.decoded[swizzled_vector<4>(v)] = make_uint4(word(4 * v), word(4 * v + 1), word(4 * v + 2), word(4 * v + 3));
  }
  __syncthreads();
  Block::store(sh.decoded, dst, reinterpret_cast<uint4*>(sh.payload));
}

template <typename Word, bool kRepeat>
__device__ void decode_general(const uint8_t* src, unsigned osize, unsigned size, uint8_t* dst, uint32_t* status,
                               GeneralDecodeShared& sh) {
  // Every check below depends only on values all threads share (after a
  // barrier), so the whole block leaves together.
  auto reject = [&](uint32_t bit) {
    if (threadIdx.x == 0) atomicOr(status, bit);
  };
  constexpr unsigned k = sizeof(Word);
  const unsigned words = osize / k;
  const LevelPlan plan = plan_levels(words);
  const unsigned top = plan.top();
  if (plan.bytes(top) > size) return reject(kTopBitmapTruncated);
  block_copy_bytes(src, sh.levels + plan.offset[top], plan.bytes(top));
  __syncthreads();
  if (!padding_clear(sh.levels + plan.offset[top], plan.bits[top])) return reject(kPaddingBitsSet);
  unsigned pos = plan.bytes(top);

  for (unsigned l = top; l-- > 0;) {
    const uint8_t* above = sh.levels + plan.offset[l + 1];
    uint8_t* level = sh.levels + plan.offset[l];
    const unsigned count = scan_popcounts(above, plan.bytes(l + 1), sh.prefix, sh.scan);
    if (count > size - pos) return reject(kBitmapLevelTruncated);
    // A dropped byte repeats the previous byte (from 0): byte i is the kept
    // byte of its inclusive rank.
    for (unsigned i = threadIdx.x; i < plan.bits[l + 1]; i += kThreads) {
      const unsigned rank = rank_before(above, sh.prefix, i) + (bit_set(above, i) ? 1u : 0u);
      level[i] = rank > 0 ? src[pos + rank - 1] : uint8_t{0};
    }
    __syncthreads();
    if (!padding_clear(level, plan.bits[l])) return reject(kPaddingBitsSet);
    pos += count;
  }

  const unsigned kept_words = scan_popcounts(sh.levels, plan.bytes(0), sh.prefix, sh.scan);
  if (size - pos != kept_words * k + osize % k) return reject(kSubchunkLengthMismatch);
  const uint8_t* kept = src + pos;
  for (unsigned w = threadIdx.x; w < words; w += kThreads) {
    const bool set = bit_set(sh.levels, w);
    const unsigned rank = rank_before(sh.levels, sh.prefix, w) + (set ? 1u : 0u);
    Word v = 0;
    if (kRepeat ? rank > 0 : set) v = load_word<Word>(kept + (rank - 1) * k);
    store_word<Word>(dst + w * k, v);
  }
  for (unsigned i = threadIdx.x; i < osize % k; i += kThreads) dst[words * k + i] = kept[kept_words * k + i];
}

// Sub-chunk `chunk` (< chunks_of(n)) of a stream whose table checked out,
// by the whole block. With a Block other than PlainBlock (RZE of bytes only,
// 16-aligned out: the caller's duty), full sub-chunks go out through
// Block::store and a partial last one to `tail`, for the caller to finish.
template <typename Word, bool kRepeat, typename Block>
__device__ void decode_subchunk(const uint8_t* in, uint64_t n, size_t chunk, uint8_t* out, const uint64_t* sizes,
                                const uint64_t* offsets, uint32_t* status, DecodeShared& sh, uint8_t* tail) {
  constexpr bool kPlain = std::is_same_v<Block, PlainBlock>;
  static_assert(kPlain || (sizeof(Word) == 1 && !kRepeat), "a fused block transform follows RZE of bytes");
  const size_t chunks = chunks_of(n);
  const unsigned osize = subchunk_length(n, chunk);
  const unsigned size = static_cast<unsigned>(sizes[chunk]);  // <= osize: checked with the table
  const uint8_t* src = in + 8 + 2 * chunks + offsets[chunk];
  uint8_t* dst = kPlain || osize == kBlockBytes ? out + chunk * kBlockBytes : tail;
  const uintptr_t dst_address = reinterpret_cast<uintptr_t>(dst);
  if (!kPlain && osize == kBlockBytes) {
    if (size == osize) copy_raw_block<Block>(src, dst, sh.fast);
    else decode_fast<kRepeat, Block>(src, size, dst, status, sh.fast);
  } else if (size == osize) {
    if ((dst_address & 3u) == 0) copy_raw(src, osize, dst, sh.fast);
    else block_copy_bytes(src, dst, osize);
  } else if (sizeof(Word) == 1 && osize == kBlockBytes && (dst_address & 15u) == 0) {
    decode_fast<kRepeat, PlainBlock>(src, size, dst, status, sh.fast);
  } else {
    decode_general<Word, kRepeat>(src, osize, size, dst, status, sh.general);
  }
}

template <typename Word, bool kRepeat, typename Block = PlainBlock>
__global__ void __launch_bounds__(kThreads)
    decode_subchunks(const uint8_t* in, uint8_t* out, const uint64_t* sizes, const uint64_t* offsets,
                     const uint32_t* header_status, uint32_t* status, uint8_t* tail) {
  __shared__ __align__(16) DecodeShared sh;
  if (*header_status != 0) return;  // sizes and offsets are meaningless
  const uint64_t n = load_word<uint64_t>(in);
  if (blockIdx.x >= chunks_of(n)) return;
  decode_subchunk<Word, kRepeat, Block>(in, n, blockIdx.x, out, sizes, offsets, status, sh, tail);
}

// A stream of at most kFewSubchunks sub-chunks (64 KiB of output) decoded by
// one block in one launch: the table (read_small_table), each sub-chunk in
// turn (decode_subchunks), then finish_decode, where the general path takes
// three launches (about 4 us of host time each on the H100 machine).
constexpr size_t kFewSubchunks = 4;

template <typename Word, bool kRepeat, typename Block = PlainBlock>
__global__ void __launch_bounds__(kThreads)
    decode_few(const uint8_t* in, size_t in_size, size_t max_out, size_t table_capacity, uint8_t* out,
               uint64_t* sizes, uint64_t* offsets, uint32_t* header_status, uint32_t* status,
               uint64_t* decoded_size, uint8_t* tail) {
  __shared__ __align__(16) DecodeShared sh;
  read_table_in_one_block(in, in_size, max_out, table_capacity, sizes, offsets, header_status, status);
  __syncthreads();  // the table, its flags and the status word are written
  if (*header_status == 0) {
    const uint64_t n = load_word<uint64_t>(in);
    const size_t chunks = chunks_of(n);
    for (size_t chunk = 0; chunk < table_capacity && chunk < chunks; ++chunk) {
      decode_subchunk<Word, kRepeat, Block>(in, n, chunk, out, sizes, offsets, status, sh, tail);
      __syncthreads();  // sh is reused, and every verdict is in before the last
    }
  }
  if (threadIdx.x == 0) *decoded_size = *status == 0 ? load_word<uint64_t>(in) : 0;  // as finish_decode
}

}  // namespace
}  // namespace fz::elimination::cuda
