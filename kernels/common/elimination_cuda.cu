// CUDA implementation of the RZE/RRE stream format (common/elimination.hpp),
// host interface in common/elimination_cuda.hpp.
//
// One thread block codes one sub-chunk, in shared memory. Encoding is one
// kernel: each block measures its sub-chunk's stored size (the CPU's rule:
// raw unless coding is strictly smaller), finds where its payload starts by a
// chained scan over the sub-chunks before it (decoupled look-back: each block
// publishes its size, then its inclusive prefix; blocks take sub-chunks in the
// order they start, from a ticket counter, so every block waited on is
// running), and writes the size table entry and the payload. Offsets are
// prefix sums, so the bytes never depend on scheduling. RZE of bytes over a
// full 16 KiB sub-chunk (the presets' case) is coded from registers: a thread
// owns 64 bytes (B_0 bytes 8t..8t+7, B_1 byte t), the bitmaps come from SIMD
// byte compares and warp ballots, kept bytes and bitmap bytes are placed by
// one block-wide scan, and the coded sub-chunk is assembled in shared memory
// and stored with aligned 32-bit writes. Other word sizes, RRE and the
// partial last sub-chunk build every bitmap level in shared memory and place
// every kept byte and word at its rank among the set bits.
// Decoding validates the header and size table on the device (read_size_table,
// a scan, check_header), then decode_subchunks checks and expands each
// sub-chunk: an element's value is the kept element of its inclusive rank (RRE
// and the upper levels: the last kept one at or before it, 0 if none). A full
// sub-chunk of bytes is staged in shared memory with 16-byte loads and
// expanded per thread (64 output bytes each); raw sub-chunks are copied
// through shared memory with aligned loads and stores.
#include "common/elimination_cuda.hpp"

#include <cub/device/device_scan.cuh>

#include "common/elimination_cuda.cuh"

namespace fz::elimination::cuda {
namespace {

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

// ---- encode ----------------------------------------------------------------

using PackedScan = cub::BlockScan<uint64_t, kThreads>;
using SizeReduce = cub::BlockReduce<unsigned, kThreads>;

// Shared memory of the encoder: the fast path's staged input and coded
// output, or the general path's sub-chunk, levels and ranks.
struct FastEncodeShared {
  uint4 staged[kBlockBytes / 16];
  __align__(16) uint8_t coded[kBlockBytes];
  uint32_t last_b0[kThreads / 32];
  uint32_t last_b1[kThreads / 32];
  uint32_t b2[kThreads / 32];
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

// The byte at offset i / 32-bit word q of the fast path's staged sub-chunk.
__device__ __forceinline__ uint8_t staged_byte(const uint4* staged, unsigned i) {
  return reinterpret_cast<const uint8_t*>(staged)[(swizzled_vector<4>(i >> 4) << 4) | (i & 15u)];
}
__device__ __forceinline__ uint32_t staged_word(const uint4* staged, unsigned q) {
  return reinterpret_cast<const uint32_t*>(staged)[(swizzled_vector<4>(q >> 2) << 2) | (q & 3u)];
}

// RZE of a full sub-chunk of bytes (16-byte aligned input). Levels: B_0 2048
// bytes, B_1 256, B_2 32, B_3 4 (the raw top). Thread t holds input bytes
// 64t..64t+63, B_0 bytes 8t..8t+7 (b0[0], b0[1]) and B_1 byte t.
__device__ void encode_fast(const uint8_t* src, size_t chunks, uint8_t* out, uint64_t* states, EncodeTile& tile,
                            FastEncodeShared& sh) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const uint4* src4 = reinterpret_cast<const uint4*>(src);
  uint4 loaded[4];  // all four loads in flight before the first store
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) loaded[i] = src4[i * kThreads + t];
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) sh.staged[swizzled_vector<4>(i * kThreads + t)] = loaded[i];
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
    // B_3 | K_2 | K_1 | K_0 | kept bytes, assembled in shared memory.
    const unsigned k2 = static_cast<unsigned>(__popc(tile.b3));
    if (warp == 0) {
      if (lane < 4) sh.coded[lane] = static_cast<uint8_t>(tile.b3 >> (8 * lane));
      if (b2_kept) sh.coded[4 + __popc(tile.b3 & ((1u << lane) - 1u))] = b2_byte;
    }
    if (b1_kept) sh.coded[4 + k2 + packed_field(rank, 2)] = static_cast<uint8_t>(b1);
    unsigned at = 4 + k2 + kept_b1 + packed_field(rank, 1);
#pragma unroll
    for (unsigned j = 0; j < 8; ++j) {
      if ((b1 >> j) & 1u) sh.coded[at++] = static_cast<uint8_t>(b0[j / 4] >> (8 * (j % 4)));
    }
    at = 4 + k2 + kept_b1 + kept_b0 + packed_field(rank, 0);
    uint64_t kept = static_cast<uint64_t>(b0[0]) | (static_cast<uint64_t>(b0[1]) << 32);
    while (kept) {
      const unsigned j = static_cast<unsigned>(__ffsll(static_cast<long long>(kept))) - 1;
      sh.coded[at++] = staged_byte(sh.staged, 64 * t + j);
      kept &= kept - 1;
    }
  }
  __syncthreads();  // tile.offset and the coded sub-chunk
  uint8_t* dst = out + 8 + 2 * chunks + tile.offset;
  if (size == kBlockBytes) {
    store_bytes(dst, kBlockBytes, [&](unsigned q) { return staged_word(sh.staged, q); });
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

// One block per sub-chunk, taken in start order from *ticket; the last one
// also writes the header and the stream's length.
template <typename Word, bool kChanged>
__global__ void __launch_bounds__(kThreads)
    encode_subchunks(const uint8_t* in, uint64_t n, size_t chunks, bool aligned_input, uint8_t* out,
                     uint64_t* states, unsigned* ticket, uint64_t* encoded_size) {
  __shared__ __align__(16) EncodeShared sh;
  __shared__ EncodeTile tile;
  if (threadIdx.x == 0) {
    tile.chunk = atomicAdd(ticket, 1u);
    tile.size = 0xFFFFFFFFu;
  }
  __syncthreads();
  const size_t chunk = tile.chunk;
  const unsigned osize = subchunk_length(n, chunk);
  const uint8_t* src = in + chunk * kBlockBytes;
  if (sizeof(Word) == 1 && !kChanged && osize == kBlockBytes && aligned_input)
    encode_fast(src, chunks, out, states, tile, sh.fast);
  else
    encode_general<Word, kChanged>(src, osize, chunks, out, states, tile, sh.general);
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
template <bool kRepeat>
__device__ void decode_fast(const uint8_t* src, unsigned size, uint8_t* dst, uint32_t* status,
                            FastDecodeShared& sh) {
  const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  auto reject = [&](uint32_t bit) {
    if (t == 0) atomicOr(status, bit);
  };
  stage_bytes(src, size, sh.payload);
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
  rank = kept_first;
#pragma unroll
  for (unsigned m = 0; m < 64; ++m) {
    const unsigned set = (b0[m / 32] >> (m % 32)) & 1u;
    rank += set;
    const uint32_t byte = (kRepeat ? rank > 0 : set != 0) ? values[rank - 1] : 0u;
    if (m % 4 == 0) r[m / 4] = byte;
    else r[m / 4] |= byte << (8 * (m % 4));
  }
#pragma unroll
  for (unsigned i = 0; i < 4; ++i)
    sh.decoded[swizzled_vector<4>(4 * t + i)] = make_uint4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
  __syncthreads();
  uint4* out = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (unsigned i = 0; i < 4; ++i) {
    const unsigned v = i * kThreads + t;
    out[v] = sh.decoded[swizzled_vector<4>(v)];
  }
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
// by the whole block.
template <typename Word, bool kRepeat>
__device__ void decode_subchunk(const uint8_t* in, uint64_t n, size_t chunk, uint8_t* out, const uint64_t* sizes,
                                const uint64_t* offsets, uint32_t* status, DecodeShared& sh) {
  const size_t chunks = chunks_of(n);
  const unsigned osize = subchunk_length(n, chunk);
  const unsigned size = static_cast<unsigned>(sizes[chunk]);  // <= osize: checked with the table
  const uint8_t* src = in + 8 + 2 * chunks + offsets[chunk];
  uint8_t* dst = out + chunk * kBlockBytes;
  const uintptr_t dst_address = reinterpret_cast<uintptr_t>(dst);
  if (size == osize) {
    if ((dst_address & 3u) == 0) copy_raw(src, osize, dst, sh.fast);
    else block_copy_bytes(src, dst, osize);
  } else if (sizeof(Word) == 1 && osize == kBlockBytes && (dst_address & 15u) == 0) {
    decode_fast<kRepeat>(src, size, dst, status, sh.fast);
  } else {
    decode_general<Word, kRepeat>(src, osize, size, dst, status, sh.general);
  }
}

template <typename Word, bool kRepeat>
__global__ void __launch_bounds__(kThreads)
    decode_subchunks(const uint8_t* in, uint8_t* out, const uint64_t* sizes, const uint64_t* offsets,
                     const uint32_t* header_status, uint32_t* status) {
  __shared__ __align__(16) DecodeShared sh;
  if (*header_status != 0) return;  // sizes and offsets are meaningless
  const uint64_t n = load_word<uint64_t>(in);
  if (blockIdx.x >= chunks_of(n)) return;
  decode_subchunk<Word, kRepeat>(in, n, blockIdx.x, out, sizes, offsets, status, sh);
}

// A stream of at most kFewSubchunks sub-chunks (64 KiB of output) decoded by
// one block in one launch: the table (read_small_table), each sub-chunk in
// turn (decode_subchunks), then finish_decode, where the general path takes
// three launches (about 4 us of host time each on the H100 machine).
constexpr size_t kFewSubchunks = 4;

template <typename Word, bool kRepeat>
__global__ void __launch_bounds__(kThreads)
    decode_few(const uint8_t* in, size_t in_size, size_t max_out, size_t table_capacity, uint8_t* out,
               uint64_t* sizes, uint64_t* offsets, uint32_t* header_status, uint32_t* status,
               uint64_t* decoded_size) {
  __shared__ __align__(16) DecodeShared sh;
  read_table_in_one_block(in, in_size, max_out, table_capacity, sizes, offsets, header_status, status);
  __syncthreads();  // the table, its flags and the status word are written
  if (*header_status == 0) {
    const uint64_t n = load_word<uint64_t>(in);
    const size_t chunks = chunks_of(n);
    for (size_t chunk = 0; chunk < table_capacity && chunk < chunks; ++chunk) {
      decode_subchunk<Word, kRepeat>(in, n, chunk, out, sizes, offsets, status, sh);
      __syncthreads();  // sh is reused, and every verdict is in before the last
    }
  }
  if (threadIdx.x == 0) *decoded_size = *status == 0 ? load_word<uint64_t>(in) : 0;  // as finish_decode
}

// ---- host dispatch -----------------------------------------------------------

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

size_t scan_storage_bytes(size_t items) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                static_cast<int>(items));
  return bytes;
}

// Scratch = sizes[items] | offsets[items] | scan storage | (decode) header status.
struct ScratchLayout {
  uint64_t* sizes;
  uint64_t* offsets;
  void* scan;
  size_t scan_bytes;
  uint32_t* header_status;
};

size_t scratch_bytes_for(size_t items) {
  return 2 * aligned(items * sizeof(uint64_t)) + aligned(scan_storage_bytes(items)) + kAlign;
}

ScratchLayout layout(void* scratch, size_t items) {
  auto* base = static_cast<uint8_t*>(scratch);
  ScratchLayout s;
  s.sizes = reinterpret_cast<uint64_t*>(base);
  base += aligned(items * sizeof(uint64_t));
  s.offsets = reinterpret_cast<uint64_t*>(base);
  base += aligned(items * sizeof(uint64_t));
  s.scan = base;
  s.scan_bytes = scan_storage_bytes(items);
  base += aligned(s.scan_bytes);
  s.header_status = reinterpret_cast<uint32_t*>(base);
  return s;
}

// Encode scratch = the sub-chunks' chained-scan states | the ticket counter, all zeroed.
struct EncodeScratch {
  uint64_t* states;
  unsigned* ticket;
  size_t bytes;
};

EncodeScratch encode_scratch(void* scratch, size_t chunks) {
  auto* base = static_cast<uint8_t*>(scratch);
  EncodeScratch s;
  s.states = reinterpret_cast<uint64_t*>(base);
  s.ticket = reinterpret_cast<unsigned*>(base + aligned(chunks * sizeof(uint64_t)));
  s.bytes = aligned(chunks * sizeof(uint64_t)) + sizeof(unsigned);
  return s;
}

// The most sub-chunks a stream of in_size bytes decoding to at most max_out
// bytes can have (its size table must fit in the stream).
size_t table_capacity(size_t in_size, size_t max_out) {
  const size_t by_stream = in_size >= 8 ? (in_size - 8) / 2 : 0;
  const size_t by_output = chunks_of(max_out);
  return by_stream < by_output ? by_stream : by_output;
}

bool valid_word_size(unsigned k) { return k == 1 || k == 2 || k == 4 || k == 8; }

template <typename Word, bool kChanged>
cudaError_t encode_typed(const uint8_t* in, size_t n, uint8_t* out, uint64_t* encoded_size, void* scratch,
                         cudaStream_t stream) {
  const size_t chunks = chunks_of(n);
  if (chunks == 0) {
    encode_empty<<<1, 1, 0, stream>>>(out, encoded_size);
    return cudaGetLastError();
  }
  if (chunks > 0xFFFFFFFFu) return cudaErrorInvalidValue;  // the ticket counter is 32-bit
  const EncodeScratch s = encode_scratch(scratch, chunks);
  cudaError_t err = cudaMemsetAsync(scratch, 0, s.bytes, stream);
  if (err != cudaSuccess) return err;
  const bool aligned_input = (reinterpret_cast<uintptr_t>(in) & 15u) == 0;
  encode_subchunks<Word, kChanged><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(
      in, n, chunks, aligned_input, out, s.states, s.ticket, encoded_size);
  return cudaGetLastError();
}

template <typename Word, bool kRepeat>
cudaError_t decode_typed(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out, uint64_t* decoded_size,
                         uint32_t* status, void* scratch, cudaStream_t stream) {
  const size_t capacity = table_capacity(in_size, max_out);
  const ScratchLayout s = layout(scratch, capacity);
  if (capacity <= kFewSubchunks) {
    decode_few<Word, kRepeat><<<1, kThreads, 0, stream>>>(in, in_size, max_out, capacity, out, s.sizes, s.offsets,
                                                          s.header_status, status, decoded_size);
    return cudaGetLastError();
  }
  if (capacity <= kSmallTableItems) {
    read_small_table<<<1, kThreads, 0, stream>>>(in, in_size, max_out, capacity, s.sizes, s.offsets,
                                                 s.header_status, status);
  } else {
    cudaError_t err = cudaMemsetAsync(status, 0, sizeof(uint32_t), stream);
    if (err == cudaSuccess) err = cudaMemsetAsync(s.header_status, 0, sizeof(uint32_t), stream);
    if (err != cudaSuccess) return err;
    const unsigned blocks = static_cast<unsigned>((capacity + kThreads - 1) / kThreads);
    read_size_table<<<blocks, kThreads, 0, stream>>>(in, in_size, max_out, capacity, s.sizes, s.header_status,
                                                      status);
    size_t scan_bytes = s.scan_bytes;
    err = cub::DeviceScan::ExclusiveSum(s.scan, scan_bytes, s.sizes, s.offsets, static_cast<int>(capacity), stream);
    if (err != cudaSuccess) return err;
    check_header<<<1, 1, 0, stream>>>(in, in_size, max_out, s.sizes, s.offsets, s.header_status, status);
  }
  if (capacity > 0) {
    decode_subchunks<Word, kRepeat><<<static_cast<unsigned>(capacity), kThreads, 0, stream>>>(
        in, out, s.sizes, s.offsets, s.header_status, status);
  }
  finish_decode<<<1, 1, 0, stream>>>(in, status, decoded_size);
  return cudaGetLastError();
}

template <bool kChanged>
cudaError_t encode_rule(const uint8_t* in, size_t n, unsigned k, uint8_t* out, uint64_t* encoded_size,
                        void* scratch, cudaStream_t stream) {
  switch (k) {
    case 1: return encode_typed<uint8_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    case 2: return encode_typed<uint16_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    case 4: return encode_typed<uint32_t, kChanged>(in, n, out, encoded_size, scratch, stream);
    default: return encode_typed<uint64_t, kChanged>(in, n, out, encoded_size, scratch, stream);
  }
}

template <bool kRepeat>
cudaError_t decode_rule(const uint8_t* in, size_t in_size, unsigned k, uint8_t* out, size_t max_out,
                        uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  switch (k) {
    case 1: return decode_typed<uint8_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 2: return decode_typed<uint16_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    case 4: return decode_typed<uint32_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
    default: return decode_typed<uint64_t, kRepeat>(in, in_size, out, max_out, decoded_size, status, scratch, stream);
  }
}

}  // namespace

size_t max_encoded_bytes(size_t n) { return 8 + 2 * chunks_of(n) + n; }

size_t encode_scratch_bytes(size_t n) { return aligned(chunks_of(n) * sizeof(uint64_t)) + kAlign; }

size_t decode_scratch_bytes(size_t in_size, size_t max_out) {
  return scratch_bytes_for(table_capacity(in_size, max_out));
}

cudaError_t encode(const uint8_t* in, size_t n, unsigned word_size, Rule rule, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream) {
  if (!valid_word_size(word_size)) return cudaErrorInvalidValue;
  return rule == Rule::kChanged ? encode_rule<true>(in, n, word_size, out, encoded_size, scratch, stream)
                                : encode_rule<false>(in, n, word_size, out, encoded_size, scratch, stream);
}

cudaError_t decode(const uint8_t* in, size_t in_size, unsigned word_size, Rule rule, uint8_t* out, size_t max_out,
                   uint64_t* decoded_size, uint32_t* status, void* scratch, cudaStream_t stream) {
  if (!valid_word_size(word_size)) return cudaErrorInvalidValue;
  return rule == Rule::kChanged
             ? decode_rule<true>(in, in_size, word_size, out, max_out, decoded_size, status, scratch, stream)
             : decode_rule<false>(in, in_size, word_size, out, max_out, decoded_size, status, scratch, stream);
}

}  // namespace fz::elimination::cuda
