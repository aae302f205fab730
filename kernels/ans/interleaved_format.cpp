// Stage type 15's host routines (interleaved_format.hpp): the config check,
// lg16, the tile histograms, the encoder's plan (m, C, W, S and the tables,
// from integer rules only) and the head it writes, and a stream's head and
// lane records parsed and validated. Both backends call these, so they write
// the same bytes and refuse the same streams. The tables' normalisation and
// bit strings, and the varints, are type 14's (format_cpu.cpp).
#include <algorithm>
#include <string>

#include "ans/ans_format.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/interleaved_tiles.hpp"
#include "common/error.hpp"

namespace fz::ans::interleaved_format {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

constexpr size_t kMaxVarintBytes = 10;
// varint n, u8 method, u16 m, u8 C, u8 W, varint S: the bytes before the tables, at most.
constexpr size_t kMaxFieldsBytes = 2 * kMaxVarintBytes + 5;

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

size_t varint_size(uint64_t v) {
  size_t b = 1;
  for (; v >= 0x80; v >>= 7) ++b;
  return b;
}

// P(C)'s share of a table: the sum over every counted token of c * (16 M - lg16(f)).
uint64_t payload_bits16(const uint64_t* counts, const uint32_t* freq, size_t size, unsigned prob_bits) {
  uint64_t p = 0;
  for (size_t v = 0; v < size; ++v) {
    if (counts[v] != 0) p += counts[v] * (16 * prob_bits - lg16(freq[v]));
  }
  return p;
}

}  // namespace

void check_config(const InterleavedConfig& config) {
  if (config.alphabet < 2 || config.alphabet > kMaxAlphabet) {
    throw UsageError("ANS (interleaved) alphabet size must be 2..65535, got " + std::to_string(config.alphabet));
  }
  if (config.prob_bits < kMinProbBitsInterleaved || config.prob_bits > kMaxProbBits ||
      (uint64_t{1} << config.prob_bits) < uint64_t{config.alphabet} + 1) {
    throw UsageError("ANS (interleaved) probability bits must be 8..16 with 2^M >= A + 1, got M " +
                     std::to_string(unsigned{config.prob_bits}) + " for A " + std::to_string(config.alphabet));
  }
}

uint32_t lg16(uint64_t v) {
  if (v == 0 || v >> 32 != 0) throw UsageError("lg16: argument outside [1, 2^32)");
  const unsigned b = 63 - static_cast<unsigned>(__builtin_clzll(v));
  uint64_t y = v << (31 - b);
  uint32_t r = 16 * b;
  for (int i = 3; i >= 0; --i) {
    y = (y * y) >> 31;  // y < 2^32 before: the square fits 64 bits
    if (y >= (uint64_t{1} << 32)) {
      y >>= 1;
      r += 1u << i;
    }
  }
  return r;
}

TileHistograms& TileHistograms::operator+=(const TileHistograms& other) {
  for (size_t t = 0; t <= kCapSmall; ++t) run63[t] += other.run63[t];
  for (size_t t = 0; t <= kCapLarge; ++t) run255[t] += other.run255[t];
  esc63 += other.esc63;
  esc255 += other.esc255;
  return *this;
}

TileHistograms tile_histograms(const uint8_t* symbols, size_t n, uint16_t mode) {
  TileHistograms h;
  // Runs below 63 are the same token for both caps: counted once, in two
  // alternating tables (a run length repeated, 0 where few symbols are m,
  // does not chain each count on the one before), and added to both at the end.
  uint64_t short_runs[2][kCapSmall] = {};
  unsigned flip = 0;
  // A run of R before a symbol: R / C pairs (C, ESC), then the token R mod C.
  const auto add_run = [&](uint32_t run) {
    if (run < kCapSmall) {
      ++short_runs[flip ^= 1][run];
      return;
    }
    h.run63[kCapSmall] += run / kCapSmall;
    h.esc63 += run / kCapSmall;
    ++h.run63[run % kCapSmall];
    h.run255[kCapLarge] += run / kCapLarge;
    h.esc255 += run / kCapLarge;
    ++h.run255[run % kCapLarge];
  };
  interleaved_detail::walk_tiles(
      symbols, n, mode, [&](uint32_t run, uint16_t) { add_run(run); },
      [&](uint32_t run) {
        // The tile's final run: its remainder is a pair (b, ESC) only when b > 0.
        add_run(run);
        if (run % kCapSmall == 0) {
          --h.run63[0];
        } else {
          ++h.esc63;
        }
        if (run % kCapLarge == 0) {
          --h.run255[0];
        } else {
          ++h.esc255;
        }
      });
  for (size_t t = 0; t < kCapSmall; ++t) {
    h.run63[t] += short_runs[0][t] + short_runs[1][t];
    h.run255[t] += short_runs[0][t] + short_runs[1][t];
  }
  return h;
}

Plan plan(uint64_t n, const std::vector<uint64_t>& counts, const TileHistograms& histograms,
          const InterleavedConfig& config) {
  check_config(config);
  if (n == 0) throw UsageError("ANS (interleaved): no plan for an empty input");
  if (counts.size() != config.alphabet) throw UsageError("ANS (interleaved): counts must have A entries");
  // The symbol tokens as a list of the counted ones (s != m, then ESC = A),
  // in increasing order: normalised, costed and written as the whole
  // alphabet's table would be, at a cost that scales with the symbols that
  // occur, not with A (a small chunk's stream has a few hundred of 8192).
  // One pass over the counts lists them (m too, taken out below) and sums them.
  std::vector<uint32_t> listed;
  std::vector<uint64_t> listed_counts;
  uint64_t total = 0;
  for (uint32_t s = 0; s < config.alphabet; ++s) {
    if (counts[s] != 0) {
      total += counts[s];
      listed.push_back(s);
      listed_counts.push_back(counts[s]);
    }
  }
  if (total != n) throw UsageError("ANS (interleaved): counts do not sum to n");

  Plan p;
  p.n = n;
  // m = format::mode_of(counts): the first listed symbol with the largest count.
  size_t mode_at = 0;
  for (size_t i = 1; i < listed.size(); ++i) {
    if (listed_counts[i] > listed_counts[mode_at]) mode_at = i;
  }
  p.mode = static_cast<uint16_t>(listed[mode_at]);
  listed.erase(listed.begin() + mode_at);
  listed_counts.erase(listed_counts.begin() + mode_at);
  const unsigned M = config.prob_bits;
  listed.push_back(config.alphabet);
  listed_counts.push_back(0);
  struct Cost {
    uint64_t bits = 0, pairs = 0;
    std::vector<uint32_t> run_freq, symbol_freq;  // symbol_freq: one per listed token
  };
  const auto cost_of = [&](const uint64_t* run, uint32_t cap, uint64_t esc) {
    Cost c;
    for (uint32_t t = 0; t <= cap; ++t) c.pairs += run[t];
    listed_counts.back() = esc;
    c.run_freq = format::normalize(run, cap + 1, M);
    c.symbol_freq = format::normalize(listed_counts.data(), listed.size(), M);
    const uint64_t p16 = payload_bits16(run, c.run_freq.data(), cap + 1, M) +
                         payload_bits16(listed_counts.data(), c.symbol_freq.data(), listed.size(), M);
    c.bits = format::table_bits(c.run_freq) + format::table_bits(listed.data(), c.symbol_freq.data(), listed.size()) +
             p16 / 16;
    return c;
  };
  Cost small = cost_of(histograms.run63, kCapSmall, histograms.esc63);
  Cost large = cost_of(histograms.run255, kCapLarge, histograms.esc255);
  p.cost_small = small.bits;
  p.cost_large = large.bits;
  const bool use_large = p.cost_large < p.cost_small;
  Cost& chosen = use_large ? large : small;
  p.cap = use_large ? kCapLarge : kCapSmall;
  p.pairs = chosen.pairs;
  p.run_freq = std::move(chosen.run_freq);
  p.run_cum = format::cumulative(p.run_freq);
  p.symbol_freq.assign(size_t{config.alphabet} + 1, 0);
  for (size_t i = 0; i < listed.size(); ++i) {
    p.symbol_freq[listed[i]] = chosen.symbol_freq[i];
    if (chosen.symbol_freq[i] != 0) p.symbol_listed.push_back(listed[i]);
  }
  p.symbol_cum =
      format::cumulative(p.symbol_freq.size(), listed.data(), chosen.symbol_freq.data(), listed.size());

  // Lane geometry: a state per 4096 estimated bits, and per 2048 pairs.
  const uint64_t bits = use_large ? p.cost_large : p.cost_small;
  const uint64_t states = std::max<uint64_t>({1, bits / kBitsPerState, ceil_div(p.pairs, kPairsPerState)});
  const uint64_t tiles = ceil_div(n, kTileSymbols);
  if (states <= kMaxStates) {
    p.states = static_cast<uint32_t>(states);
    p.lane_symbols = n;
  } else {
    p.states = kMaxStates;
    const uint64_t k0 = std::min(ceil_div(states, kMaxStates), tiles);
    p.lane_symbols = uint64_t{kTileSymbols} * ceil_div(tiles, k0);
  }
  p.lanes = ceil_div(n, p.lane_symbols);

  format::append_varint(p.head, n);
  p.head.push_back(kMethodCoded);
  append_le<uint16_t>(p.head, p.mode);
  p.head.push_back(static_cast<uint8_t>(p.cap));
  p.head.push_back(static_cast<uint8_t>(p.states));
  format::append_varint(p.head, p.lane_symbols);
  format::append_tables(p.head, p.run_freq, listed.data(), chosen.symbol_freq.data(), listed.size());
  p.records_at = p.head.size();
  p.record_bytes = kRecordFixedBytes + 4 * size_t{p.states};
  p.payload_at = p.records_at + p.lanes * p.record_bytes;
  return p;
}

void put_record(uint8_t* at, uint32_t pairs, uint32_t words, const uint32_t* state, uint32_t states) {
  store_le<uint32_t>(at, pairs);
  store_le<uint32_t>(at + 4, words);
  for (uint32_t j = 0; j < states; ++j) store_le<uint32_t>(at + kRecordFixedBytes + 4 * j, state[j]);
}

uint64_t stored_size(uint64_t n) { return varint_size(n) + 1 + 2 * n; }

Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const InterleavedConfig& config,
             size_t max_bytes) {
  check_config(config);
  Layout layout;
  // Called when a read would pass the prefix: the stream is truncated, or
  // more prefix is needed (`needed`, > prefix_size, <= stream_size).
  const auto ask = [&](size_t needed) {
    require_format(prefix_size < stream_size, "ANS: stream truncated");
    Layout asked;
    asked.n = layout.n;
    asked.needed = std::min(stream_size, std::max(needed, prefix_size + 1));
    return asked;
  };

  uint64_t n = 0;
  size_t at = format::read_varint(prefix, 0, prefix_size, n);
  if (at == 0) return ask(kMaxVarintBytes);
  require_format(n <= max_bytes / 2, "ANS: decoded size exceeds the allowed maximum");
  layout.n = n;
  if (n == 0) {
    require_format(stream_size == at, "ANS: bytes after an empty stream");
    layout.payload_at = at;
    return layout;
  }
  // One prefix of this size holds every byte up to the lane records.
  const uint64_t head_bound =
      kMaxFieldsBytes + format::tables_bytes_bound(kCapLarge + 1, uint64_t{config.alphabet} + 1);
  if (at + 1 > prefix_size) return ask(head_bound);
  layout.method = prefix[at++];
  if (layout.method == kMethodStored) {
    require_format(stream_size >= at && (stream_size - at) % 2 == 0 && (stream_size - at) / 2 == n,
                   "ANS: stored stream's length disagrees with n");
    layout.payload_at = at;
    return layout;
  }
  require_format(layout.method == kMethodCoded, "ANS: unknown method");
  if (at + 4 > prefix_size) return ask(head_bound);
  layout.mode = load_le<uint16_t>(prefix + at);
  layout.cap = prefix[at + 2];
  layout.states = prefix[at + 3];
  at += 4;
  require_format(layout.mode < config.alphabet, "ANS: run symbol outside the alphabet");
  require_format(layout.cap >= 1, "ANS: run cap 0");
  require_format(layout.states >= 1 && layout.states <= kMaxStates, "ANS: states per lane outside 1..32");
  uint64_t S = 0;
  at = format::read_varint(prefix, at, prefix_size, S);
  if (at == 0) return ask(head_bound);
  require_format(S >= 1 && S <= n, "ANS: lane size outside 1..n");
  layout.lane_symbols = S;
  const size_t records_at =
      format::read_tables(prefix, at, prefix_size, config.prob_bits, layout.cap + 1, layout.run_freq, layout.run_cum,
                          size_t{config.alphabet} + 1, false, layout.symbol_freq, layout.symbol_cum,
                          &layout.symbol_listed);
  if (records_at == 0) return ask(head_bound);
  require_format(layout.symbol_freq[layout.mode] == 0, "ANS: the run symbol has a symbol frequency");

  // Lane records: checked against the stream's size before anything is sized by K.
  const uint64_t lanes = ceil_div(n, S);
  const size_t record_bytes = kRecordFixedBytes + 4 * size_t{layout.states};
  require_format(stream_size >= records_at && lanes <= (stream_size - records_at) / record_bytes,
                 "ANS: lane records truncated");
  const size_t payload_at = records_at + lanes * record_bytes;
  if (payload_at > prefix_size) return ask(payload_at);
  std::vector<uint64_t>& start = layout.word_start;
  start.assign(lanes + 1, 0);
  for (uint64_t k = 0; k < lanes; ++k) {
    const uint8_t* record = prefix + records_at + k * record_bytes;
    const uint64_t pairs = load_le<uint32_t>(record);
    const uint64_t words = load_le<uint32_t>(record + 4);
    require_format(pairs >= 1 && pairs <= lane_length(n, S, k), "ANS: lane pair count outside 1..its length");
    require_format(words <= 2 * pairs, "ANS: lane holds more than 2 words a pair");
    for (uint32_t j = 0; j < layout.states; ++j) {
      require_format(load_le<uint32_t>(record + kRecordFixedBytes + 4 * j) >= kStateLow, "ANS: lane state below 2^16");
    }
    start[k + 1] = start[k] + words;
  }
  require_format((stream_size - payload_at) % 2 == 0 && (stream_size - payload_at) / 2 == start[lanes],
                 "ANS: payload length disagrees with the lanes' word counts");
  layout.lanes = lanes;
  layout.records_at = records_at;
  layout.record_bytes = record_bytes;
  layout.payload_at = payload_at;
  return layout;
}

}  // namespace fz::ans::interleaved_format
