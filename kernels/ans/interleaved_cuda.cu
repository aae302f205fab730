// CUDA implementation of stage type 15's stream format (ans/interleaved.hpp),
// host interface in ans/interleaved_cuda.hpp; the kernels are in
// interleaved_tiles_cuda.cuh (tile counts, tokenization),
// interleaved_encode_cuda.cuh (lanes, assembly) and
// interleaved_decode_cuda.cuh; the tables, head upload and scans are type
// 14's (rans_common_cuda.cuh).
//
// Launch shape of the lane kernels: a warp per lane, several lanes a block
// sharing the tables; about one block per multiprocessor covers every lane
// (at least 4 warps a block, so small lane counts still load the tables
// with 128 threads; at most what shared memory holds beside the tables).
#include "ans/interleaved_cuda.hpp"

#include <algorithm>
#include <cstring>

#include "ans/ans_format.hpp"
#include "ans/interleaved_decode_cuda.cuh"
#include "ans/interleaved_encode_cuda.cuh"
#include "ans/interleaved_tiles_cuda.cuh"
#include "ans/rans_common_cuda.cuh"
#include "common/error.hpp"

namespace fz::ans::interleaved_cuda {
namespace {

namespace ifmt = interleaved_format;
using cuda::aligned;
using cuda::kMaxLanes;
using cuda::kPrepThreads;
using cuda::multiprocessors;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Warps a block of a lane kernel: ceil(K / multiprocessors), within [4, most].
unsigned lane_warps(uint64_t lanes, unsigned most) {
  const uint64_t per = ceil_div(lanes, static_cast<uint64_t>(multiprocessors()));
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(most, std::max<uint64_t>(4, per))));
}

unsigned prep_grid(uint64_t items) {
  return static_cast<unsigned>(
      std::max<uint64_t>(1, std::min<uint64_t>(ceil_div(items, kPrepThreads), 8u * multiprocessors())));
}

// Device memory of count_tiles: the histograms, then each tile's pairs for cap 63 and 255.
struct TileCounts {
  HistogramWords* histograms;
  unsigned long long* pairs63;
  unsigned long long* pairs255;
};
TileCounts tile_counts_layout(uint8_t* base, uint64_t tiles) {
  TileCounts t{};
  t.histograms = reinterpret_cast<HistogramWords*>(base);
  t.pairs63 = reinterpret_cast<unsigned long long*>(base + aligned(kHistogramBytes));
  t.pairs255 = reinterpret_cast<unsigned long long*>(base + aligned(kHistogramBytes) + aligned(8 * (tiles + 1)));
  return t;
}

// Scratch of encode = fc | rcp | tile starts | pairs | words | counts | starts | scan storage.
struct EncodeScratch {
  uint32_t* fc;
  unsigned long long* rcp;
  unsigned long long* tile_start;
  uint32_t* pairs;
  uint16_t* words;
  unsigned long long* counts;
  unsigned long long* starts;
  void* scan;
  size_t scan_bytes;
  size_t total;
};

uint32_t encoder_table_size(const InterleavedConfig& config) { return kRunSlots + config.alphabet + 1; }

EncodeScratch encode_layout(void* scratch, const EncodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  EncodeScratch s{};
  const size_t table = encoder_table_size(plan.config);
  size_t at = 0;
  const auto take = [&](size_t bytes) {
    uint8_t* p = base ? base + at : nullptr;
    at += aligned(bytes);
    return p;
  };
  s.fc = reinterpret_cast<uint32_t*>(take(4 * table));
  s.rcp = reinterpret_cast<unsigned long long*>(take(8 * table));
  s.tile_start = reinterpret_cast<unsigned long long*>(take(8 * (plan.tiles + 1)));
  s.pairs = reinterpret_cast<uint32_t*>(take(4 * plan.plan.pairs));
  s.words = reinterpret_cast<uint16_t*>(take(4 * plan.plan.pairs));  // at most 2 words a pair
  s.counts = reinterpret_cast<unsigned long long*>(take(8 * (plan.plan.lanes + 1)));
  s.starts = reinterpret_cast<unsigned long long*>(take(8 * (plan.plan.lanes + 1)));
  s.scan_bytes = std::max(cuda::scan_temp_bytes(plan.tiles), cuda::scan_temp_bytes(plan.plan.lanes));
  s.scan = take(s.scan_bytes);
  s.total = at;
  return s;
}

cudaError_t scan(const unsigned long long* counts, unsigned long long* starts, uint64_t items, const EncodeScratch& s,
                 cudaStream_t stream) {
  return cuda::scan_counts(reinterpret_cast<const uint64_t*>(counts), reinterpret_cast<uint64_t*>(starts), items,
                           s.scan, s.scan_bytes, stream);
}

StoredPrefix stored_prefix_of(const EncodePlan& plan) {
  StoredPrefix prefix{};
  std::memcpy(prefix.bytes, plan.stored_prefix.data(), plan.stored_prefix.size());
  prefix.size = static_cast<uint32_t>(plan.stored_prefix.size());
  return prefix;
}

}  // namespace

// ---- host: encode --------------------------------------------------------------

TilePlan plan_tiles(const uint64_t* counts, uint64_t n, const InterleavedConfig& config) {
  ifmt::check_config(config);
  TilePlan plan;
  plan.n = n;
  plan.tiles = ceil_div(n, kTileSymbols);
  if (n == 0) return plan;
  plan.counts.assign(counts, counts + config.alphabet);
  plan.mode = format::mode_of(plan.counts);
  return plan;
}

size_t tile_counts_bytes(const TilePlan& tiles) {
  return aligned(kHistogramBytes) + 2 * aligned(8 * (tiles.tiles + 1));
}

cudaError_t count_tiles(const uint8_t* symbols, const TilePlan& tiles, uint8_t* tile_counts, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(tile_counts, 0, kHistogramBytes, stream);
  if (err != cudaSuccess || tiles.n == 0) return err;
  if (tiles.tiles > kMaxLanes) return cudaErrorInvalidValue;
  const TileCounts t = tile_counts_layout(tile_counts, tiles.tiles);
  count_tiles_kernel<<<static_cast<unsigned>(ceil_div(tiles.tiles, kTileWarps)), kTileThreads, 0, stream>>>(
      symbols, tiles.n, tiles.tiles, tiles.mode, t.histograms, t.pairs63, t.pairs255);
  return cudaGetLastError();
}

EncodePlan plan_encode(const TilePlan& tiles, const ifmt::TileHistograms& histograms, const InterleavedConfig& config) {
  ifmt::check_config(config);
  EncodePlan plan;
  plan.n = tiles.n;
  plan.config = config;
  plan.tiles = tiles.tiles;
  if (tiles.n == 0) {
    plan.stored = true;
    plan.stored_prefix = format::write_stored(ByteSpan());
    plan.stored_size = plan.max_encoded_bytes = plan.stored_prefix.size();
    return plan;
  }
  plan.plan = ifmt::plan(tiles.n, tiles.counts, histograms, config);
  format::append_varint(plan.stored_prefix, tiles.n);
  plan.stored_prefix.push_back(kMethodStored);
  plan.stored_size = ifmt::stored_size(tiles.n);
  plan.stored = plan.plan.payload_at >= plan.stored_size;
  plan.run_entries = cuda::entries_of<TableEntry>(plan.plan.run_freq);
  plan.symbol_entries = cuda::entries_of<TableEntry>(plan.plan.symbol_freq);
  plan.max_encoded_bytes = plan.stored_size;
  return plan;
}

size_t encode_scratch_bytes(const EncodePlan& plan) {
  if (plan.stored) return 0;
  return encode_layout(nullptr, plan).total;
}

cudaError_t encode(const uint8_t* symbols, const uint8_t* tile_counts, const EncodePlan& plan, uint8_t* out,
                   uint64_t* encoded_size, void* scratch, cudaStream_t stream) {
  if ((reinterpret_cast<uintptr_t>(out) & 3) != 0 || plan.stored_prefix.size() > sizeof(StoredPrefix::bytes) ||
      plan.plan.lanes > kMaxLanes || plan.tiles > kMaxLanes)
    return cudaErrorInvalidValue;
  EncodeArgs a{};
  a.out = out;
  if (plan.stored) {
    finish_stream<<<prep_grid(plan.stored_size), kPrepThreads, 0, stream>>>(symbols, a, nullptr, 0, plan.stored_size,
                                                                            stored_prefix_of(plan), true, encoded_size);
    return cudaGetLastError();
  }
  const ifmt::Plan& p = plan.plan;
  const EncodeScratch s = encode_layout(scratch, plan);
  const uint32_t table = encoder_table_size(plan.config);
  cudaError_t err = cuda::upload_head(p.head, out, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.fc, 0, 4 * size_t{table}, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.rcp, 0, 8 * size_t{table}, stream);
  if (err == cudaSuccess) err = cuda::upload_entries(plan.run_entries, 0, s.fc, s.rcp, nullptr, nullptr, nullptr, stream);
  if (err == cudaSuccess)
    err = cuda::upload_entries(plan.symbol_entries, kRunSlots, s.fc, s.rcp, nullptr, nullptr, nullptr, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.counts + p.lanes, 0, sizeof(uint64_t), stream);
  if (err != cudaSuccess) return err;

  // The chosen cap's tile pair counts -> each tile's first pair -> the pairs.
  const TileCounts t = tile_counts_layout(const_cast<uint8_t*>(tile_counts), plan.tiles);
  err = scan(p.cap == kSmallCap ? t.pairs63 : t.pairs255, s.tile_start, plan.tiles, s, stream);
  if (err != cudaSuccess) return err;
  tokenize_kernel<<<static_cast<unsigned>(ceil_div(plan.tiles, kTileWarps)), kTileThreads, 0, stream>>>(
      symbols, plan.n, plan.tiles, p.mode, p.cap, plan.config.alphabet, s.tile_start, s.pairs);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  a.pairs = s.pairs;
  a.tile_start = s.tile_start;
  a.tiles = plan.tiles;
  a.lanes = p.lanes;
  a.lane_symbols = p.lane_symbols;
  a.states = p.states;
  a.prob_bits = plan.config.prob_bits;
  a.table_size = table;
  a.fc = s.fc;
  a.rcp = s.rcp;
  a.words = s.words;
  a.records_at = p.records_at;
  a.record_bytes = p.record_bytes;
  a.counts = s.counts;
  const size_t table_bytes = size_t{12} * table;
  const bool in_shared = table_bytes <= cuda::shared_limit();
  const auto kernel = in_shared ? encode_lanes<true> : encode_lanes<false>;
  const size_t shared = in_shared ? table_bytes : 0;
  const unsigned warps = lane_warps(p.lanes, kMaxLaneWarps);
  unsigned grid = 0;
  err = cuda::resident_grid(kernel, p.lanes, 32 * warps, warps, shared, grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, 32 * warps, shared, stream>>>(a);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  err = scan(s.counts, s.starts, p.lanes, s, stream);
  if (err != cudaSuccess) return err;
  // (A thread per 16 bytes of the stored stream or more, for the words' move.)
  finish_stream<<<prep_grid(std::max<uint64_t>(32 * p.lanes, plan.stored_size / 16)), kPrepThreads, 0, stream>>>(
      symbols, a, s.starts, p.payload_at, plan.stored_size, stored_prefix_of(plan), false, encoded_size);
  return cudaGetLastError();
}

// ---- host: decode --------------------------------------------------------------

DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const InterleavedConfig& config,
                       size_t max_out) {
  const ifmt::Layout layout = ifmt::parse(prefix, prefix_size, stream_size, config, max_out);
  DecodePlan plan;
  plan.config = config;
  plan.stream_size = stream_size;
  plan.needed = layout.needed;
  if (layout.needed != 0) return plan;
  plan.n = layout.n;
  plan.method = layout.method;
  plan.payload_at = layout.payload_at;
  if (layout.n == 0 || layout.method == kMethodStored) return plan;
  plan.mode = layout.mode;
  plan.states = layout.states;
  plan.lane_symbols = layout.lane_symbols;
  plan.lanes = layout.lanes;
  plan.records_at = layout.records_at;
  plan.record_bytes = layout.record_bytes;
  plan.run_entries = cuda::entries_of<TableEntry>(layout.run_freq);
  plan.symbol_entries = cuda::entries_of<TableEntry>(layout.symbol_freq);
  return plan;
}

namespace {

// Scratch of decode = fb (2T u32) | sym_tok (T u16) | run_tok (T u8) | counts | starts | scan storage | a
// copy of the stream (used when it lies at an odd address: the lanes read 16-bit words).
struct DecodeScratch {
  uint32_t* fb;
  uint16_t* sym_tok;
  uint8_t* run_tok;
  unsigned long long* counts;
  unsigned long long* starts;
  void* scan;
  size_t scan_bytes;
  uint8_t* copy;
  size_t total;
};

DecodeScratch decode_layout(void* scratch, const DecodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  DecodeScratch s{};
  const size_t T = size_t{1} << plan.config.prob_bits;
  size_t at = 0;
  const auto take = [&](size_t bytes) {
    uint8_t* p = base ? base + at : nullptr;
    at += aligned(bytes);
    return p;
  };
  s.fb = reinterpret_cast<uint32_t*>(take(8 * T));
  s.sym_tok = reinterpret_cast<uint16_t*>(take(2 * T));
  s.run_tok = take(T);
  s.counts = reinterpret_cast<unsigned long long*>(take(8 * (plan.lanes + 1)));
  s.starts = reinterpret_cast<unsigned long long*>(take(8 * (plan.lanes + 1)));
  s.scan_bytes = cuda::scan_temp_bytes(plan.lanes);
  s.scan = take(s.scan_bytes);
  s.copy = take(plan.stream_size);
  s.total = at;
  return s;
}

}  // namespace

size_t decode_scratch_bytes(const DecodePlan& plan) {
  if (plan.n == 0 || plan.method == kMethodStored) return 0;
  return decode_layout(nullptr, plan).total;
}

cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream) {
  if (plan.needed != 0 || (reinterpret_cast<uintptr_t>(out) & 15) != 0 || plan.lanes > kMaxLanes)
    return cudaErrorInvalidValue;
  if (plan.n == 0) return cudaSuccess;
  if (plan.method == kMethodStored) {
    cuda::copy_stored<<<prep_grid(plan.n), kPrepThreads, 0, stream>>>(in + plan.payload_at, plan.n,
                                                                       plan.config.alphabet, out, status);
    return cudaGetLastError();
  }
  if (plan.run_entries.empty() || plan.symbol_entries.empty() || plan.states < 1 || plan.states > kMaxStates)
    return cudaErrorInvalidValue;
  const DecodeScratch s = decode_layout(scratch, plan);
  const uint32_t T = 1u << plan.config.prob_bits;
  cudaError_t err = cudaSuccess;
  if ((reinterpret_cast<uintptr_t>(in) & 1) != 0) {
    err = cudaMemcpyAsync(s.copy, in, plan.stream_size, cudaMemcpyDeviceToDevice, stream);
    in = s.copy;
  }
  if (err == cudaSuccess) err = cudaMemsetAsync(s.fb, 0, aligned(8 * size_t{T}) + aligned(2 * size_t{T}) + T, stream);
  if (err == cudaSuccess) err = cuda::upload_entries(plan.run_entries, 0, nullptr, nullptr, s.fb, s.run_tok, nullptr, stream);
  if (err == cudaSuccess)
    err = cuda::upload_entries(plan.symbol_entries, 0, nullptr, nullptr, s.fb + T, nullptr, s.sym_tok, stream);
  if (err != cudaSuccess) return err;
  record_words<<<prep_grid(plan.lanes + 1), kPrepThreads, 0, stream>>>(in + plan.records_at, plan.record_bytes,
                                                                        plan.lanes, s.counts);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  err = cuda::scan_counts(reinterpret_cast<const uint64_t*>(s.counts), reinterpret_cast<uint64_t*>(s.starts),
                          plan.lanes, s.scan, s.scan_bytes, stream);
  if (err != cudaSuccess) return err;

  DecodeArgs a{};
  a.stream = in;
  a.n = plan.n;
  a.lanes = plan.lanes;
  a.lane_symbols = plan.lane_symbols;
  a.states = plan.states;
  a.prob_bits = plan.config.prob_bits;
  a.mode = plan.mode;
  a.esc = plan.config.alphabet;
  a.records_at = plan.records_at;
  a.record_bytes = plan.record_bytes;
  a.payload_at = plan.payload_at;
  a.starts = s.starts;
  a.fb = s.fb;
  a.run_tok = s.run_tok;
  a.sym_tok = s.sym_tok;
  a.out = out;
  a.status = status;
  // Tables in shared memory when they fit beside at least 4 warps' rings.
  const size_t limit = cuda::shared_limit();
  const size_t table_bytes = size_t{11} * T;
  const bool in_shared = table_bytes + 4 * kRingBytes <= limit;
  const size_t room = limit - (in_shared ? table_bytes : 0);
  const unsigned most = static_cast<unsigned>(std::min<size_t>(kMaxLaneWarps, std::max<size_t>(1, room / kRingBytes)));
  const unsigned warps = lane_warps(plan.lanes, most);
  const size_t shared = (in_shared ? table_bytes : 0) + warps * kRingBytes;
  const auto kernel = in_shared ? decode_lanes<true> : decode_lanes<false>;
  unsigned grid = 0;
  err = cuda::resident_grid(kernel, plan.lanes, 32 * warps, warps, shared, grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, 32 * warps, shared, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace fz::ans::interleaved_cuda
