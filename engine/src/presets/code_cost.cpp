// The entropy stage's stored bytes estimated from the codes' histograms
// (code_cost.hpp): one pass over each piece of the codes that counts the
// tokens for a guessed run code (a second when the guess was not the most
// frequent code), the pieces' counts joined, then a sum over the distinct
// codes.
#include "code_cost.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fz::engine {
namespace {

constexpr uint32_t kRunCap = kCodeRunCap;
constexpr unsigned kProbBits = 14;     // cuszhi-cr's table precision (cuszhi.cpp, lorenzo.cpp)
constexpr uint64_t kLaneSymbols = 8192;
constexpr uint64_t kLaneBytes = 6;     // a lane's final state (u32) and word count (u16)

uint64_t bit_length(uint64_t v) { return v ? 64 - static_cast<uint64_t>(__builtin_clzll(v)) : 0; }
uint64_t gamma_bits(uint64_t v) { return 2 * bit_length(v) - 1; }  // v >= 1
uint64_t varint_bytes(uint64_t v) { return v < 128 ? 1 : 1 + varint_bytes(v >> 7); }

// Bits of a table (gamma(u + 1), then per listed symbol the gamma codes of
// its gap and of its frequency scaled to 2^M) and of its tokens' information
// content, in 16.16 fixed point: T log2 T - sum c log2 c over the counts c.
struct TableCost {
  uint64_t table_bits = 0;
  uint64_t content_q16 = 0;
};

template <typename Symbols>
TableCost table_cost(const Symbols& symbols, uint64_t total) {
  TableCost cost;
  uint64_t listed = 0, sum_clogc = 0;
  int64_t previous = -1;
  symbols([&](uint32_t s, uint64_t c) {
    ++listed;
    cost.table_bits += gamma_bits(uint64_t(int64_t(s) - previous));
    previous = s;
    const uint64_t f = (c << kProbBits) / total;
    cost.table_bits += gamma_bits(f ? f : 1);
    sum_clogc += c * log2_q16(c);
  });
  cost.table_bits += gamma_bits(listed + 1);
  cost.content_q16 = total * log2_q16(total) - sum_clogc;
  return cost;
}

// Per thread: a count per u16 code other than the run code, zero between
// calls (the distinct codes seen are listed and only they cleared), so a
// short stream costs its codes, not the 65536 counters.
struct Histogram {
  std::vector<uint32_t> count = std::vector<uint32_t>(65536, 0);
  std::vector<uint16_t> seen;
  void clear() {
    for (uint16_t s : seen) count[s] = 0;
    seen.clear();
  }
};

uint16_t code_at(const uint8_t* b, uint64_t i) {
  uint16_t c;
  std::memcpy(&c, b + 2 * i, 2);  // little-endian hosts only (common/bytes.hpp)
  return c;
}

// A run of `run` run codes before another code: run / 63 tokens 63 and the
// token run % 63 (a token 0 after whole 63s: the other code needs it).
void add_run(uint64_t (&runs)[kRunCap + 1], uint64_t run) {
  if (run < kRunCap) {
    ++runs[run];
  } else {
    runs[kRunCap] += run / kRunCap;
    ++runs[run % kRunCap];
  }
}

// The tokens of the n codes at b with run code m: every other code counted
// in h, the runs of m between them in t.runs, the run before the first and
// after the last in t.lead and t.trail (they join the pieces around).
// Only the codes other than m are visited one by one (SSE2 finds them 16 at
// a time), so a stream that is mostly m costs little more than its reading.
void count_tokens(const uint8_t* b, uint64_t n, uint16_t m, Histogram& h, CodeTokens& t) {
  uint64_t start = 0;  // just past the last code other than m
  bool first = true;
  uint32_t* count = h.count.data();  // (a local: the stores do not make it reload)
  auto other = [&](uint64_t p) {
    const uint16_t s = code_at(b, p);
    if (count[s]++ == 0) h.seen.push_back(s);
    if (first) {
      t.lead = p;
      first = false;
    } else {
      add_run(t.runs, p - start);
    }
    start = p + 1;
  };
  uint64_t i = 0;
#if defined(__SSE2__)
  const __m128i mm = _mm_set1_epi16(static_cast<short>(m));
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * i));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * i + 16));
    // Two mask bits a code; the even ones say "not m".
    uint32_t others = ~(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(lo, mm))) |
                        static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(hi, mm))) << 16) &
                      0x55555555u;
    while (others != 0) {
      other(i + static_cast<unsigned>(__builtin_ctz(others)) / 2);
      others &= others - 1;
    }
  }
#endif
  for (; i < n; ++i)
    if (code_at(b, i) != m) other(i);
  t.run_code = m;
  t.n = n;
  t.has_other = !first;
  if (first) t.lead = n;
  t.trail = n - start;
}

}  // namespace

uint64_t log2_q16(uint64_t x) {
  if (x == 0) return 0;
  const unsigned e = static_cast<unsigned>(bit_length(x) - 1);
  uint64_t y = e >= 31 ? x >> (e - 31) : x << (31 - e);  // the mantissa in [2^31, 2^32)
  uint64_t r = uint64_t(e) << 16;
  for (int b = 15; b >= 0; --b) {
    y = (y * y) >> 31;  // the mantissa squared, in [2^31, 2^33)
    if (y >> 32) {
      y >>= 1;
      r |= uint64_t(1) << b;
    }
  }
  return r;
}

CodeTokens count_code_tokens(ByteSpan codes, uint16_t run_code) {
  thread_local Histogram h;
  CodeTokens t;
  count_tokens(codes.data, codes.size / 2, run_code, h, t);
  std::sort(h.seen.begin(), h.seen.end());
  t.others.reserve(h.seen.size());
  for (uint16_t s : h.seen) t.others.emplace_back(s, h.count[s]);
  h.clear();
  return t;
}

CodeTokens count_code_tokens(ByteSpan codes) {
  // The guess: the most frequent of the first 256 codes.
  constexpr uint64_t kLooked = 256;
  uint16_t first[kLooked];
  const uint64_t looked = std::min<uint64_t>(codes.size / 2, kLooked);
  for (uint64_t i = 0; i < looked; ++i) first[i] = code_at(codes.data, i);
  std::sort(first, first + looked);
  uint16_t guess = 0;
  uint64_t guess_count = 0;
  for (uint64_t i = 0; i < looked;) {
    uint64_t j = i;
    while (j < looked && first[j] == first[i]) ++j;
    if (j - i > guess_count) guess = first[i], guess_count = j - i;
    i = j;
  }
  CodeTokens t = count_code_tokens(codes, guess);
  // Its most frequent code from the counts (those of every other code are exact).
  uint64_t best_count = t.n;
  for (const auto& [s, c] : t.others) best_count -= c;
  uint16_t best = guess;
  for (const auto& [s, c] : t.others)
    if (c > best_count || (c == best_count && s < best)) best = s, best_count = c;
  return best == guess ? t : count_code_tokens(codes, best);
}

namespace {

// coded_bytes_estimate of the pieces, and the run code it found (*run_code).
uint64_t estimate_pieces(const std::vector<ByteSpan>& pieces, std::vector<CodeTokens> tokens, uint16_t* run_code) {
  if (tokens.size() != pieces.size()) throw std::logic_error("coded_bytes_estimate: a piece without its tokens");
  uint64_t n = 0;
  for (const ByteSpan& p : pieces) n += p.size / 2;
  if (n == 0) return varint_bytes(0);

  // The pieces' tokens for one run code m, joined: a piece's first other
  // code ends the run that the pieces before left open.
  thread_local Histogram h;
  uint64_t runs[kRunCap + 1] = {};
  const auto join = [&] {
    h.clear();
    std::fill(std::begin(runs), std::end(runs), 0);
    uint64_t open = 0;
    for (const CodeTokens& t : tokens) {
      if (t.has_other) {
        add_run(runs, open + t.lead);
        open = t.trail;
      } else {
        open += t.n;
      }
      for (uint32_t k = 0; k <= kRunCap; ++k) runs[k] += t.runs[k];
      for (const auto& [s, c] : t.others) {
        if (h.count[s] == 0) h.seen.push_back(s);
        h.count[s] += c;
      }
    }
    runs[kRunCap] += open / kRunCap;  // the final run needs no token 0
    if (open % kRunCap) ++runs[open % kRunCap];
  };
  // Every piece counted for the first piece's run code, then for the
  // stream's most frequent code (the smallest among equals) if that is
  // another: the counts of all codes but the run code are exact either way.
  uint16_t mode = tokens[0].run_code;
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (size_t i = 0; i < pieces.size(); ++i)
      if (tokens[i].run_code != mode) tokens[i] = count_code_tokens(pieces[i], mode);
    join();
    uint64_t mode_count = n;
    for (uint16_t s : h.seen) mode_count -= h.count[s];
    uint16_t best = mode;
    uint64_t best_count = mode_count;
    for (uint16_t s : h.seen)
      if (h.count[s] > best_count || (h.count[s] == best_count && s < best)) best = s, best_count = h.count[s];
    if (best == mode) break;
    mode = best;  // (the second count is for the true mode: it always stops there)
  }
  *run_code = mode;

  uint64_t run_total = 0;
  for (uint64_t c : runs) run_total += c;
  const TableCost run_cost = table_cost(
      [&](auto&& visit) {
        for (uint32_t t = 0; t <= kRunCap; ++t)
          if (runs[t]) visit(t, runs[t]);
      },
      run_total);
  uint64_t symbol_total = 0;
  for (uint16_t s : h.seen) symbol_total += h.count[s];
  TableCost symbol_cost{gamma_bits(1), 0};
  std::sort(h.seen.begin(), h.seen.end());
  if (symbol_total)
    symbol_cost = table_cost(
        [&](auto&& visit) {
          for (uint16_t s : h.seen) visit(s, h.count[s]);
        },
        symbol_total);
  h.clear();

  const uint64_t head = varint_bytes(n) + 1 + 2;
  const uint64_t tables = ((run_cost.table_bits + symbol_cost.table_bits + 7) / 8 + 3) / 4 * 4;
  const uint64_t lanes = (n + kLaneSymbols - 1) / kLaneSymbols * kLaneBytes;
  const uint64_t payload = ((run_cost.content_q16 + symbol_cost.content_q16) >> 16) / 8;
  const uint64_t coded = head + tables + lanes + payload;
  const uint64_t stored = varint_bytes(n) + 1 + 2 * n;
  return coded < stored ? coded : stored;
}

}  // namespace

uint64_t coded_bytes_estimate(ByteSpan codes) {
  // The last stream's run code on this thread: streams of one preset share it.
  thread_local uint16_t guess = 0;
  std::vector<CodeTokens> tokens;
  tokens.push_back(count_code_tokens(codes, guess));
  return estimate_pieces({codes}, std::move(tokens), &guess);
}

uint64_t coded_bytes_estimate(const std::vector<ByteSpan>& pieces, std::vector<CodeTokens> tokens) {
  uint16_t run_code = 0;
  return estimate_pieces(pieces, std::move(tokens), &run_code);
}

}  // namespace fz::engine
