// The entropy stage's stored bytes estimated from the codes' histograms
// (code_cost.hpp): a pass over each piece of the codes that counts them, a
// second that counts the runs of the most frequent, the pieces' runs
// joined, then a sum over the distinct codes.
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

// Calls other(p, before) for each of the n codes at b that is not m and
// follows an m (or nothing), with the position of the other code before it
// (`last` on entry, kNone for none), and returns how many others follow an
// other (their runs are 0); `last` ends at the last other code. SSE2 compares 16 codes at a time; a block's
// others that follow others are counted from the bit mask alone, so only
// the ends of runs are visited one by one.
constexpr uint64_t kNone = ~uint64_t{0};
template <typename Other>
uint64_t scan_runs(const uint8_t* b, uint64_t n, uint16_t m, uint64_t& last, Other&& other) {
  uint64_t zero_runs = 0;
  uint64_t i = 0;
#if defined(__SSE2__)
  const __m128i mm = _mm_set1_epi16(static_cast<short>(m));
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * i)), mm);
    const __m128i hi = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 * i + 16)), mm);
    // A bit a code: set for the codes that are not m.
    const uint32_t others = ~static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi))) & 0xFFFFu;
    if (others == 0) continue;
    const uint32_t after_other = (others << 1) | (last != kNone && last + 1 == i ? 1u : 0u);
    zero_runs += static_cast<unsigned>(__builtin_popcount(others & after_other));
    for (uint32_t ends = others & ~after_other; ends != 0; ends &= ends - 1) {
      const unsigned bit = static_cast<unsigned>(__builtin_ctz(ends));
      const uint32_t before = others & ((1u << bit) - 1);
      other(i + bit, before ? i + 31 - static_cast<unsigned>(__builtin_clz(before)) : last);
    }
    last = i + 31 - static_cast<unsigned>(__builtin_clz(others));
  }
#endif
  for (; i < n; ++i) {
    if (code_at(b, i) == m) continue;
    if (last != kNone && last + 1 == i) {
      ++zero_runs;
    } else {
      other(i, last);
    }
    last = i;
  }
  return zero_runs;
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

CodeCounts count_codes(ByteSpan codes) {
  thread_local Histogram h;
  const uint64_t n = codes.size / 2;
  uint32_t* count = h.count.data();
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t s = code_at(codes.data, i);
    if (count[s]++ == 0) h.seen.push_back(s);
  }
  CodeCounts counts;
  counts.reserve(h.seen.size());
  for (uint16_t s : h.seen) counts.emplace_back(s, count[s]);
  h.clear();
  return counts;
}

uint16_t run_code_of(const std::vector<const CodeCounts*>& pieces) {
  thread_local Histogram h;
  for (const CodeCounts* piece : pieces)
    for (const auto& [s, c] : *piece) {
      if (h.count[s] == 0) h.seen.push_back(s);
      h.count[s] += c;
    }
  uint16_t best = 0;
  uint64_t best_count = 0;
  for (uint16_t s : h.seen)
    if (h.count[s] > best_count || (h.count[s] == best_count && s < best)) best = s, best_count = h.count[s];
  h.clear();
  return best;
}

CodeRuns count_code_runs(ByteSpan codes, uint16_t run_code) {
  CodeRuns r;
  r.run_code = run_code;
  r.n = codes.size / 2;
  uint64_t last = kNone;
  const uint64_t zero_runs = scan_runs(codes.data, r.n, run_code, last, [&](uint64_t p, uint64_t before) {
    if (before == kNone) {
      r.lead = p;
    } else {
      add_run(r.runs, p - before - 1);
    }
  });
  r.runs[0] += zero_runs;  // (after: a run of whole 63s adds a token 0 too)
  r.has_other = last != kNone;
  if (!r.has_other) r.lead = r.n;
  r.trail = r.has_other ? r.n - last - 1 : r.n;
  return r;
}

uint64_t coded_bytes_estimate(const std::vector<const CodeCounts*>& counts, const std::vector<CodeRuns>& pieces) {
  if (counts.size() != pieces.size()) throw std::logic_error("coded_bytes_estimate: a piece without its runs");
  uint64_t n = 0;
  for (const CodeRuns& p : pieces) n += p.n;
  if (n == 0) return varint_bytes(0);
  // Every code with its count over the pieces, merged once: the run code m
  // is the most frequent (the smallest among equals), the symbols the rest.
  thread_local Histogram h;
  for (const CodeCounts* piece : counts)
    for (const auto& [s, c] : *piece) {
      if (h.count[s] == 0) h.seen.push_back(s);
      h.count[s] += c;
    }
  uint16_t m = 0;
  uint64_t m_count = 0;
  for (uint16_t s : h.seen)
    if (h.count[s] > m_count || (h.count[s] == m_count && s < m)) m = s, m_count = h.count[s];
  for (const CodeRuns& p : pieces)
    if (p.n != 0 && p.run_code != m) {
      h.clear();
      throw std::logic_error("coded_bytes_estimate: runs counted for another run code");
    }
  h.count[m] = 0;  // the symbols: every code but m
  h.seen.erase(std::find(h.seen.begin(), h.seen.end(), m));

  // The pieces' run tokens joined: a piece's first other code ends the run
  // that the pieces before left open.
  uint64_t runs[kRunCap + 1] = {};
  uint64_t open = 0;
  for (const CodeRuns& p : pieces) {
    if (p.has_other) {
      add_run(runs, open + p.lead);
      open = p.trail;
    } else {
      open += p.n;
    }
    for (uint32_t k = 0; k <= kRunCap; ++k) runs[k] += p.runs[k];
  }
  runs[kRunCap] += open / kRunCap;  // the final run needs no token 0
  if (open % kRunCap) ++runs[open % kRunCap];


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

uint64_t coded_bytes_estimate(ByteSpan codes) {
  const CodeCounts counts = count_codes(codes);
  const std::vector<const CodeCounts*> pieces{&counts};
  return coded_bytes_estimate(pieces, {count_code_runs(codes, run_code_of(pieces))});
}

}  // namespace fz::engine
