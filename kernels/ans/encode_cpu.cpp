// ANS encoding on the CPU (format: ans/ans.hpp). Three passes over the
// symbols, each parallel over runs of consecutive lanes: the symbol histogram
// (which gives the run symbol m and the symbol table), the run-token
// histogram, and the lanes' coding. Each lane's non-m symbols are first
// gathered branch-free into a position list; the run histogram counts the
// gaps in it, and the coder makes each lane's tokens from it as it codes
// them (last to first, no token array), four lanes side by side, so that
// their serial chains overlap. The division of rANS is a multiplication by a
// reciprocal, exact for every 32-bit state.
#include <algorithm>
#include <cstring>
#include <string>

#include "ans/ans.hpp"
#include "ans/ans_format.hpp"
#include "ans/rans_cpu.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using cpu::EncSymbol;
using cpu::make_symbol;
using cpu::put;

uint16_t symbol_at(const uint8_t* p, size_t i) { return load_le<uint16_t>(p + 2 * i); }

// Positions (in the lane) of the lane's symbols other than m, branch-free,
// into pos[1..k] (returns k); pos[0] is -1, the position before the lane, so
// that the run ahead of every symbol is pos[j] - pos[j - 1] - 1 alike.
size_t gather_others(const uint8_t* lane, size_t len, uint16_t m, int32_t* pos) {
  pos[0] = -1;
  size_t k = 1;
  for (size_t i = 0; i < len; ++i) {
    pos[k] = static_cast<int32_t>(i);
    k += symbol_at(lane, i) != m;
  }
  return k - 1;
}

// The run tokens of one lane, counted (format: a run of L before a symbol is
// L / 63 tokens 63 and L mod 63; the lane's final run leaves out a 0). Four
// partial histograms, so that a run length repeated (0, where few symbols
// are m) does not chain each count on the one before.
void count_runs(const int32_t* pos, size_t k, size_t len, uint64_t* runs) {
  uint32_t part[4][kRunTokens] = {};
  uint64_t long_runs = 0;  // tokens 63
  const auto count = [&](uint32_t* h, int64_t L) {
    if (__builtin_expect(L < kRunCap, 1)) {
      ++h[L];
    } else {
      long_runs += static_cast<uint64_t>(L) / kRunCap;
      ++h[static_cast<uint64_t>(L) % kRunCap];
    }
  };
  size_t j = 1;
  for (; j + 4 <= k + 1; j += 4) {
    count(part[0], int64_t{pos[j]} - pos[j - 1] - 1);
    count(part[1], int64_t{pos[j + 1]} - pos[j] - 1);
    count(part[2], int64_t{pos[j + 2]} - pos[j + 1] - 1);
    count(part[3], int64_t{pos[j + 3]} - pos[j + 2] - 1);
  }
  for (; j <= k; ++j) count(part[0], int64_t{pos[j]} - pos[j - 1] - 1);
  const uint64_t L = static_cast<uint64_t>(static_cast<int64_t>(len) - pos[k] - 1);
  long_runs += L / kRunCap;
  if (L % kRunCap != 0) ++runs[L % kRunCap];
  runs[kRunCap] += long_runs;
  for (size_t t = 0; t < kRunTokens; ++t) runs[t] += uint64_t{part[0][t]} + part[1][t] + part[2][t] + part[3][t];
}

// One lane being coded, from its last token to its first: its state, where
// its next word goes (downwards), its symbols and the positions of those
// other than m (pos[0] = -1), and the symbols left to code.
struct LaneCoder {
  uint32_t x = kStateLow;
  uint16_t* ptr = nullptr;
  const uint8_t* lane = nullptr;
  const int32_t* pos = nullptr;
  size_t j = 0;
};

// A run of L ahead of a symbol (or, final, ending the lane), in coding order:
// L mod 63 (left out when final and 0), then L / 63 tokens 63.
inline void put_run(LaneCoder& l, const EncSymbol* enc, uint64_t L, bool final_run) {
  if (__builtin_expect(L < kRunCap, 1)) {
    if (!final_run || L != 0) put(l.x, l.ptr, enc[L]);
    return;
  }
  if (!final_run || L % kRunCap != 0) put(l.x, l.ptr, enc[L % kRunCap]);
  for (uint64_t q = L / kRunCap; q > 0; --q) put(l.x, l.ptr, enc[kRunCap]);
}

// The lane's next symbol other than m (from the last), then the run ahead of it.
inline void put_item(LaneCoder& l, const EncSymbol* enc) {
  put(l.x, l.ptr, enc[kRunTokens + symbol_at(l.lane, static_cast<size_t>(l.pos[l.j]))]);
  put_run(l, enc, static_cast<uint64_t>(int64_t{l.pos[l.j]} - l.pos[l.j - 1] - 1), false);
  --l.j;
}

// Codes up to kInterleave lanes side by side (their serial chains overlap),
// then each lane's rest alone; the tokens are made as they are coded (the
// lane's final run, then per symbol other than m from the last: the symbol,
// the run ahead of it). Lane i writes its words downwards from its ptr (a
// buffer of 2 * len + 1 words below it).
constexpr size_t kInterleave = 4;
void code_lanes(size_t count, LaneCoder* lanes, const EncSymbol* enc) {
  if (count == kInterleave) {
    while (lanes[0].j > 0 && lanes[1].j > 0 && lanes[2].j > 0 && lanes[3].j > 0) {
      put_item(lanes[0], enc);
      put_item(lanes[1], enc);
      put_item(lanes[2], enc);
      put_item(lanes[3], enc);
    }
  }
  for (size_t i = 0; i < count; ++i) {
    while (lanes[i].j > 0) put_item(lanes[i], enc);
  }
}

// The runs of consecutive lanes the workers take: lanes [r*K/R, (r+1)*K/R).
struct Runs {
  size_t count, lanes;
  size_t first(size_t r) const { return lanes * r / count; }
};

}  // namespace

namespace cpu {

std::vector<uint64_t> count_symbols(ByteSpan symbols, uint32_t alphabet, const Executor& exec) {
  // One histogram per part (four interleaved tables hide the
  // store-to-load latency of repeated symbols; a symbol >= A is tallied in
  // slot A, and refused below), and the largest symbol.
  const uint64_t n = symbols.size / 2;
  const uint8_t* data = symbols.data;
  const size_t A = alphabet;
  const size_t parts = static_cast<size_t>(std::min<uint64_t>(std::max(1u, exec.concurrency()), std::max<uint64_t>(1, n / 65536)));
  std::vector<std::vector<uint64_t>> hists(parts);
  std::vector<uint32_t> largest(parts, 0);
  exec.parallel_for(parts, [&](size_t r) {
    const size_t begin = n * r / parts, end = n * (r + 1) / parts;
    const size_t width = A + 1;
    const uint32_t cap = static_cast<uint32_t>(A);
    // Kept per thread and all zero between calls: no allocation (and page
    // faults) per call, and a part shorter than the alphabet (a small
    // chunk's stream) is summed and cleared at its own symbols, not at all
    // 4(A + 1) entries.
    thread_local std::vector<uint32_t> h;
    if (h.size() < 4 * width) h.assign(4 * width, 0);
    hists[r].assign(A, 0);  // before the tallies: nothing between them and their clearing throws
    uint32_t top = 0;
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
      const uint64_t four = load_le<uint64_t>(data + 2 * i);
      const uint32_t a = four & 0xFFFF, b = (four >> 16) & 0xFFFF, c = (four >> 32) & 0xFFFF, d = four >> 48;
      ++h[std::min(a, cap)];
      ++h[width + std::min(b, cap)];
      ++h[2 * width + std::min(c, cap)];
      ++h[3 * width + std::min(d, cap)];
      top = std::max(top, std::max(std::max(a, b), std::max(c, d)));
    }
    for (; i < end; ++i) {
      ++h[std::min<uint32_t>(symbol_at(data, i), cap)];
      top = std::max<uint32_t>(top, symbol_at(data, i));
    }
    largest[r] = top;
    const auto take = [&](size_t s) {  // s's four tallies, cleared; += : a symbol met again adds 0
      const uint64_t sum = uint64_t{h[s]} + h[width + s] + h[2 * width + s] + h[3 * width + s];
      h[s] = h[width + s] = h[2 * width + s] = h[3 * width + s] = 0;
      return sum;
    };
    if (end - begin < A) {
      for (i = begin; i < end; ++i) {
        const size_t s = std::min<uint32_t>(symbol_at(data, i), cap);
        const uint64_t sum = take(s);
        if (s < A) hists[r][s] += sum;  // slot A: a symbol refused below
      }
    } else {
      for (size_t s = 0; s < A; ++s) hists[r][s] = take(s);
      take(A);
    }
  });
  for (size_t r = 0; r < parts; ++r) {
    if (largest[r] >= A) {
      throw UsageError("ANS symbol " + std::to_string(largest[r]) + " outside the alphabet of " + std::to_string(A));
    }
  }
  if (parts == 1) return std::move(hists[0]);
  std::vector<uint64_t> counts(A, 0);
  for (const auto& h : hists) {
    for (size_t s = 0; s < A; ++s) counts[s] += h[s];
  }
  return counts;
}

}  // namespace cpu

void encode(ByteSpan symbols, const Config& config, Bytes& out, const Executor& exec) {
  format::check_config(config);
  if (symbols.size % 2 != 0) throw UsageError("ANS input is u16 symbols: its length must be even");
  const uint64_t n = symbols.size / 2;
  if (n == 0) {
    out = format::write_stored(symbols);
    return;
  }
  const size_t S = config.lane_symbols;
  const size_t A = config.alphabet;
  const uint64_t lanes = format::lane_count(n, config);
  const Runs runs{std::min<size_t>(std::max(1u, exec.concurrency()), lanes), lanes};
  const auto lane_len = [&](size_t lane) { return static_cast<size_t>(std::min<uint64_t>(S, n - lane * S)); };
  const uint8_t* data = symbols.data;

  std::vector<uint64_t> counts = cpu::count_symbols(symbols, config.alphabet, exec);
  const uint16_t m = format::mode_of(counts);
  counts[m] = 0;  // every other symbol is one symbol token

  // Run-token histogram.
  std::vector<std::vector<uint64_t>> run_hists(runs.count, std::vector<uint64_t>(kRunTokens, 0));
  exec.parallel_for(runs.count, [&](size_t r) {
    thread_local std::vector<int32_t> pos;
    pos.resize(S + 1);
    for (size_t lane = runs.first(r); lane < runs.first(r + 1); ++lane) {
      const size_t len = lane_len(lane);
      const uint8_t* at = data + 2 * lane * S;
      count_runs(pos.data(), gather_others(at, len, m, pos.data()), len, run_hists[r].data());
    }
  });
  std::vector<uint64_t> run_counts(kRunTokens, 0);
  for (const auto& h : run_hists) {
    for (size_t t = 0; t < kRunTokens; ++t) run_counts[t] += h[t];
  }

  const std::vector<uint32_t> run_freq = format::normalize(run_counts, config.prob_bits);
  const std::vector<uint32_t> symbol_freq = format::normalize(counts, config.prob_bits);
  const std::vector<uint32_t> run_cum = format::cumulative(run_freq);
  const std::vector<uint32_t> symbol_cum = format::cumulative(symbol_freq);
  // Only the tokens with f > 0 are set: no other token occurs in the input.
  thread_local std::vector<EncSymbol> enc_table;
  enc_table.resize(kRunTokens + A);
  EncSymbol* const enc = enc_table.data();
  for (size_t t = 0; t < kRunTokens; ++t) {
    if (run_freq[t] != 0) enc[t] = make_symbol(run_freq[t], run_cum[t], config.prob_bits);
  }
  for (size_t s = 0; s < A; ++s) {
    if (symbol_freq[s] != 0) enc[kRunTokens + s] = make_symbol(symbol_freq[s], symbol_cum[s], config.prob_bits);
  }

  // The lanes, in batches of kBatchLanes per worker: each worker codes its
  // part of a batch, kInterleave lanes at a time, into its own buffer, and
  // the buffers are appended to `out` in lane order before the next batch.
  // So memory stays about the stream itself: `out` is reserved at method 0's
  // size up front (pages are only touched as words arrive), and once the
  // words make the stream no smaller than method 0's (noise) coding stops.
  const Bytes head = format::write_head(n, m, run_freq, symbol_freq);
  size_t varint_bytes = 1;
  for (uint64_t v = n; v >= 0x80; v >>= 7) ++varint_bytes;
  const size_t stored_size = varint_bytes + 1 + 2 * n;
  const size_t states_at = head.size(), words_at = states_at + 4 * lanes, payload_at = words_at + 2 * lanes;
  if (payload_at >= stored_size) {
    out = format::write_stored(symbols);
    return;
  }
  out.clear();
  out.reserve(stored_size);
  out.insert(out.end(), head.begin(), head.end());
  out.resize(payload_at, 0);
  std::vector<std::vector<uint16_t>> run_words(runs.count);
  std::vector<uint32_t> states(lanes);
  std::vector<uint16_t> word_counts(lanes);
  constexpr size_t kBatchLanes = 64;
  const size_t batch = kBatchLanes * runs.count;
  bool too_big = false;
  for (size_t b0 = 0; b0 < lanes && !too_big; b0 += batch) {
    const size_t b1 = std::min<size_t>(lanes, b0 + batch);
    const Runs part{runs.count, b1 - b0};
    exec.parallel_for(runs.count, [&](size_t r) {
      thread_local std::vector<int32_t> pos;
      thread_local std::vector<uint16_t> scratch;
      pos.resize(kInterleave * (S + 1));
      scratch.resize(kInterleave * (2 * S + 1));
      std::vector<uint16_t>& words = run_words[r];
      words.clear();
      const size_t last = b0 + part.first(r + 1);
      for (size_t first = b0 + part.first(r); first < last; first += kInterleave) {
        const size_t count = std::min(kInterleave, last - first);
        LaneCoder group[kInterleave];
        uint16_t* end[kInterleave];
        for (size_t i = 0; i < count; ++i) {
          const size_t len = lane_len(first + i);
          LaneCoder& l = group[i];
          l.lane = data + 2 * (first + i) * S;
          int32_t* at = pos.data() + i * (S + 1);
          l.pos = at;
          l.j = gather_others(l.lane, len, m, at);
          end[i] = scratch.data() + (i + 1) * (2 * S + 1);
          l.ptr = end[i];
          put_run(l, enc, static_cast<uint64_t>(static_cast<int64_t>(len) - at[l.j] - 1), true);
        }
        code_lanes(count, group, enc);
        for (size_t i = 0; i < count; ++i) {
          states[first + i] = group[i].x;
          word_counts[first + i] = static_cast<uint16_t>(end[i] - group[i].ptr);
          words.insert(words.end(), group[i].ptr, end[i]);
        }
      }
    });
    for (const auto& w : run_words) {
      if (out.size() + 2 * w.size() >= stored_size) {
        too_big = true;
        break;
      }
      const size_t at = out.size();
      out.resize(at + 2 * w.size());
      if (!w.empty()) std::memcpy(out.data() + at, w.data(), 2 * w.size());
    }
  }
  if (too_big) {  // method 0
    out = Bytes();
    out = format::write_stored(symbols);
    return;
  }
  for (size_t lane = 0; lane < lanes; ++lane) {
    store_le<uint32_t>(out.data() + states_at + 4 * lane, states[lane]);
    store_le<uint16_t>(out.data() + words_at + 2 * lane, word_counts[lane]);
  }
}

}  // namespace fz::ans
