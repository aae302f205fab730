// Stage type 15's encoder on the CPU (format: interleaved.hpp). Passes: the
// symbol counts (type 14's, cpu::count_symbols) give m; the tile histograms,
// in parallel over runs of tiles, give the plan (interleaved_format::plan:
// C, W, S, the tables, the head); then the lanes, in parallel over runs of
// lanes, each tokenised into per-thread pair arrays (the same tile walk as
// the histograms) and coded by its W states from the last round to the
// first, each step's words prepended as one block. Words go into one
// buffer, lane k's below 2(kS + len_k) + k + 1 written downwards, and are
// gathered after the records once every lane's word count is known.
#include <algorithm>
#include <cstring>
#include <string>

#include "ans/ans_format.hpp"
#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/interleaved_tiles.hpp"
#include "ans/rans_cpu.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

namespace ifmt = interleaved_format;

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

// One lane's pairs: run token and symbol token (ESC = A) of pair p.
struct Pairs {
  std::vector<uint8_t> run;
  std::vector<uint16_t> symbol;
  size_t count = 0;
};

// The lane's pairs with cap C (the format's tokens): R = a*C + b before a
// symbol s is a pairs (C, ESC) then (b, s); a tile's final run the same with
// (b, ESC) only when b > 0. (Local pointers and count: stores through the
// vectors' bytes could alias a member count, and reload it every pair.)
void tokenize(const uint8_t* lane, size_t len, uint16_t mode, uint32_t cap, uint32_t esc, Pairs& pairs) {
  if (pairs.run.size() < len) {
    pairs.run.resize(len);
    pairs.symbol.resize(len);
  }
  uint8_t* run_tokens = pairs.run.data();
  uint16_t* symbol_tokens = pairs.symbol.data();
  size_t count = 0;
  const auto push = [&](uint32_t t, uint32_t s) {
    run_tokens[count] = static_cast<uint8_t>(t);
    symbol_tokens[count] = static_cast<uint16_t>(s);
    ++count;
  };
  const auto long_run = [&](uint32_t run) {
    for (; run >= cap; run -= cap) push(cap, esc);
    return run;
  };
  interleaved_detail::walk_tiles(
      lane, len, mode, [&](uint32_t run, uint16_t s) { push(run < cap ? run : long_run(run), s); },
      [&](uint32_t run) {
        const uint32_t b = run < cap ? run : long_run(run);
        if (b > 0) push(b, esc);
      });
  pairs.count = count;
}

// One step of each of `count` states (state j codes token tokens[j] from
// enc), from the last state to the first, each word emitted stored below
// ptr: so the step's words lie in increasing j, below (before) the words of
// every later-coded round, as the format's blocks do.
template <typename Token>
inline void step_block(uint32_t* x, uint32_t count, const Token* tokens, const cpu::EncSymbol* enc, uint16_t*& ptr) {
  for (uint32_t j = count; j-- > 0;) cpu::put(x[j], ptr, enc[tokens[j]]);
}

size_t code_lane(const Pairs& pairs, uint32_t W, const cpu::EncSymbol* run_enc, const cpu::EncSymbol* symbol_enc,
                 uint16_t* end, uint32_t* state) {
  uint32_t x[kMaxStates];
  std::fill(x, x + W, kStateLow);
  uint16_t* ptr = end;
  const size_t P = pairs.count;
  for (size_t rounds = (P + W - 1) / W; rounds > 0; --rounds) {
    const size_t base = (rounds - 1) * W;
    const uint32_t count = static_cast<uint32_t>(std::min<size_t>(W, P - base));
    step_block(x, count, pairs.symbol.data() + base, symbol_enc, ptr);
    step_block(x, count, pairs.run.data() + base, run_enc, ptr);
  }
  std::copy(x, x + W, state);
  return static_cast<size_t>(end - ptr);
}

// Work split into `count` runs of consecutive items: run r is [r*N/count, (r+1)*N/count).
struct Runs {
  size_t count;
  uint64_t items;
  uint64_t first(size_t r) const { return items * r / count; }
};

Runs runs_of(const Executor& exec, uint64_t items) {
  return Runs{static_cast<size_t>(std::min<uint64_t>(std::max(1u, exec.concurrency()), items)), items};
}

}  // namespace

void encode_interleaved(ByteSpan symbols, const InterleavedConfig& config, Bytes& out, const Executor& exec) {
  ifmt::check_config(config);
  if (symbols.size % 2 != 0) throw UsageError("ANS input is u16 symbols: its length must be even");
  const uint64_t n = symbols.size / 2;
  if (n == 0) {
    out = format::write_stored(symbols);
    return;
  }
  const uint8_t* data = symbols.data;
  const uint32_t A = config.alphabet;
  const std::vector<uint64_t> counts = cpu::count_symbols(symbols, A, exec);
  const uint16_t m = format::mode_of(counts);

  const uint64_t tiles = (n + kTileSymbols - 1) / kTileSymbols;
  const Runs tile_runs = runs_of(exec, tiles);
  std::vector<ifmt::TileHistograms> parts(tile_runs.count);
  exec.parallel_for(tile_runs.count, [&](size_t r) {
    const uint64_t begin = tile_runs.first(r) * kTileSymbols;
    const uint64_t end = std::min<uint64_t>(n, tile_runs.first(r + 1) * kTileSymbols);
    parts[r] = ifmt::tile_histograms(data + 2 * begin, end - begin, m);
  });
  ifmt::TileHistograms histograms;
  for (const auto& h : parts) histograms += h;
  const ifmt::Plan plan = ifmt::plan(n, counts, histograms, config);
  const uint64_t stored = ifmt::stored_size(n);
  if (plan.payload_at >= stored) {
    out = format::write_stored(symbols);
    return;
  }

  // Only the tokens with f > 0 are set: no other token occurs in the input,
  // so the others are never read. Kept per thread, sized once: setting them
  // costs the listed symbols, not A.
  thread_local std::vector<cpu::EncSymbol> run_enc, symbol_enc;
  run_enc.resize(plan.run_freq.size());
  symbol_enc.resize(plan.symbol_freq.size());
  for (size_t t = 0; t < run_enc.size(); ++t) {
    if (plan.run_freq[t] != 0) run_enc[t] = cpu::make_symbol(plan.run_freq[t], plan.run_cum[t], config.prob_bits);
  }
  for (const uint32_t s : plan.symbol_listed) {
    symbol_enc[s] = cpu::make_symbol(plan.symbol_freq[s], plan.symbol_cum[s], config.prob_bits);
  }
  // (A thread_local's name means the running thread's: the workers get these pointers.)
  const cpu::EncSymbol* const run_table = run_enc.data();
  const cpu::EncSymbol* const symbol_table = symbol_enc.data();

  const uint64_t S = plan.lane_symbols, K = plan.lanes;
  const uint32_t W = plan.states;
  // Each lane is coded into its thread's scratch (at most 2 words a pair, a
  // pair per symbol, and the slot below them that cpu::put may store to) and
  // its words kept at their size: the memory beyond the input and the stream
  // is about the stream again, not the 2 words a symbol a buffer for every
  // lane at once would take (4 bytes a code: 1.6x a 256 MiB float32 chunk
  // for cuszhi-cr, over memory_budget_test's limit).
  std::vector<std::vector<uint16_t>> lane_words(K);
  std::vector<uint64_t> pair_counts(K);
  std::vector<uint32_t> states(K * W);
  const Runs lane_runs = runs_of(exec, K);
  exec.parallel_for(lane_runs.count, [&](size_t r) {
    thread_local Pairs pairs;  // kept per thread: no allocation per lane or call
    thread_local std::vector<uint16_t> scratch;
    for (uint64_t k = lane_runs.first(r); k < lane_runs.first(r + 1); ++k) {
      const uint64_t len = ifmt::lane_length(n, S, k);
      tokenize(data + 2 * k * S, len, m, plan.cap, A, pairs);
      pair_counts[k] = pairs.count;
      if (scratch.size() < 2 * len + 1) scratch.resize(2 * len + 1);
      uint16_t* end = scratch.data() + 2 * len + 1;
      const size_t words = code_lane(pairs, W, run_table, symbol_table, end, states.data() + k * W);
      lane_words[k].assign(end - words, end);
    }
  });
  uint64_t total_words = 0;
  for (const auto& w : lane_words) total_words += w.size();
  if (plan.payload_at + 2 * total_words >= stored) {
    out = format::write_stored(symbols);
    return;
  }
  out.assign(plan.head.begin(), plan.head.end());
  out.resize(plan.payload_at + 2 * total_words);
  uint8_t* payload = out.data() + plan.payload_at;
  for (uint64_t k = 0; k < K; ++k) {
    const std::vector<uint16_t>& words = lane_words[k];
    ifmt::put_record(out.data() + plan.records_at + k * plan.record_bytes, static_cast<uint32_t>(pair_counts[k]),
                     static_cast<uint32_t>(words.size()), states.data() + k * W, W);
    for (size_t i = 0; i < words.size(); ++i) store_le<uint16_t>(payload + 2 * i, words[i]);
    payload += 2 * words.size();
    std::vector<uint16_t>().swap(lane_words[k]);  // freed as it is copied
  }
}

}  // namespace fz::ans
