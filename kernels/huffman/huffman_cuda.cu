// CUDA implementation of the Huffman stream format (huffman/huffman.hpp),
// host interface in huffman/huffman_cuda.hpp; the per-thread coding steps are
// in huffman/huffman_segments.hpp, shared with a host test.
//
// Histogram: warps merge equal symbols (__match_any_sync) before one integer
// atomic per distinct symbol, into shared bins per thread block for small
// alphabets, then into the global u64 counts.
// Encode: one thread block per Huffman block (grid-stride). measure_blocks
// sums the block's code lengths; a device scan of the word counts gives end[];
// write_blocks gives each thread a run of symbols, places the runs by a block
// scan of their bit lengths, zeroes the block's words and writes them: words a
// run covers whole are stored, words shared with a neighbour are ORed in (the
// result does not depend on the order).
// Decode: the host-built canonical tables come in as arguments; a kernel fills
// the lookup tables once (2^12 entries by the next 12 bits, and a second level
// for longer codes when it is small), and each thread block decodes one Huffman
// block at a time with a thread per segment of its bits (segments.hpp: guessed
// starts, rounds until every start is a true code boundary, a scan of the code
// counts, then the decode that writes; the guess and the rounds only count
// codes, a lookup passing every whole code of its 12 bits: count_segment),
// staging the symbols in shared memory so that they leave in wide, coalesced
// stores.
// The kernels are in kernels_cuda.cuh; this file is the host dispatch (plans,
// scratch layout, uploads, launches).
#include "huffman/huffman_cuda.hpp"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/dynamic_shared_cuda.cuh"
#include "common/error.hpp"
#include "huffman/huffman_format.hpp"
#include "huffman/kernels_cuda.cuh"

namespace fz::huffman::cuda {
namespace {

using segments::Tables;

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// ---- host data as kernel arguments ----------------------------------------
//
// Bytes the host computed (header, code tables) reach the device inside
// kernel arguments, which the launch copies: unlike an asynchronous copy from
// pageable memory, nothing has to keep the host buffer alive afterwards.

constexpr size_t kArgumentBytes = 3840;  // within the 4 KiB every architecture takes
struct ArgumentBytes {
  uint32_t words[kArgumentBytes / 4];  // the bytes, little-endian, as words
};

// Word by word where dst is 4-byte aligned (the argument's reads are served
// one address at a time, so a quarter as many of them is four times faster).
__global__ void copy_argument(const __grid_constant__ ArgumentBytes chunk, uint32_t count, uint8_t* dst) {
  uint32_t done = 0;
  if ((reinterpret_cast<uintptr_t>(dst) & 3) == 0) {
    for (uint32_t i = threadIdx.x; i < count / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(dst)[i] = chunk.words[i];
    done = count / 4 * 4;
  }
  for (uint32_t i = done + threadIdx.x; i < count; i += blockDim.x)
    dst[i] = static_cast<uint8_t>(chunk.words[i / 4] >> (8 * (i % 4)));
}

cudaError_t upload(const void* src, size_t size, uint8_t* dst, cudaStream_t stream) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (size_t at = 0; at < size; at += kArgumentBytes) {
    ArgumentBytes chunk;
    const size_t count = std::min(kArgumentBytes, size - at);
    std::memcpy(chunk.words, bytes + at, count);  // little-endian hosts, as the formats assume
    copy_argument<<<1, kThreads, 0, stream>>>(chunk, static_cast<uint32_t>(count), dst + at);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

unsigned grid_for(uint64_t items, uint64_t per_block) {
  const uint64_t blocks = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(blocks, kMaxGrid)));
}

int multiprocessors() {
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count < 1)
    return 16;
  return count;
}

}  // namespace

// ---- host: encode --------------------------------------------------------------

cudaError_t histogram(const uint8_t* symbols, size_t n, uint32_t alphabet, uint64_t* counts, uint32_t* bad_symbols,
                      cudaStream_t stream) {
  if (alphabet < 1 || alphabet > kMaxAlphabet) return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(counts, 0, sizeof(uint64_t) * alphabet, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(bad_symbols, 0, sizeof(uint32_t), stream);
  if (err != cudaSuccess || n == 0) return err;
  // Enough threads to fill the GPU several times over; each loops over more.
  const unsigned grid = std::min<unsigned>(grid_for(n, kThreads), 8u * static_cast<unsigned>(multiprocessors()));
  auto* counts64 = reinterpret_cast<unsigned long long*>(counts);
  if (alphabet <= kSharedBins && (reinterpret_cast<uintptr_t>(symbols) & 15) == 0) {
    count_symbol_vectors<<<std::min<unsigned>(grid_for(n / 8 + 1, kThreads), grid), kThreads,
                           sizeof(uint32_t) * (alphabet + 1), stream>>>(symbols, n, alphabet, counts64, bad_symbols);
  } else if (alphabet <= kSharedBins) {
    count_symbols<true><<<grid, kThreads, sizeof(uint32_t) * (alphabet + 1), stream>>>(symbols, n, alphabet,
                                                                                       counts64, bad_symbols);
  } else {
    count_symbols<false><<<grid, kThreads, 0, stream>>>(symbols, n, alphabet, counts64, bad_symbols);
  }
  return cudaGetLastError();
}

EncodePlan plan_encode(const uint64_t* histogram, uint64_t n, const Config& config) {
  format::check_encoder_config(config);
  EncodePlan plan;
  plan.n = n;
  plan.block_symbols = config.block_symbols;
  if (n == 0) {
    plan.head = format::write_head(0, config, {});
    plan.max_encoded_bytes = plan.head.size();
    return plan;
  }
  const std::vector<uint8_t> lengths = code_lengths(histogram, config.alphabet, config.max_length);
  uint32_t lo = 0, hi = 0;
  format::code_range(lengths, lo, hi);
  plan.table = format::encode_table(lengths, lo, hi);
  plan.max_used = *std::max_element(lengths.begin(), lengths.end());
  plan.head = format::write_head(n, config, lengths);
  const uint64_t S = config.block_symbols;
  plan.blocks = (n + S - 1) / S;
  const uint64_t last = n - (plan.blocks - 1) * S;
  const auto words_for = [&](uint64_t count) { return (count * plan.max_used + 31) / 32; };
  const uint64_t payload_words = (plan.blocks - 1) * words_for(S) + words_for(last);
  plan.max_encoded_bytes = static_cast<size_t>(plan.head.size() + 4 * plan.blocks + 4 * payload_words);
  return plan;
}

namespace {

// Scratch of encode = table | block words | ends | scan storage.
struct EncodeScratch {
  uint32_t* table;
  uint64_t* block_words;
  uint64_t* ends;
  void* scan;
  size_t scan_bytes;
};

size_t scan_storage_bytes(uint64_t items) {
  size_t bytes = 0;
  cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                static_cast<uint64_t*>(nullptr), static_cast<int>(items));
  return bytes;
}

EncodeScratch encode_layout(void* scratch, const EncodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  EncodeScratch s;
  s.table = reinterpret_cast<uint32_t*>(base);
  base += aligned(sizeof(uint32_t) * plan.table.size());
  s.block_words = reinterpret_cast<uint64_t*>(base);
  base += aligned(sizeof(uint64_t) * plan.blocks);
  s.ends = reinterpret_cast<uint64_t*>(base);
  base += aligned(sizeof(uint64_t) * plan.blocks);
  s.scan = base;
  s.scan_bytes = plan.blocks > 0 ? scan_storage_bytes(plan.blocks) : 0;
  return s;
}

}  // namespace

size_t encode_scratch_bytes(const EncodePlan& plan) {
  if (plan.n == 0) return 0;
  return aligned(sizeof(uint32_t) * plan.table.size()) + 2 * aligned(sizeof(uint64_t) * plan.blocks) +
         aligned(scan_storage_bytes(plan.blocks));
}

cudaError_t encode(const uint8_t* symbols, const EncodePlan& plan, uint8_t* out, uint64_t* encoded_size,
                   void* scratch, cudaStream_t stream) {
  if ((reinterpret_cast<uintptr_t>(out) & 3) != 0 || plan.head.size() < format::kHeaderBytes ||
      plan.blocks > static_cast<uint64_t>(INT32_MAX))
    return cudaErrorInvalidValue;
  cudaError_t err = upload(plan.head.data(), plan.head.size(), out, stream);
  if (err != cudaSuccess) return err;
  if (plan.n == 0) {
    const uint64_t size = plan.head.size();
    return upload(&size, sizeof(size), reinterpret_cast<uint8_t*>(encoded_size), stream);
  }
  if (plan.table.empty() || plan.blocks == 0) return cudaErrorInvalidValue;
  const EncodeScratch s = encode_layout(scratch, plan);
  err = upload(plan.table.data(), sizeof(uint32_t) * plan.table.size(), reinterpret_cast<uint8_t*>(s.table), stream);
  if (err != cudaSuccess) return err;
  const size_t ends_at = plan.head.size();
  const size_t payload_at = format::payload_offset(ends_at, plan.blocks);
  const unsigned grid = grid_for(plan.blocks, 1);
  measure_blocks<<<grid, kThreads, 0, stream>>>(symbols, plan.n, plan.block_symbols, plan.blocks, s.table,
                                                s.block_words);
  size_t scan_bytes = s.scan_bytes;
  err = cub::DeviceScan::InclusiveSum(s.scan, scan_bytes, s.block_words, s.ends, static_cast<int>(plan.blocks),
                                      stream);
  if (err != cudaSuccess) return err;
  write_block_table<<<grid_for(plan.blocks, kThreads), kThreads, 0, stream>>>(s.ends, plan.blocks, out, ends_at,
                                                                             payload_at, encoded_size);
  if (plan.block_symbols <= kStageSymbols && plan.block_symbols % 8 == 0 &&
      (reinterpret_cast<uintptr_t>(symbols) & 15) == 0) {
    write_staged_blocks<<<grid, kThreads, staged_symbols_bytes(plan.block_symbols), stream>>>(
        symbols, plan.n, plan.block_symbols, plan.blocks, s.table, s.ends, out + payload_at);
  } else {
    write_blocks<<<grid, kThreads, 0, stream>>>(symbols, plan.n, plan.block_symbols, plan.blocks, s.table, s.ends,
                                                out + payload_at);
  }
  return cudaGetLastError();
}

// ---- host: decode --------------------------------------------------------------

size_t decode_prefix_bytes(const uint8_t* head, size_t head_size, size_t stream_size) {
  return format::prefix_bytes(head, head_size, stream_size);
}

DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size, size_t max_out) {
  const format::Layout layout = format::parse(prefix, prefix_size, stream_size, max_out);
  DecodePlan plan;
  plan.n = layout.n;
  plan.block_symbols = layout.block_symbols;
  plan.stream_size = stream_size;
  if (layout.n == 0) return plan;
  plan.blocks = layout.blocks;
  plan.ends_at = layout.ends_at;
  plan.payload_at = layout.payload_at;
  const format::Canonical c = format::make_canonical(layout.lengths.data(), layout.lo, layout.hi);
  plan.code.max_used = c.max_used;
  for (unsigned l = 1; l <= c.max_used; ++l) {
    plan.code.start[l] = uint64_t{c.first[l]} << (32 - l);
    plan.code.limit[l] = uint64_t{c.first[l] + c.count[l]} << (32 - l);
    plan.code.index[l] = c.index[l];
  }
  segments::set_second_level(plan.code);
  plan.sorted = c.sorted;
  return plan;
}

namespace {

// Scratch of decode = sorted | first lookup level | second lookup level.
struct DecodeScratch {
  uint16_t* sorted;
  uint32_t* fast;
  uint32_t* second;
};

DecodeScratch decode_layout(void* scratch, const DecodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  DecodeScratch s;
  s.sorted = reinterpret_cast<uint16_t*>(base);
  base += aligned(sizeof(uint16_t) * plan.sorted.size());
  s.fast = reinterpret_cast<uint32_t*>(base);
  s.second = reinterpret_cast<uint32_t*>(base + aligned(sizeof(uint32_t) * kFastEntries));
  return s;
}

}  // namespace

size_t decode_scratch_bytes(const DecodePlan& plan) {
  if (plan.n == 0) return 0;
  return aligned(sizeof(uint16_t) * plan.sorted.size()) + aligned(sizeof(uint32_t) * kFastEntries) +
         aligned(sizeof(uint32_t) * plan.code.second_entries);
}

cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(status, 0, sizeof(uint32_t), stream);
  if (err != cudaSuccess || plan.n == 0) return err;
  if (plan.sorted.empty() || plan.blocks == 0) return cudaErrorInvalidValue;
  const DecodeScratch s = decode_layout(scratch, plan);
  err = upload(plan.sorted.data(), sizeof(uint16_t) * plan.sorted.size(), reinterpret_cast<uint8_t*>(s.sorted),
               stream);
  if (err != cudaSuccess) return err;
  const uint32_t entries = kFastEntries + plan.code.second_entries;
  build_lookup_tables<<<(entries + kThreads - 1) / kThreads, kThreads, 0, stream>>>(plan.code, s.sorted, s.fast,
                                                                                  s.second);

  DecodeGeometry g;
  g.n = plan.n;
  g.blocks = plan.blocks;
  g.ends_at = plan.ends_at;
  g.payload_at = plan.payload_at;
  g.block_symbols = plan.block_symbols;
  g.staged_bytes = plan.block_symbols <= kStageSymbols ? (2 * plan.block_symbols + 15) / 16 * 16 : 0;
  const size_t dynamic_bytes = g.staged_bytes + sizeof(uint32_t) * size_t{plan.code.second_entries};
  if (dynamic_bytes > 0) {
    err = cuda_common::allow_dynamic_shared_memory(decode_blocks, dynamic_bytes);
    if (err != cudaSuccess) return err;
  }
  // One wave of resident thread blocks (each loads the lookup tables once),
  // every one looping over Huffman blocks.
  int per_multiprocessor = 0;
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, decode_blocks, kThreads, dynamic_bytes);
  if (err != cudaSuccess) return err;
  const uint64_t resident = std::max<uint64_t>(1, uint64_t(per_multiprocessor) * uint64_t(multiprocessors()));
  const unsigned grid = static_cast<unsigned>(std::min<uint64_t>(plan.blocks, std::min<uint64_t>(resident, kMaxGrid)));
  decode_blocks<<<grid, kThreads, dynamic_bytes, stream>>>(in, g, plan.code, s.sorted, s.fast, s.second, out,
                                                           status);
  return cudaGetLastError();
}

}  // namespace fz::huffman::cuda
