// Stage type 15's lane decoder on the GPU (host dispatch: interleaved_cuda.cu;
// format: interleaved.hpp, "Interleaved rANS"; the CPU's is
// interleaved_decode_cpu.cpp, whose checks this makes). A warp decodes a
// lane, thread j its state j, round by round: the run tokens, the refills
// (a ballot orders the threads that need a word, increasing j), the symbol
// tokens, the refills; then a warp scan of each pair's output length places
// its symbol, one round late (while the next round decodes, so that the
// scan's shuffles overlap the states' chain; the checks set a flag rather
// than branch). The lane's words come through a ring of 4 x 256 words in
// shared memory, filled by coalesced 16-byte loads one segment ahead (a
// register per thread holds the segment after), so a refill is one shared
// load. The output is filled with m a block ahead of the pairs (coalesced
// 16-byte stores), so a pair writes only its symbol. The slot tables (2^M
// entries of (f - 1) << 16 | (slot - cum), u8 run and u16 symbol tokens) sit
// in shared memory when they fit beside the rings (M <= 14 on an H100), in
// global memory otherwise. Internal to interleaved_cuda.cu, which alone
// includes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ans/ans.hpp"
#include "ans/interleaved_encode_cuda.cuh"
#include "ans/rans_common_cuda.cuh"

namespace fz::ans::interleaved_cuda {
namespace {  // internal linkage, as in interleaved_cuda.cu, the one file that includes this

using cuda::share_slot_tables;

constexpr uint32_t kRingWords = 1024;     // per warp: 4 segments of 256 words (a 16-byte load per thread each)
constexpr uint32_t kSegmentWords = 256;
constexpr size_t kRingBytes = 2 * kRingWords;
constexpr uint32_t kFillSymbols = 4096;   // the output filled with m this many at a time
constexpr uint32_t kRoundSymbols = 32 * 256;  // the most a round outputs: 32 pairs of 255 m and a symbol

// Each lane's word count, from its record, for the scan; counts[lanes] = 0.
__global__ void __launch_bounds__(cuda::kPrepThreads)
    record_words(const uint8_t* records, size_t record_bytes, uint64_t lanes, unsigned long long* counts) {
  for (uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; k <= lanes; k += uint64_t{gridDim.x} * blockDim.x)
    counts[k] = k < lanes ? load_word<uint32_t>(records + k * record_bytes + 4) : 0;
}

struct DecodeArgs {
  const uint8_t* stream;  // 2-byte aligned (the host copies an odd one)
  uint64_t n, lanes, lane_symbols;
  uint32_t states;  // W
  unsigned prob_bits;
  uint32_t mode, esc;
  size_t records_at, record_bytes, payload_at;
  const unsigned long long* starts;  // words before each lane
  const uint32_t* fb;  // 2^M run slots, then 2^M symbol slots
  const uint8_t* run_tok;
  const uint16_t* sym_tok;
  uint8_t* out;  // 16-byte aligned
  uint32_t* status;
};

// Symbols [lo, hi) of the output set to m by the warp: 16-byte stores for
// the whole aligned groups inside, single ones at the edges (a neighbouring
// lane may own the rest of an edge group).
__device__ __forceinline__ void fill_mode(uint8_t* out, uint64_t lo, uint64_t hi, uint32_t mode, unsigned lane) {
  auto* out16 = reinterpret_cast<uint16_t*>(out);
  const uint64_t a = min(hi, (lo + 7) & ~uint64_t{7});
  const uint64_t b = max(a, hi & ~uint64_t{7});
  if (lo + lane < a) out16[lo + lane] = static_cast<uint16_t>(mode);
  const uint32_t mm = mode | mode << 16;
  for (uint64_t g = a / 8 + lane; g < b / 8; g += 32) reinterpret_cast<uint4*>(out)[g] = make_uint4(mm, mm, mm, mm);
  if (b + lane < hi) out16[b + lane] = static_cast<uint16_t>(mode);
}

// The lane's words through the warp's ring (see the file comment). Word i of
// the lane is ring word `first + i`; words past the lane's last chunk read
// as 0 (a lane reading past its Q words is refused anyway: w != Q).
struct WordRing {
  uint16_t* ring;  // kRingWords, this warp's
  const uint4* base;
  const uint4* end;  // first chunk wholly past the lane's words
  uint32_t cursor, first, segment;
  uint4 ahead;  // this thread's chunk of segment `segment + 2`

  __device__ __forceinline__ uint4 chunk(uint32_t s, unsigned lane) const {
    const uint4* c = base + 32 * s + lane;
    return c < end ? __ldg(c) : make_uint4(0, 0, 0, 0);
  }
  __device__ __forceinline__ void init(uint16_t* warp_ring, const uint8_t* words, uint32_t count, unsigned lane) {
    ring = warp_ring;
    const uintptr_t at = reinterpret_cast<uintptr_t>(words);
    base = reinterpret_cast<const uint4*>(at & ~uintptr_t{15});
    end = reinterpret_cast<const uint4*>((at + 2 * uint64_t{count} + 15) & ~uintptr_t{15});
    first = cursor = static_cast<uint32_t>(at & 15) / 2;
    segment = 0;
    reinterpret_cast<uint4*>(ring)[lane] = chunk(0, lane);
    reinterpret_cast<uint4*>(ring)[32 + lane] = chunk(1, lane);
    ahead = chunk(2, lane);
    __syncwarp();
  }
  // The threads with `need`, in increasing lane, take the next words. No
  // branch: the ring holds the cursor's segment and the next one, and a
  // round reads at most 64 words, so advance() once a round suffices.
  __device__ __forceinline__ void refill(uint32_t& x, bool need, unsigned lane) {
    const uint32_t ballot = __ballot_sync(kFullMask, need);
    if (need) x = x << 16 | ring[(cursor + __popc(ballot & ((1u << lane) - 1))) & (kRingWords - 1)];
    cursor += __popc(ballot);
  }
  // Once a round: when the cursor entered the next segment (the same in the
  // whole warp, at most one in a round of <= 64 words), the one after it
  // goes into the ring from registers and its successor is loaded.
  __device__ __forceinline__ void advance(unsigned lane) {
    if (cursor / kSegmentWords != segment) {
      ++segment;
      reinterpret_cast<uint4*>(ring)[((segment + 1) & 3) * 32 + lane] = ahead;
      ahead = chunk(segment + 2, lane);
      __syncwarp();
    }
  }
  __device__ __forceinline__ uint32_t read() const { return cursor - first; }
};

// A warp per lane (grid-stride over lanes, several warps a block).
template <bool kSharedTables>
__global__ void __launch_bounds__(kMaxLaneWarps * 32) decode_lanes(const DecodeArgs a) {
  extern __shared__ uint4 shared_words[];
  const unsigned M = a.prob_bits;
  const uint32_t T = 1u << M;
  const uint32_t* fb = a.fb;
  const uint8_t* run_tok = a.run_tok;
  const uint16_t* sym_tok = a.sym_tok;
  uint4* rings = shared_words;
  if constexpr (kSharedTables) {
    share_slot_tables(shared_words, T, fb, sym_tok, run_tok);
    rings = shared_words + 11 * T / 16;
  }
  const unsigned lane = threadIdx.x % 32;
  const unsigned warps = blockDim.x / 32;
  uint16_t* ring = reinterpret_cast<uint16_t*>(rings) + (threadIdx.x / 32) * kRingWords;
  auto* out16 = reinterpret_cast<uint16_t*>(a.out);
  const uint32_t W = a.states;
  for (uint64_t k = uint64_t{blockIdx.x} * warps + threadIdx.x / 32; k < a.lanes; k += uint64_t{gridDim.x} * warps) {
    const uint64_t begin = k * a.lane_symbols;
    const uint64_t len = a.n - begin < a.lane_symbols ? a.n - begin : a.lane_symbols;
    const uint8_t* record = a.stream + a.records_at + k * a.record_bytes;
    const uint32_t P = load_word<uint32_t>(record);
    const uint32_t Q = load_word<uint32_t>(record + 4);
    uint32_t x = lane < W ? load_word<uint32_t>(record + interleaved_format::kRecordFixedBytes + 4 * lane) : kStateLow;
    WordRing in;
    in.init(ring, a.stream + a.payload_at + 2 * a.starts[k], Q, lane);
    uint64_t pos = 0, filled = 0;
    bool ok = true;
    // The previous round's pair (software pipelined: its output is placed
    // while this round decodes, so the scan's latency overlaps the states').
    uint32_t p_len = 0, p_t = 0, p_s = 0;
    bool p_put = false, p_bad = false;
    // Places the previous round's pairs: t copies of m (already there) then s.
    const auto put_previous = [&]() {
      uint32_t total = 0;
      const uint32_t before = warp_sum_exclusive(p_len, lane, total);
      ok = ok && !__any_sync(kFullMask, p_bad) && total <= len - pos;  // a pair (0, ESC), or past the lane
      if (ok && p_put) out16[begin + pos + before + p_t] = static_cast<uint16_t>(p_s);
      pos += ok ? total : 0;
    };
    // m over the output up to a round's most (32 pairs of 256) past pos, before that round's symbols.
    const auto fill_ahead = [&]() {
      if (ok && filled < min(len, pos + kRoundSymbols)) {  // the same in the whole warp
        do {
          const uint64_t to = min(len, filled + kFillSymbols);
          fill_mode(a.out, begin + filled, begin + to, a.mode, lane);
          filled = to;
        } while (filled < min(len, pos + kRoundSymbols));
        __syncwarp();  // m written before the symbols over it
      }
    };
    fill_ahead();
    const uint64_t rounds = (uint64_t{P} + W - 1) / W;
    for (uint64_t r = 0; r < rounds; ++r) {
      const bool takes = lane < W && r * W + lane < P;
      uint32_t slot = x & (T - 1);
      uint32_t e = fb[slot];
      const uint32_t t = run_tok[slot];
      uint32_t xn = ((e >> 16) + 1) * (x >> M) + (e & 0xFFFFu);
      x = takes ? xn : x;
      in.refill(x, takes && x < kStateLow, lane);
      put_previous();
      slot = x & (T - 1);
      e = fb[T + slot];
      const uint32_t s = sym_tok[slot];
      xn = ((e >> 16) + 1) * (x >> M) + (e & 0xFFFFu);
      x = takes ? xn : x;
      in.refill(x, takes && x < kStateLow, lane);
      const bool has = s != a.esc;
      p_len = takes ? t + (has ? 1 : 0) : 0;
      p_bad = takes && p_len == 0;
      p_put = takes && has;
      p_t = t;
      p_s = s;
      in.advance(lane);
      fill_ahead();
    }
    put_previous();
    ok = ok && pos == len && in.read() == Q;
    if (!__all_sync(kFullMask, ok && (lane >= W || x == kStateLow)) && lane == 0) atomicOr(a.status, 1u);
  }
}

}  // namespace
}  // namespace fz::ans::interleaved_cuda
