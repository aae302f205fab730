// CUDA pieces both ANS backends share (stage type 14: ans_cuda.cu; type 15:
// interleaved_cuda.cu): host bytes (a stream's head, table entries) carried to
// the device as kernel arguments, the decoder's slot tables and the encoder's
// per-token constants built from those entries, the scan of per-lane counts,
// the device's size (multiprocessors, shared memory) and the rANS encoder's
// step. Moved here from ans_cuda.cu / kernels_cuda.cuh when type 15 came
// (issue 30 item 2), unchanged. Internal linkage: each .cu that includes
// this has its own copy.
#pragma once

#include <cub/device/device_scan.cuh>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/bytes.hpp"
#include "common/dynamic_shared_cuda.cuh"
#include "common/one_block_scan_cuda.cuh"
#include "common/words_cuda.cuh"

namespace fz::ans::cuda {

namespace {  // internal linkage: every including .cu has its own copy

constexpr unsigned kPrepThreads = 256;
constexpr unsigned kChunkEntries = 600;  // table entries per launch (3608 argument bytes)
constexpr unsigned kFullMask = 0xFFFFFFFFu;

constexpr size_t kAlign = 256;
inline size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Shared tables above this leave too little of the multiprocessor's memory
// to L1, which holds each lane's symbols, mask and words.
constexpr size_t kMaxSharedTableBytes = size_t{200} << 10;

inline int device_attribute(cudaDeviceAttr attribute, int fallback) {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess ||
      value < 1)
    return fallback;
  return value;
}

inline int multiprocessors() { return device_attribute(cudaDevAttrMultiProcessorCount, 16); }
inline size_t shared_limit() {
  return std::min(kMaxSharedTableBytes,
                  static_cast<size_t>(device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, 48 << 10)));
}

// ---- host bytes as kernel arguments --------------------------------------------

constexpr size_t kArgumentWords = 960;  // 3840 bytes, within the 4 KiB every architecture takes
struct HeadChunk {
  uint32_t words[kArgumentWords];
};

__global__ void write_head_chunk(const __grid_constant__ HeadChunk chunk, uint32_t count, uint8_t* dst) {
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x)
    dst[i] = static_cast<uint8_t>(chunk.words[i / 4] >> (8 * (i % 4)));
}

inline cudaError_t upload_head(const Bytes& head, uint8_t* dst, cudaStream_t stream) {
  for (size_t at = 0; at < head.size(); at += 4 * kArgumentWords) {
    HeadChunk chunk{};
    const size_t count = std::min(4 * kArgumentWords, head.size() - at);
    std::memcpy(chunk.words, head.data() + at, count);  // little-endian hosts, as the formats assume
    write_head_chunk<<<1, kPrepThreads, 0, stream>>>(chunk, static_cast<uint32_t>(count), dst + at);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// Table entries as a kernel argument.
struct EntryChunk {
  uint32_t count;
  uint32_t token_base;  // encoder tables: where the table's tokens start
  uint16_t token[kChunkEntries];
  uint16_t freq_minus_1[kChunkEntries];
  uint16_t cum[kChunkEntries];
};

// Encoder: per token (at token_base + token) its (f - 1) | cum << 16 and
// ceil(2^64 / f) (2^64 - 1 for f = 1, the CPU's).
__global__ void __launch_bounds__(kPrepThreads)
    fill_encoder_table(const __grid_constant__ EntryChunk chunk, uint32_t* fc, unsigned long long* rcp) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= chunk.count) return;
  const uint32_t t = chunk.token_base + chunk.token[i];
  const uint64_t f = uint64_t{chunk.freq_minus_1[i]} + 1;
  fc[t] = uint32_t{chunk.freq_minus_1[i]} | uint32_t{chunk.cum[i]} << 16;
  rcp[t] = f == 1 ? ~0ull : ~0ull / f + 1;
}

// Decoder: per slot of the entries' range, (f - 1) << 16 | (slot - cum) and
// the token (a u8 table for runs, u16 for symbols: the other pointer is null).
__global__ void __launch_bounds__(kPrepThreads)
    fill_slots(const __grid_constant__ EntryChunk chunk, uint32_t* fb, uint8_t* run_tok, uint16_t* sym_tok) {
  const uint32_t last = chunk.count - 1;
  const uint32_t lo = chunk.cum[0];
  const uint32_t hi = uint32_t{chunk.cum[last]} + chunk.freq_minus_1[last] + 1;
  for (uint32_t slot = lo + blockIdx.x * blockDim.x + threadIdx.x; slot < hi; slot += gridDim.x * blockDim.x) {
    uint32_t a = 0, b = chunk.count;  // the last entry with cum <= slot
    while (b - a > 1) {
      const uint32_t mid = (a + b) / 2;
      if (chunk.cum[mid] <= slot) a = mid;
      else b = mid;
    }
    fb[slot] = uint32_t{chunk.freq_minus_1[a]} << 16 | (slot - chunk.cum[a]);
    if (run_tok) run_tok[slot] = static_cast<uint8_t>(chunk.token[a]);
    else sym_tok[slot] = chunk.token[a];
  }
}

// Table entries in chunks: for the encoder's table (token_base: where the
// table's tokens start in it), or for slot tables (run_tok or sym_tok set).
// Entry: anything with token, freq_minus_1 and cum (TableEntry).
template <typename Entry>
cudaError_t upload_entries(const std::vector<Entry>& entries, uint32_t token_base, uint32_t* fc,
                           unsigned long long* rcp, uint32_t* fb, uint8_t* run_tok, uint16_t* sym_tok,
                           cudaStream_t stream) {
  for (size_t at = 0; at < entries.size(); at += kChunkEntries) {
    EntryChunk chunk{};
    chunk.count = static_cast<uint32_t>(std::min<size_t>(kChunkEntries, entries.size() - at));
    chunk.token_base = token_base;
    for (uint32_t i = 0; i < chunk.count; ++i) {
      chunk.token[i] = entries[at + i].token;
      chunk.freq_minus_1[i] = entries[at + i].freq_minus_1;
      chunk.cum[i] = entries[at + i].cum;
    }
    if (fc) {
      fill_encoder_table<<<(chunk.count + kPrepThreads - 1) / kPrepThreads, kPrepThreads, 0, stream>>>(chunk, fc, rcp);
    } else {
      const Entry& last = entries[at + chunk.count - 1];
      const uint32_t slots = uint32_t{last.cum} + last.freq_minus_1 + 1 - entries[at].cum;
      fill_slots<<<(slots + kPrepThreads - 1) / kPrepThreads, kPrepThreads, 0, stream>>>(chunk, fb, run_tok, sym_tok);
    }
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// The listed tokens of a frequency table (f > 0), with their cum.
template <typename Entry>
std::vector<Entry> entries_of(const std::vector<uint32_t>& freq) {
  std::vector<Entry> entries;
  uint32_t cum = 0;
  for (size_t t = 0; t < freq.size(); ++t) {
    if (freq[t] == 0) continue;
    entries.push_back({static_cast<uint16_t>(t), static_cast<uint16_t>(freq[t] - 1), static_cast<uint16_t>(cum)});
    cum += freq[t];
  }
  return entries;
}

// ---- decode ----

// Method 0: the symbols as they are, each below the alphabet.
__global__ void __launch_bounds__(kPrepThreads)
    copy_stored(const uint8_t* src, uint64_t n, uint32_t alphabet, uint8_t* out, uint32_t* status) {
  bool bad = false;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x) {
    const uint16_t v = cuda_detail::load_word<uint16_t>(src + 2 * i);
    bad |= v >= alphabet;
    reinterpret_cast<uint16_t*>(out)[i] = v;
  }
  if (bad) atomicOr(status, 1u);
}

// ---- lane offsets --------------------------------------------------------------

constexpr uint64_t kMaxLanes = uint64_t{INT32_MAX} - 1;  // the scan's item count is an int

inline size_t scan_temp_bytes(uint64_t lanes) {
  if (lanes + 1 <= cuda_detail::kOneBlockScanItems) return 0;
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
                                static_cast<int>(lanes + 1));
  return bytes;
}

// starts[k] = counts[0] + ... + counts[k - 1] for k <= lanes; counts[lanes] is 0.
inline cudaError_t scan_counts(const uint64_t* counts, uint64_t* starts, uint64_t lanes, void* temp, size_t temp_bytes,
                               cudaStream_t stream) {
  if (lanes + 1 <= cuda_detail::kOneBlockScanItems) {
    cuda_detail::OneBlockScans scans;
    scans.in[0] = counts;
    scans.out[0] = starts;
    scans.count = 1;
    cuda_detail::exclusive_sums_one_block<<<1, cuda_detail::kOneBlockScanThreads, 0, stream>>>(scans, lanes, true);
    return cudaGetLastError();
  }
  return cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, starts, static_cast<int>(lanes + 1), stream);
}

// Blocks of a grid-stride kernel over `items` work items, `per_block` items a
// block: those resident at once, at most enough for every item.
template <typename Kernel>
cudaError_t resident_grid(Kernel kernel, uint64_t items, unsigned threads, unsigned per_block, size_t shared,
                          unsigned& grid) {
  if (shared > 0) {
    const cudaError_t err = cuda_common::allow_dynamic_shared_memory(kernel, shared);
    if (err != cudaSuccess) return err;
  }
  int per_multiprocessor = 0;
  const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, threads, shared);
  if (err != cudaSuccess) return err;
  const uint64_t resident = std::max<uint64_t>(1, uint64_t(per_multiprocessor) * uint64_t(multiprocessors()));
  grid = static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>((items + per_block - 1) / per_block, resident)));
  return cudaSuccess;
}

// ---- tables in shared memory ----------------------------------------------------

// The encoder's per-token tables copied into `shared` (12 bytes a token: rcp,
// then fc) by the whole block, and fc and rcp pointed there.
__device__ __forceinline__ void share_encoder_tables(uint4* shared, uint32_t size, const uint32_t*& fc,
                                                     const unsigned long long*& rcp) {
  auto* s_rcp = reinterpret_cast<unsigned long long*>(shared);
  auto* s_fc = reinterpret_cast<uint32_t*>(s_rcp + size);
  for (uint32_t i = threadIdx.x; i < size; i += blockDim.x) {
    s_rcp[i] = rcp[i];
    s_fc[i] = fc[i];
  }
  __syncthreads();
  fc = s_fc;
  rcp = s_rcp;
}

// The decoder's slot tables (T = 2^M slots: fb as 2T u32, then T u16 symbol
// tokens, T u8 run tokens; 11T bytes, 16-byte aligned in global memory as
// the scratch layouts place them) copied into `shared` by the whole block,
// and the pointers pointed there.
__device__ __forceinline__ void share_slot_tables(uint4* shared, uint32_t T, const uint32_t*& fb,
                                                  const uint16_t*& sym_tok, const uint8_t*& run_tok) {
  uint32_t* s_fb = reinterpret_cast<uint32_t*>(shared);
  uint32_t* s_sym = s_fb + 2 * T;   // T u16
  uint32_t* s_run = s_sym + T / 2;  // T u8
  const auto* g_fb = reinterpret_cast<const uint4*>(fb);
  const auto* g_sym = reinterpret_cast<const uint4*>(sym_tok);
  const auto* g_run = reinterpret_cast<const uint4*>(run_tok);
  for (uint32_t i = threadIdx.x; i < T / 2; i += blockDim.x) reinterpret_cast<uint4*>(s_fb)[i] = g_fb[i];
  for (uint32_t i = threadIdx.x; i < T / 8; i += blockDim.x) reinterpret_cast<uint4*>(s_sym)[i] = g_sym[i];
  for (uint32_t i = threadIdx.x; i < T / 16; i += blockDim.x) reinterpret_cast<uint4*>(s_run)[i] = g_run[i];
  __syncthreads();
  fb = s_fb;
  sym_tok = reinterpret_cast<const uint16_t*>(s_sym);
  run_tok = reinterpret_cast<const uint8_t*>(s_run);
}

// ---- the rANS encoder's step ---------------------------------------------------

// One token coded (ans.hpp): emit the low 16 bits of x when x >= f << (32 - M)
// (returns whether, the word in `word`), then x = (x / f) * T + (x mod f) + c
// with the division as a multiplication by rcp (rans_cpu.hpp, EncSymbol);
// fc = (f - 1) | cum << 16 as fill_encoder_table writes it.
__device__ __forceinline__ bool encode_step(uint32_t& x, uint32_t fc, unsigned long long rcp, unsigned M,
                                            uint16_t& word) {
  const uint32_t T = 1u << M;
  const uint32_t f = (fc & 0xFFFFu) + 1;
  const uint32_t bias = (fc >> 16) + (f == 1 ? T - 1 : 0);
  const bool emit = uint64_t{x} >= uint64_t{f} << (32 - M);
  word = static_cast<uint16_t>(x);
  x = emit ? x >> 16 : x;
  const uint32_t q = static_cast<uint32_t>(__umul64hi(static_cast<unsigned long long>(x), rcp));
  x = x + bias + q * (T - f);
  return emit;
}

}  // namespace
}  // namespace fz::ans::cuda
