// The ANS CUDA kernels (schedule and host dispatch: ans_cuda.cu): run-token
// counts and the mask of symbols other than m, the lanes' encoder, the final
// stream (the decoder's kernels are in decode_kernels_cuda.cuh; the tables'
// kernels and the encoder's step, shared with stage type 15, in
// rans_common_cuda.cuh). Internal to ans_cuda.cu, which alone includes it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ans/ans.hpp"
#include "ans/ans_cuda.hpp"
#include "ans/rans_common_cuda.cuh"
#include "common/words_cuda.cuh"

namespace fz::ans::cuda {
namespace {  // internal linkage, as in ans_cuda.cu, the one file that includes this

using cuda_detail::load_word;
using cuda_detail::store_word;

constexpr unsigned kCountThreads = 256;    // count_run_tokens: a warp per lane
constexpr unsigned kMaxLaneThreads = 512;  // encode / decode: a thread per lane

__device__ __forceinline__ uint32_t symbol_at(const uint8_t* symbols, uint64_t i) {
  return load_word<uint16_t>(symbols + 2 * i);
}

// ---- run-token counts ----------------------------------------------------------

// A warp per lane: each step reads 1024 symbols (32 coalesced loads, a
// ballot each: thread j keeps mask word j), writes the mask words, finds
// each word's previous symbol other than m by a max-scan across the warp,
// and counts the runs between them (format: a run of L before a symbol is
// L / 63 tokens 63 and the token L mod 63; the lane's final run leaves out a
// 0). Runs of 0 (symbols side by side) and tokens 63 are counted per thread;
// the rest go to the block's shared bins.
__global__ void __launch_bounds__(kCountThreads)
    count_run_tokens_kernel(const uint8_t* symbols, uint64_t n, uint32_t S, uint64_t lanes, uint32_t mode,
                            uint32_t mask_words, uint32_t* mask, unsigned long long* run_counts) {
  __shared__ uint32_t bins[kRunTokens];
  for (unsigned i = threadIdx.x; i < kRunTokens; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  const unsigned lane_id = threadIdx.x % 32;
  const uint64_t k = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  if (k < lanes) {  // the same for the whole warp
    const uint64_t begin = k * S;
    const uint32_t len = static_cast<uint32_t>(n - begin < S ? n - begin : S);
    const uint32_t words = (len + 31) / 32;
    uint32_t* lane_mask = mask + k * mask_words;
    int last = -1;  // the lane position of the last symbol other than m so far
    uint32_t zeros = 0, caps = 0;
    for (uint32_t base = 0; base < words; base += 32) {
      uint32_t mine = 0;
      for (unsigned j = 0; j < 32; ++j) {
        const uint32_t pos = (base + j) * 32 + lane_id;
        const bool other = pos < len && symbol_at(symbols, begin + pos) != mode;
        const uint32_t ballot = __ballot_sync(kFullMask, other);
        if (lane_id == j) mine = ballot;
      }
      const uint32_t w = base + lane_id;
      if (w < words) lane_mask[w] = mine;
      const int top = mine != 0 ? static_cast<int>(w * 32 + 31 - __clz(mine)) : -1;
      int inclusive = top;
      for (unsigned d = 1; d < 32; d <<= 1) {
        const int v = __shfl_up_sync(kFullMask, inclusive, d);
        if (lane_id >= d) inclusive = max(inclusive, v);
      }
      int prev = __shfl_up_sync(kFullMask, inclusive, 1);
      if (lane_id == 0) prev = -1;
      prev = max(prev, last);
      last = max(last, __shfl_sync(kFullMask, inclusive, 31));
      uint32_t bits = mine;
      while (bits != 0) {
        const int pos = static_cast<int>(w * 32) + __ffs(bits) - 1;
        bits &= bits - 1;
        const uint32_t L = static_cast<uint32_t>(pos - prev - 1);
        prev = pos;
        caps += L / kRunCap;
        const uint32_t r = L % kRunCap;
        if (r == 0) {
          ++zeros;
        } else {
          atomicAdd(&bins[r], 1u);
        }
      }
    }
    if (lane_id == 0) {  // the final run
      const uint32_t L = static_cast<uint32_t>(static_cast<int>(len) - last - 1);
      caps += L / kRunCap;
      if (L % kRunCap != 0) atomicAdd(&bins[L % kRunCap], 1u);
    }
    if (zeros != 0) atomicAdd(&bins[0], zeros);
    if (caps != 0) atomicAdd(&bins[kRunCap], caps);
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < kRunTokens; i += blockDim.x)
    if (bins[i] != 0) atomicAdd(&run_counts[i], static_cast<unsigned long long>(bins[i]));
}

// ---- encode --------------------------------------------------------------------

struct EncodeArgs {
  const uint8_t* symbols;
  const uint32_t* mask;
  uint64_t n, lanes;
  uint32_t S, mask_words;
  unsigned prob_bits;
  uint32_t table_size;  // kRunTokens + A
  const uint32_t* fc;
  const unsigned long long* rcp;
  uint16_t* scratch;  // first pass: lane k's words end at scratch + k*S + len
  uint8_t* out;
  size_t states_at, words_at, payload_at, stored_size;
  uint64_t* counts;        // first pass: each lane's word count
  const uint64_t* starts;  // second pass: words before each lane (lanes + 1)
  bool second_pass;        // code the lanes whose words passed their scratch, into the stream
};

// One token coded (ans.hpp): x = (x / f) * T + (x mod f) + c, after emitting
// a word when x >= f << (32 - M). The words go downwards from `end`; past
// `cap` they are only counted.
__device__ __forceinline__ void put_token(uint32_t& x, uint32_t fc, unsigned long long rcp, unsigned M, uint16_t* end,
                                          uint32_t cap, uint32_t& written) {
  uint16_t word;
  const bool emit = encode_step(x, fc, rcp, M, word);  // no branch: the warp's lanes disagree
  if (emit && written < cap) end[-1 - static_cast<int64_t>(written)] = word;
  written += emit ? 1 : 0;
}

// A thread per lane (grid-stride). The lane's tokens, last to first, come
// from its mask read backwards: at each symbol other than m (found by bit
// scans) the run after it is complete; the tokens wait in a small queue (the
// run's L mod 63, its tokens 63, the symbol) and leave one per turn. Each
// turn looks up the next token's entry and codes the one looked up the turn
// before, so the lookup's latency hides behind the coding; likewise each
// symbol other than m is loaded a queue ahead (find_next), not when its
// tokens are made.
template <bool kSharedTables>
__global__ void __launch_bounds__(kMaxLaneThreads) encode_lanes(const EncodeArgs a) {
  extern __shared__ uint4 shared_words[];
  if (a.second_pass && a.payload_at + 2 * a.starts[a.lanes] >= a.stored_size) return;  // method 0: nothing to code
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const uint64_t first = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (a.second_pass) {  // only blocks with such a lane go on
    bool any = false;
    for (uint64_t k = first; k < a.lanes; k += stride) {
      const uint64_t len = a.n - k * a.S < a.S ? a.n - k * a.S : a.S;
      any |= a.starts[k + 1] - a.starts[k] > len;
    }
    if (!__syncthreads_or(any)) return;
  }
  const uint32_t* fc = a.fc;
  const unsigned long long* rcp = a.rcp;
  if constexpr (kSharedTables) share_encoder_tables(shared_words, a.table_size, fc, rcp);
  for (uint64_t k = first; k < a.lanes; k += stride) {
    const uint64_t begin = k * a.S;
    const uint32_t len = static_cast<uint32_t>(a.n - begin < a.S ? a.n - begin : a.S);
    uint16_t* end;
    uint32_t cap;
    if (!a.second_pass) {
      end = a.scratch + begin + len;
      cap = len;
    } else {
      const uint32_t words = static_cast<uint32_t>(a.starts[k + 1] - a.starts[k]);
      if (words <= len) continue;
      end = reinterpret_cast<uint16_t*>(a.out + a.payload_at) + a.starts[k + 1];
      cap = words;
    }
    const uint32_t* lane_mask = a.mask + k * a.mask_words;
    int w = static_cast<int>((len + 31) / 32) - 1;
    uint32_t bits = lane_mask[w];
    uint32_t next_bits = w > 0 ? lane_mask[w - 1] : 0;
    // The next symbol other than m (going down), its load issued a queue
    // ahead of its use: npos < 0 when none is left.
    int npos = -1;
    uint32_t nsym = 0;
    const auto find_next = [&]() {
      while (bits == 0 && w > 0) {
        --w;
        bits = next_bits;
        next_bits = w > 0 ? lane_mask[w - 1] : 0;
      }
      npos = -1;
      if (bits != 0) {
        const int b = 31 - __clz(bits);
        bits &= ~(1u << b);
        npos = 32 * w + b;
        nsym = symbol_at(a.symbols, begin + npos);
      }
    };
    find_next();
    int cursor = static_cast<int>(len);  // positions >= cursor are tokenised
    bool seen = false, done = false;     // seen: a symbol other than m (runs before it always give L mod 63)
    bool has_r = false, has_s = false;
    uint32_t r = 0, caps = 0, sym = 0;
    bool have = false;
    uint32_t cur_fc = 0;
    unsigned long long cur_rcp = 0;
    uint32_t x = kStateLow, written = 0;
    for (;;) {
      if (!has_r && caps == 0 && !has_s && !done) {
        if (npos >= 0) {
          const int pos = npos;
          const uint32_t L = static_cast<uint32_t>(cursor - pos - 1);
          r = L % kRunCap;
          caps = L / kRunCap;
          has_r = seen || r != 0;
          sym = nsym;
          has_s = true;
          seen = true;
          cursor = pos;
          find_next();
        } else {  // the lane's start: the run before its first symbol other than m
          const uint32_t L = static_cast<uint32_t>(cursor);
          r = L % kRunCap;
          caps = L / kRunCap;
          has_r = seen || r != 0;
          done = true;
        }
      }
      bool next = true;
      uint32_t token = 0;
      if (has_r) {
        token = r;
        has_r = false;
      } else if (caps > 0) {
        token = kRunCap;
        --caps;
      } else if (has_s) {
        token = kRunTokens + sym;
        has_s = false;
      } else {
        next = false;
      }
      uint32_t next_fc = 0;
      unsigned long long next_rcp = 0;
      if (next) {
        next_fc = fc[token];
        next_rcp = rcp[token];
      }
      if (have) put_token(x, cur_fc, cur_rcp, a.prob_bits, end, cap, written);
      have = next;
      cur_fc = next_fc;
      cur_rcp = next_rcp;
      if (!have && done && !has_r && caps == 0 && !has_s) break;
    }
    if (!a.second_pass) {
      store_word<uint32_t>(a.out + a.states_at + 4 * k, x);
      store_word<uint16_t>(a.out + a.words_at + 2 * k, static_cast<uint16_t>(written));
      a.counts[k] = written;
    }
  }
}

// Method 0's bytes before the symbols, as an argument.
struct StoredPrefix {
  uint8_t bytes[12];
  uint32_t size;
};

// The stream's last step: method 1 when its length is below method 0's (the
// lanes' words moved from their scratch to their places; lanes whose words
// passed it were coded there by the second pass), else method 0; and the
// length. Warps take lanes; for method 0 every thread takes bytes.
__global__ void __launch_bounds__(kPrepThreads)
    finish_stream(const uint8_t* symbols, uint64_t n, uint64_t lanes, uint32_t S, const uint16_t* scratch,
                  const uint64_t* starts, uint8_t* out, size_t payload_at, size_t stored_size, StoredPrefix prefix,
                  bool force_stored, uint64_t* encoded_size) {
  const uint64_t thread = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t threads = uint64_t{gridDim.x} * blockDim.x;
  const bool coded = !force_stored && payload_at + 2 * starts[lanes] < stored_size;
  if (coded) {
    if (thread == 0) *encoded_size = payload_at + 2 * starts[lanes];
    uint16_t* payload = reinterpret_cast<uint16_t*>(out + payload_at);
    for (uint64_t k = thread / 32; k < lanes; k += threads / 32) {
      const uint64_t begin = k * S;
      const uint64_t len = n - begin < S ? n - begin : S;
      const uint64_t words = starts[k + 1] - starts[k];
      if (words > len) continue;  // the second pass put them there
      const uint16_t* src = scratch + begin + len - words;
      uint16_t* dst = payload + starts[k];
      for (uint64_t i = threadIdx.x % 32; i < words; i += 32) dst[i] = src[i];
    }
  } else {
    if (thread == 0) *encoded_size = stored_size;
    for (uint64_t i = thread; i < stored_size; i += threads)
      out[i] = i < prefix.size ? prefix.bytes[i] : symbols[i - prefix.size];
  }
}

}  // namespace
}  // namespace fz::ans::cuda
