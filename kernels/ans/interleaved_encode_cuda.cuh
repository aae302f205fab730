// Stage type 15's lane encoder and the stream's assembly on the GPU (host
// dispatch: interleaved_cuda.cu; format: interleaved.hpp, "Interleaved
// rANS"). A warp codes a lane: thread j is state j, rounds from the last to
// the first, in each the symbol step of every taking-part state, then the
// run step; each step's emitted words, in increasing j (a ballot and a
// popcount give each its place), are prepended to the lane's words in
// scratch from the lane's end. The lane's record (P, Q, the states) goes
// straight into the stream; finish_stream then moves the words to the
// payload at offsets from a scan of Q, or writes method 0 when the coded
// stream is not smaller. Internal to interleaved_cuda.cu, which alone
// includes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ans/ans.hpp"
#include "ans/interleaved_tiles_cuda.cuh"
#include "ans/rans_common_cuda.cuh"

namespace fz::ans::interleaved_cuda {
namespace {  // internal linkage, as in interleaved_cuda.cu, the one file that includes this

using cuda::encode_step;
using cuda::share_encoder_tables;

constexpr uint32_t kRunSlots = kLargeCap + 1;  // encoder table: run tokens at [0, 256), symbols from 256
constexpr unsigned kMaxLaneWarps = 16;

// The first tile of lane k (k = K: the tile count). Lanes hold whole tiles
// (S is a multiple of kTileSymbols when K > 1; K = 1: one lane of all).
__device__ __forceinline__ uint64_t lane_tile(uint64_t k, uint64_t lanes, uint64_t tiles, uint64_t lane_symbols) {
  return k >= lanes ? tiles : k * (lane_symbols / kTileSymbols);
}

struct EncodeArgs {
  const uint32_t* pairs;
  const unsigned long long* tile_start;  // tiles + 1: pairs before each tile
  uint64_t tiles, lanes, lane_symbols;
  uint32_t states;  // W
  unsigned prob_bits;
  uint32_t table_size;  // kRunSlots + A + 1
  const uint32_t* fc;
  const unsigned long long* rcp;
  uint16_t* words;  // lane k's words end at words + 2 * (its last pair + 1)
  uint8_t* out;
  size_t records_at, record_bytes;
  unsigned long long* counts;  // each lane's word count (lanes + 1; the last 0)
};

// One step of every taking-part state, its words prepended as one block:
// `emitted` words so far from `end`, downwards.
__device__ __forceinline__ void coded_step(uint32_t& x, bool takes, uint32_t fc, unsigned long long rcp, unsigned M,
                                           unsigned lane, uint16_t* end, uint32_t& emitted) {
  uint32_t y = x;
  uint16_t word;
  const bool emit = encode_step(y, fc, rcp, M, word) && takes;
  x = takes ? y : x;
  const uint32_t ballot = __ballot_sync(kFullMask, emit);
  const uint32_t count = __popc(ballot);
  if (emit) end[-static_cast<int64_t>(emitted + count) + __popc(ballot & ((1u << lane) - 1))] = word;
  emitted += count;
}

// A warp per lane (grid-stride over lanes, several warps a block), its
// tables in shared memory when they fit. Each round's pairs and their table
// entries are loaded a round ahead of their steps.
template <bool kSharedTables>
__global__ void __launch_bounds__(kMaxLaneWarps * 32) encode_lanes(const EncodeArgs a) {
  extern __shared__ uint4 shared_words[];
  const uint32_t* fc = a.fc;
  const unsigned long long* rcp = a.rcp;
  if constexpr (kSharedTables) share_encoder_tables(shared_words, a.table_size, fc, rcp);
  const unsigned lane = threadIdx.x % 32;
  const unsigned warps = blockDim.x / 32;
  const unsigned M = a.prob_bits;
  const uint32_t W = a.states;
  for (uint64_t k = uint64_t{blockIdx.x} * warps + threadIdx.x / 32; k < a.lanes; k += uint64_t{gridDim.x} * warps) {
    const uint64_t base = a.tile_start[lane_tile(k, a.lanes, a.tiles, a.lane_symbols)];
    const uint64_t P = a.tile_start[lane_tile(k + 1, a.lanes, a.tiles, a.lane_symbols)] - base;
    const uint32_t* pairs = a.pairs + base;
    uint16_t* end = a.words + 2 * (base + P);
    uint32_t x = kStateLow, emitted = 0;
    const uint64_t rounds = (P + W - 1) / W;
    // Round r's pair and table entries (symbol token, then run token).
    uint32_t sf = 0, rf = 0;
    unsigned long long sr = 0, rr = 0;
    bool takes = false;
    const auto load = [&](uint64_t r) {
      const uint64_t p = r * W + lane;
      takes = lane < W && p < P;
      const uint32_t pair = takes ? pairs[p] : 0;
      const uint32_t s = kRunSlots + (pair & 0xFFFFu), t = pair >> 16;
      sf = fc[s];
      sr = rcp[s];
      rf = fc[t];
      rr = rcp[t];
    };
    if (rounds > 0) load(rounds - 1);
    for (uint64_t r = rounds; r > 0; --r) {
      const uint32_t csf = sf, crf = rf;
      const unsigned long long csr = sr, crr = rr;
      const bool ctakes = takes;
      if (r > 1) load(r - 2);
      coded_step(x, ctakes, csf, csr, M, lane, end, emitted);
      coded_step(x, ctakes, crf, crr, M, lane, end, emitted);
    }
    uint8_t* record = a.out + a.records_at + k * a.record_bytes;
    if (lane == 0) {
      store_word<uint32_t>(record, static_cast<uint32_t>(P));
      store_word<uint32_t>(record + 4, emitted);
      a.counts[k] = emitted;
    }
    if (lane < W) store_word<uint32_t>(record + interleaved_format::kRecordFixedBytes + 4 * lane, x);
  }
}

// Method 0's bytes before the symbols, as an argument.
struct StoredPrefix {
  uint8_t bytes[12];
  uint32_t size;
};

// The stream's last step: method 1 when its length is below method 0's (each
// lane's words moved from scratch to the payload, a warp per lane), else
// method 0; and the length.
__global__ void __launch_bounds__(cuda::kPrepThreads)
    finish_stream(const uint8_t* symbols, EncodeArgs a, const unsigned long long* starts, size_t payload_at,
                  size_t stored_size, StoredPrefix prefix, bool force_stored, uint64_t* encoded_size) {
  const uint64_t thread = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t threads = uint64_t{gridDim.x} * blockDim.x;
  const bool coded = !force_stored && payload_at + 2 * starts[a.lanes] < stored_size;
  if (coded) {
    if (thread == 0) *encoded_size = payload_at + 2 * starts[a.lanes];
    uint16_t* payload = reinterpret_cast<uint16_t*>(a.out + payload_at);
    for (uint64_t k = thread / 32; k < a.lanes; k += threads / 32) {
      const uint64_t last = a.tile_start[lane_tile(k + 1, a.lanes, a.tiles, a.lane_symbols)];
      const uint64_t words = starts[k + 1] - starts[k];
      const uint16_t* src = a.words + 2 * last - words;
      uint16_t* dst = payload + starts[k];
      for (uint64_t i = threadIdx.x % 32; i < words; i += 32) dst[i] = src[i];
    }
  } else {
    if (thread == 0) *encoded_size = stored_size;
    for (uint64_t i = thread; i < stored_size; i += threads)
      a.out[i] = i < prefix.size ? prefix.bytes[i] : symbols[i - prefix.size];
  }
}

}  // namespace
}  // namespace fz::ans::interleaved_cuda
