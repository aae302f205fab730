// The ANS CUDA decode kernels (host dispatch: ans_cuda.cu): the word counts
// widened for the scan, the output's fill with m, and the lanes' decoder
// with its read-ahead of the lane's words (method 0's copy is shared with
// stage type 15: rans_common_cuda.cuh). Split from kernels_cuda.cuh (the
// encoder's kernels), which it builds on; internal to ans_cuda.cu, which
// alone includes it.
#pragma once

#include "ans/kernels_cuda.cuh"

namespace fz::ans::cuda {
namespace {  // internal linkage, as in ans_cuda.cu, the one file that includes this

// ---- decode --------------------------------------------------------------------

// u16 word counts to u64 for the scan; counts[lanes] = 0.
__global__ void __launch_bounds__(kPrepThreads)
    widen_counts(const uint8_t* word_counts, uint64_t lanes, uint64_t* counts) {
  for (uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; k <= lanes; k += uint64_t{gridDim.x} * blockDim.x)
    counts[k] = k < lanes ? load_word<uint16_t>(word_counts + 2 * k) : 0;
}

// Every output symbol m (the decoder then writes only the groups of 8 that
// hold another symbol): 16-byte stores, the tail symbol by symbol.
__global__ void __launch_bounds__(kPrepThreads) fill_mode(uint8_t* out, uint64_t n, uint32_t mode) {
  const uint32_t mm = mode | mode << 16;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const uint64_t first = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (uint64_t g = first; g < n / 8; g += stride) reinterpret_cast<uint4*>(out)[g] = make_uint4(mm, mm, mm, mm);
  if (first < n % 8) reinterpret_cast<uint16_t*>(out)[n / 8 * 8 + first] = static_cast<uint16_t>(mode);
}

struct DecodeArgs {
  const uint8_t* stream;
  uint64_t n, lanes;
  uint32_t S;
  unsigned prob_bits;
  uint32_t mode;
  bool has_symbols;
  size_t states_at, words_at, payload_at;
  const uint64_t* starts;
  const uint32_t* fb;  // 2^M run slots, then 2^M symbol slots
  const uint8_t* run_tok;
  const uint16_t* sym_tok;
  uint8_t* out;  // 16-byte aligned, filled with m by fill_mode
  uint32_t* status;
};

// A lane's 16-bit words, read ahead: aligned 16-byte loads (any alignment of
// the stream), one in use and the next already in flight, so that a refill
// takes its word from registers and never waits on memory. Chunks from the
// lane's end on are not loaded (zeros); words read past the lane's count are
// garbage, and the decoder refuses such a lane anyway (w != count).
struct WordReader {
  const uint4* next_chunk;
  const uint4* end_chunk;  // first chunk wholly past the lane
  uint4 cur, nxt;
  unsigned cur_left;  // u32s of cur not yet taken
  unsigned long long buf;
  unsigned bits;

  __device__ __forceinline__ uint4 load() {
    const uint4 v = next_chunk < end_chunk ? __ldg(next_chunk) : make_uint4(0, 0, 0, 0);
    ++next_chunk;
    return v;
  }
  __device__ __forceinline__ uint32_t take() {
    const uint32_t v = cur.x;
    cur = make_uint4(cur.y, cur.z, cur.w, 0);
    if (--cur_left == 0) {
      cur = nxt;
      cur_left = 4;
      nxt = load();
    }
    return v;
  }
  __device__ __forceinline__ void init(const uint8_t* begin, const uint8_t* end) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(begin);
    next_chunk = reinterpret_cast<const uint4*>(a & ~uintptr_t{15});
    end_chunk = reinterpret_cast<const uint4*>((reinterpret_cast<uintptr_t>(end) + 15) & ~uintptr_t{15});
    cur = load();
    nxt = load();
    cur_left = 4;
    for (unsigned i = 0; i < (a & 15) / 4; ++i) take();
    const unsigned skip = 8 * (a & 3);
    buf = take() >> skip;
    bits = 32 - skip;
    buf |= static_cast<unsigned long long>(take()) << bits;
    bits += 32;
  }
  __device__ __forceinline__ uint32_t peek() const { return static_cast<uint32_t>(buf) & 0xFFFFu; }
};

// A thread per lane (grid-stride), a token per turn, as the CPU decoder
// (decode_cpu.cpp) and with its checks. The turn's critical path is the
// state's: slot, one shared-memory lookup, a multiply-add, the refill from
// registers (WordReader). A lane's output is staged in registers, one
// aligned group of 8 symbols, written as one 16-byte store when the lane
// leaves a group it put a symbol other than m in (runs need no stores:
// fill_mode wrote m everywhere); groups shared with a neighbouring lane or
// past the output's end are written symbol by symbol, inside the lane only.
template <bool kSharedTables>
__global__ void __launch_bounds__(kMaxLaneThreads) decode_lanes(const DecodeArgs a) {
  extern __shared__ uint4 shared_words[];
  const uint32_t T = 1u << a.prob_bits;
  const unsigned bd = blockDim.x;
  const uint32_t* fb = a.fb;
  const uint8_t* run_tok = a.run_tok;
  const uint16_t* sym_tok = a.sym_tok;
  if constexpr (kSharedTables) share_slot_tables(shared_words, T, fb, sym_tok, run_tok);
  const uint32_t mm = a.mode | a.mode << 16;
  const unsigned M = a.prob_bits;
  const uint64_t stride = uint64_t{gridDim.x} * bd;
  for (uint64_t k = uint64_t{blockIdx.x} * bd + threadIdx.x; k < a.lanes; k += stride) {
    const uint64_t begin = k * a.S;
    const uint32_t len = static_cast<uint32_t>(a.n - begin < a.S ? a.n - begin : a.S);
    const uint64_t end = begin + len;
    uint32_t x = load_word<uint32_t>(a.stream + a.states_at + 4 * k);
    const uint32_t count = load_word<uint16_t>(a.stream + a.words_at + 2 * k);
    const uint8_t* words = a.stream + a.payload_at + 2 * a.starts[k];
    WordReader in;
    in.init(words, words + 2 * count);
    const uint32_t off = static_cast<uint32_t>(begin & 7);  // groups are aligned in the output
    const uint64_t group0 = begin / 8;
    uint32_t s0 = mm, s1 = mm, s2 = mm, s3 = mm;
    uint32_t g = off / 8;  // the staged group, relative to group0
    bool dirty = false;
    // Group group0 + gr to the output: whole, or its symbols inside the lane.
    const auto flush = [&](uint32_t gr) {
      const uint64_t ag = group0 + gr;
      if (8 * ag >= begin && 8 * ag + 8 <= end) {
        reinterpret_cast<uint4*>(a.out)[ag] = make_uint4(s0, s1, s2, s3);
      } else {
        const uint64_t lo = max(8 * ag, begin), hi = min(8 * ag + 8, end);
        for (uint64_t i = lo; i < hi; ++i) {
          const unsigned j = static_cast<unsigned>(i - 8 * ag);
          const uint32_t h = j < 4 ? (j < 2 ? s0 : s1) : (j < 6 ? s2 : s3);
          reinterpret_cast<uint16_t*>(a.out)[i] = static_cast<uint16_t>(h >> (16 * (j % 2)));
        }
      }
    };
    uint32_t p = 0, w = 0;
    bool is_sym = false, ok = true;
    // One turn per token, without branches but for the rare ones (a chunk of
    // words to load, a group to write, an error): a warp's lanes are in
    // different kinds of token, and a branch would run both kinds' code.
    while (p < len) {
      const uint32_t slot = x & (T - 1);
      const uint32_t e = fb[slot + (is_sym ? T : 0)];
      const uint32_t run = run_tok[slot], sym = sym_tok[slot];
      const uint32_t xn = ((e >> 16) + 1) * (x >> M) + (e & 0xFFFFu);
      const bool refill = xn < kStateLow;
      x = refill ? xn << 16 | in.peek() : xn;
      w += refill ? 1 : 0;
      in.buf = refill ? in.buf >> 16 : in.buf;
      in.bits -= refill ? 16 : 0;
      const bool need = in.bits < 32;
      in.buf |= need ? static_cast<unsigned long long>(in.cur.x) << in.bits : 0ull;
      in.bits += need ? 32 : 0;
      in.cur = need ? make_uint4(in.cur.y, in.cur.z, in.cur.w, 0) : in.cur;
      in.cur_left -= need ? 1 : 0;
      if (in.cur_left == 0) {
        in.cur = in.nxt;
        in.cur_left = 4;
        in.nxt = in.load();
      }
      const uint32_t j = (p + off) & 7;
      const uint32_t shift = 16 * (j & 1);
      const uint32_t keep = ~(0xFFFFu << shift), put = sym << shift;
      const uint32_t h = is_sym ? j >> 1 : 4;
      s0 = h == 0 ? (s0 & keep) | put : s0;
      s1 = h == 1 ? (s1 & keep) | put : s1;
      s2 = h == 2 ? (s2 & keep) | put : s2;
      s3 = h == 3 ? (s3 & keep) | put : s3;
      dirty = dirty || is_sym;
      const uint32_t step = is_sym ? 1 : run;
      const bool over = !is_sym && run > len - p;
      p += step;
      const bool next_sym = !is_sym && run < kRunCap && p < len;
      if (over || (next_sym && !a.has_symbols)) {
        ok = false;
        break;
      }
      is_sym = next_sym;
      const uint32_t ng = (p + off) / 8;
      const bool leave = ng != g;
      if (leave && dirty) flush(g);
      s0 = leave ? mm : s0;
      s1 = leave ? mm : s1;
      s2 = leave ? mm : s2;
      s3 = leave ? mm : s3;
      dirty = dirty && !leave;
      g = ng;
    }
    if (!ok || w != count || x != kStateLow) {
      atomicOr(a.status, 1u);
      continue;
    }
    if (dirty) flush(g);
  }
}

}  // namespace
}  // namespace fz::ans::cuda
