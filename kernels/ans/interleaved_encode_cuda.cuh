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

// Rounds whose pairs a warp loads together: a group's loads are all in
// flight at once, the next group's while this one is coded. A step itself
// takes a few dozen cycles, a load from memory several hundred, so with the
// pairs one round ahead a lane waited on a load every round; a chunk of a
// few MiB has only tens of lanes, too few warps to hide that, and its lanes
// took 400-600 us on the H200 (issue 31 item 4).
constexpr unsigned kGroupRounds = 8;

// A warp per lane (grid-stride over lanes, several warps a block), its
// tables in shared memory when they fit. The pairs are loaded a group of
// rounds ahead, and a group's table entries all at once before its steps.
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
  constexpr unsigned G = kGroupRounds;
  for (uint64_t k = uint64_t{blockIdx.x} * warps + threadIdx.x / 32; k < a.lanes; k += uint64_t{gridDim.x} * warps) {
    const uint64_t base = a.tile_start[lane_tile(k, a.lanes, a.tiles, a.lane_symbols)];
    const uint64_t P = a.tile_start[lane_tile(k + 1, a.lanes, a.tiles, a.lane_symbols)] - base;
    const uint32_t* pairs = a.pairs + base;
    uint16_t* end = a.words + 2 * (base + P);
    uint32_t x = kStateLow, emitted = 0;
    const uint64_t rounds = (P + W - 1) / W;
    // Group g holds rounds rounds - 1 - gG down to rounds - gG - G (last
    // round first); a round past the first is no round: no state takes
    // part, and its steps change nothing.
    uint32_t next[G];
    unsigned next_takes = 0;  // bit i: this thread's state takes part in the group's round i
    const auto load_group = [&](uint64_t g) {
      next_takes = 0;
#pragma unroll
      for (unsigned i = 0; i < G; ++i) {
        const uint64_t back = g * G + i;  // rounds from the last
        const uint64_t p = (rounds - 1 - back) * W + lane;
        const bool takes = back < rounds && lane < W && p < P;
        next[i] = takes ? pairs[p] : 0;
        next_takes |= takes ? 1u << i : 0u;
      }
    };
    const uint64_t groups = (rounds + G - 1) / G;
    if (groups > 0) load_group(0);
    for (uint64_t g = 0; g < groups; ++g) {
      uint32_t sf[G], rf[G];
      unsigned long long sr[G], rr[G];
      const unsigned takes = next_takes;
#pragma unroll
      for (unsigned i = 0; i < G; ++i) {
        const uint32_t s = kRunSlots + (next[i] & 0xFFFFu), t = next[i] >> 16;
        sf[i] = fc[s];
        sr[i] = rcp[s];
        rf[i] = fc[t];
        rr[i] = rcp[t];
      }
      if (g + 1 < groups) load_group(g + 1);
#pragma unroll
      for (unsigned i = 0; i < G; ++i) {
        const bool ctakes = (takes >> i) & 1u;
        coded_step(x, ctakes, sf[i], sr[i], M, lane, end, emitted);
        coded_step(x, ctakes, rf[i], rr[i], M, lane, end, emitted);
      }
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
    // Whole warps a lane, as many as the grid gives each (a chunk of a few
    // MiB has tens of lanes of thousands of words: a warp each left most of
    // the GPU idle).
    const uint64_t per_lane = max(uint64_t{32}, threads / a.lanes / 32 * 32);
    const uint64_t teams = threads / per_lane;  // (the threads past whole teams idle)
    for (uint64_t k = thread < teams * per_lane ? thread / per_lane : a.lanes; k < a.lanes; k += teams) {
      const uint64_t last = a.tile_start[lane_tile(k + 1, a.lanes, a.tiles, a.lane_symbols)];
      const uint64_t words = starts[k + 1] - starts[k];
      const uint16_t* src = a.words + 2 * last - words;
      uint16_t* dst = payload + starts[k];
      for (uint64_t i = thread % per_lane; i < words; i += per_lane) dst[i] = src[i];
    }
  } else {
    if (thread == 0) *encoded_size = stored_size;
    for (uint64_t i = thread; i < stored_size; i += threads)
      a.out[i] = i < prefix.size ? prefix.bytes[i] : symbols[i - prefix.size];
  }
}

}  // namespace
}  // namespace fz::ans::interleaved_cuda
