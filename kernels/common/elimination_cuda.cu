// CUDA implementation of the RZE/RRE stream format (common/elimination.hpp),
// host interface in common/elimination_cuda.hpp.
//
// One thread block codes one sub-chunk, in shared memory. Encoding runs in two
// passes: measure_subchunks builds every bitmap level and sums popcounts to get
// each sub-chunk's stored size (the CPU's rule: raw unless coding is strictly
// smaller); a device-wide exclusive scan of the sizes gives each payload's
// offset; write_subchunks rebuilds the levels and places every kept byte and
// word at its rank among the set bits. Rebuilding the levels is cheaper than
// keeping a compacted copy of every sub-chunk in scratch and moving it again.
// Decoding validates the header and size table on the device (read_size_table,
// a scan, check_header), then decode_subchunks checks and expands each
// sub-chunk: an element's value is the kept element of its inclusive rank (RRE
// and the upper levels: the last kept one at or before it, 0 if none).
#include "common/elimination_cuda.hpp"

#include <cub/device/device_scan.cuh>

#include "common/elimination_cuda.cuh"

namespace fz::elimination::cuda {
namespace {

using namespace fz::elimination::cuda_detail;
using fz::cuda_detail::block_copy_bytes;
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

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

// ---- encode ----------------------------------------------------------------

template <typename Word, bool kChanged>
__global__ void __launch_bounds__(kThreads)
    measure_subchunks(const uint8_t* in, uint64_t n, uint8_t* out, uint64_t* sizes) {
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ __align__(16) uint8_t data[kBlockBytes];
  __shared__ __align__(16) uint8_t levels[kLevelStorage];
  __shared__ typename Reduce::TempStorage reduce_storage;
  constexpr unsigned k = sizeof(Word);
  const size_t chunk = blockIdx.x;
  const unsigned osize = subchunk_length(n, chunk);
  const unsigned words = osize / k;
  unsigned size = osize;  // raw unless coding is strictly smaller
  if (words > 0) {
    block_copy_bytes(in + chunk * kBlockBytes, data, osize);
    __syncthreads();
    const LevelPlan plan = plan_levels(words);
    build_levels<Word, kChanged>(data, words, plan, levels);
    // Stored bytes: k per kept word (bits of B_0), one per kept byte of each
    // lower level (bits of B_1 .. B_top), the raw top level, the leftover bytes.
    unsigned mine = 0;
    for (unsigned b = threadIdx.x; b < plan.bytes(0); b += kThreads) mine += k * __popc(levels[b]);
    for (unsigned l = 1; l < plan.count; ++l) {
      for (unsigned b = threadIdx.x; b < plan.bytes(l); b += kThreads) mine += __popc(levels[plan.offset[l] + b]);
    }
    const unsigned kept = Reduce(reduce_storage).Sum(mine);
    const unsigned total = kept + plan.bytes(plan.top()) + osize % k;
    if (total < osize) size = total;
  }
  if (threadIdx.x == 0) {
    sizes[chunk] = size;
    out[8 + 2 * chunk] = static_cast<uint8_t>(size);
    out[8 + 2 * chunk + 1] = static_cast<uint8_t>(size >> 8);
  }
}

template <typename Word, bool kChanged>
__global__ void __launch_bounds__(kThreads)
    write_subchunks(const uint8_t* in, uint64_t n, uint8_t* out, const uint64_t* sizes, const uint64_t* offsets) {
  __shared__ __align__(16) uint8_t data[kBlockBytes];
  __shared__ __align__(16) uint8_t levels[kLevelStorage];
  __shared__ unsigned prefix[kMaxBitmapBytes];
  __shared__ typename PopcountScan::TempStorage scan_storage;
  constexpr unsigned k = sizeof(Word);
  const size_t chunk = blockIdx.x;
  const unsigned osize = subchunk_length(n, chunk);
  const unsigned words = osize / k;
  const uint8_t* src = in + chunk * kBlockBytes;
  uint8_t* dst = out + 8 + 2 * chunks_of(n) + offsets[chunk];
  if (sizes[chunk] == osize) {
    block_copy_bytes(src, dst, osize);
    return;
  }
  block_copy_bytes(src, data, osize);
  __syncthreads();
  const LevelPlan plan = plan_levels(words);
  build_levels<Word, kChanged>(data, words, plan, levels);

  // B_top | K_{top-1} | ... | K_0 | kept words | leftover bytes
  const unsigned top = plan.top();
  block_copy_bytes(levels + plan.offset[top], dst, plan.bytes(top));
  unsigned pos = plan.bytes(top);
  for (unsigned l = top; l-- > 0;) {
    const uint8_t* above = levels + plan.offset[l + 1];
    const uint8_t* level = levels + plan.offset[l];
    const unsigned count = scan_popcounts(above, plan.bytes(l + 1), prefix, scan_storage);
    for (unsigned i = threadIdx.x; i < plan.bits[l + 1]; i += kThreads) {
      if (bit_set(above, i)) dst[pos + rank_before(above, prefix, i)] = level[i];
    }
    __syncthreads();  // prefix is rewritten by the next scan
    pos += count;
  }
  const unsigned kept_words = scan_popcounts(levels, plan.bytes(0), prefix, scan_storage);
  for (unsigned w = threadIdx.x; w < words; w += kThreads) {
    if (bit_set(levels, w)) {
      const unsigned at = pos + rank_before(levels, prefix, w) * k;
#pragma unroll
      for (unsigned b = 0; b < k; ++b) dst[at + b] = data[w * k + b];
    }
  }
  pos += kept_words * k;
  for (unsigned i = threadIdx.x; i < osize % k; i += kThreads) dst[pos + i] = data[words * k + i];
}

__global__ void finish_encode(uint64_t n, size_t chunks, const uint64_t* sizes, const uint64_t* offsets,
                              uint8_t* out, uint64_t* encoded_size) {
  for (unsigned b = 0; b < 8; ++b) out[b] = static_cast<uint8_t>(n >> (8 * b));
  const uint64_t payload = chunks > 0 ? offsets[chunks - 1] + sizes[chunks - 1] : 0;
  *encoded_size = 8 + 2 * static_cast<uint64_t>(chunks) + payload;
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

// After every check: n for a valid stream, 0 otherwise (status != 0 implies
// nothing about how far decoding got).
__global__ void finish_decode(const uint8_t* in, const uint32_t* status, uint64_t* decoded_size) {
  *decoded_size = *status == 0 ? load_word<uint64_t>(in) : 0;
}

template <typename Word, bool kRepeat>
__global__ void __launch_bounds__(kThreads)
    decode_subchunks(const uint8_t* in, uint8_t* out, const uint64_t* sizes, const uint64_t* offsets,
                     const uint32_t* header_status, uint32_t* status) {
  __shared__ __align__(16) uint8_t levels[kLevelStorage];
  __shared__ unsigned prefix[kMaxBitmapBytes];
  __shared__ typename PopcountScan::TempStorage scan_storage;
  if (*header_status != 0) return;  // sizes and offsets are meaningless
  constexpr unsigned k = sizeof(Word);
  const uint64_t n = load_word<uint64_t>(in);
  const size_t chunks = chunks_of(n);
  const size_t chunk = blockIdx.x;
  if (chunk >= chunks) return;
  const unsigned osize = subchunk_length(n, chunk);
  const unsigned size = static_cast<unsigned>(sizes[chunk]);  // <= osize: checked with the table
  const uint8_t* src = in + 8 + 2 * chunks + offsets[chunk];
  uint8_t* dst = out + chunk * kBlockBytes;
  if (size == osize) {
    block_copy_bytes(src, dst, osize);
    return;
  }
  // Every check below depends only on values all threads share (after a
  // barrier), so the whole block leaves together.
  auto reject = [&](uint32_t bit) {
    if (threadIdx.x == 0) atomicOr(status, bit);
  };
  const unsigned words = osize / k;
  const LevelPlan plan = plan_levels(words);
  const unsigned top = plan.top();
  if (plan.bytes(top) > size) return reject(kTopBitmapTruncated);
  block_copy_bytes(src, levels + plan.offset[top], plan.bytes(top));
  __syncthreads();
  if (!padding_clear(levels + plan.offset[top], plan.bits[top])) return reject(kPaddingBitsSet);
  unsigned pos = plan.bytes(top);

  for (unsigned l = top; l-- > 0;) {
    const uint8_t* above = levels + plan.offset[l + 1];
    uint8_t* level = levels + plan.offset[l];
    const unsigned count = scan_popcounts(above, plan.bytes(l + 1), prefix, scan_storage);
    if (count > size - pos) return reject(kBitmapLevelTruncated);
    // A dropped byte repeats the previous byte (from 0): byte i is the kept
    // byte of its inclusive rank.
    for (unsigned i = threadIdx.x; i < plan.bits[l + 1]; i += kThreads) {
      const unsigned rank = rank_before(above, prefix, i) + (bit_set(above, i) ? 1u : 0u);
      level[i] = rank > 0 ? src[pos + rank - 1] : uint8_t{0};
    }
    __syncthreads();
    if (!padding_clear(level, plan.bits[l])) return reject(kPaddingBitsSet);
    pos += count;
  }

  const unsigned kept_words = scan_popcounts(levels, plan.bytes(0), prefix, scan_storage);
  if (size - pos != kept_words * k + osize % k) return reject(kSubchunkLengthMismatch);
  const uint8_t* kept = src + pos;
  for (unsigned w = threadIdx.x; w < words; w += kThreads) {
    const bool set = bit_set(levels, w);
    const unsigned rank = rank_before(levels, prefix, w) + (set ? 1u : 0u);
    Word v = 0;
    if (kRepeat ? rank > 0 : set) v = load_word<Word>(kept + (rank - 1) * k);
    store_word<Word>(dst + w * k, v);
  }
  for (unsigned i = threadIdx.x; i < osize % k; i += kThreads) dst[words * k + i] = kept[kept_words * k + i];
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
  const ScratchLayout s = layout(scratch, chunks);
  if (chunks > 0) {
    measure_subchunks<Word, kChanged><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(in, n, out, s.sizes);
    size_t scan_bytes = s.scan_bytes;
    cudaError_t err = cub::DeviceScan::ExclusiveSum(s.scan, scan_bytes, s.sizes, s.offsets,
                                                    static_cast<int>(chunks), stream);
    if (err != cudaSuccess) return err;
    write_subchunks<Word, kChanged>
        <<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(in, n, out, s.sizes, s.offsets);
  }
  finish_encode<<<1, 1, 0, stream>>>(n, chunks, s.sizes, s.offsets, out, encoded_size);
  return cudaGetLastError();
}

template <typename Word, bool kRepeat>
cudaError_t decode_typed(const uint8_t* in, size_t in_size, uint8_t* out, size_t max_out, uint64_t* decoded_size,
                         uint32_t* status, void* scratch, cudaStream_t stream) {
  const size_t capacity = table_capacity(in_size, max_out);
  const ScratchLayout s = layout(scratch, capacity);
  cudaError_t err = cudaMemsetAsync(status, 0, sizeof(uint32_t), stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.header_status, 0, sizeof(uint32_t), stream);
  if (err != cudaSuccess) return err;
  if (capacity > 0) {
    const unsigned blocks = static_cast<unsigned>((capacity + kThreads - 1) / kThreads);
    read_size_table<<<blocks, kThreads, 0, stream>>>(in, in_size, max_out, capacity, s.sizes, s.header_status,
                                                      status);
    size_t scan_bytes = s.scan_bytes;
    err = cub::DeviceScan::ExclusiveSum(s.scan, scan_bytes, s.sizes, s.offsets, static_cast<int>(capacity), stream);
    if (err != cudaSuccess) return err;
  }
  check_header<<<1, 1, 0, stream>>>(in, in_size, max_out, s.sizes, s.offsets, s.header_status, status);
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

size_t encode_scratch_bytes(size_t n) { return scratch_bytes_for(chunks_of(n)); }

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
