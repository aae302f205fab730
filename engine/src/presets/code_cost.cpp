// The entropy stage's stored bytes estimated from the codes' histograms
// (code_cost.hpp): one pass over the codes (their runs of equal codes and the
// histogram), one over those runs (the tokens of the most frequent code's
// runs), then a sum over the distinct codes.
#include "code_cost.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace fz::engine {
namespace {

constexpr uint32_t kRunCap = 63;       // the ANS stage's longest run token ("63 and go on")
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

// Per thread: a count per u16 code, zero between calls (the distinct codes
// seen are listed and only they cleared), so a short stream costs its codes,
// not the 65536 counters.
struct Run {
  uint16_t code;
  uint64_t length;
};
struct Histogram {
  std::vector<uint32_t> count = std::vector<uint32_t>(65536, 0);
  std::vector<uint16_t> seen;
  std::vector<Run> runs;
};

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

uint64_t coded_bytes_estimate(ByteSpan codes) {
  const uint64_t n = codes.size / 2;
  if (n == 0) return varint_bytes(0);
  const uint8_t* b = codes.data;
  auto code = [b](uint64_t i) {
    uint16_t c;
    std::memcpy(&c, b + 2 * i, 2);  // little-endian hosts only (common/bytes.hpp)
    return c;
  };

  // The stream as runs of equal codes (one histogram update a run: at loose
  // bounds most codes are the mode's, in long runs), then the mode.
  thread_local Histogram h;
  h.runs.clear();
  for (uint64_t i = 0; i < n;) {
    const uint16_t s = code(i);
    uint64_t j = i + 1;
    while (j < n && code(j) == s) ++j;
    if (h.count[s] == 0) h.seen.push_back(s);
    h.count[s] += static_cast<uint32_t>(j - i);
    h.runs.push_back({s, j - i});
    i = j;
  }
  std::sort(h.seen.begin(), h.seen.end());
  uint16_t mode = h.seen.front();
  for (uint16_t s : h.seen)
    if (h.count[s] > h.count[mode]) mode = s;

  // Run tokens: a run of L copies of m before a symbol token is L / 63
  // tokens 63 and the token L % 63 (L copies of another symbol: L symbol
  // tokens, each after such a run, all but the first after a run of 0); the
  // final run drops a token 0.
  uint64_t runs[kRunCap + 1] = {};
  uint64_t run = 0;
  for (const Run& r : h.runs) {
    if (r.code == mode) {
      run += r.length;
      continue;
    }
    runs[kRunCap] += run / kRunCap;
    ++runs[run % kRunCap];
    runs[0] += r.length - 1;
    run = 0;
  }
  runs[kRunCap] += run / kRunCap;
  if (run % kRunCap) ++runs[run % kRunCap];

  uint64_t run_total = 0;
  for (uint64_t c : runs) run_total += c;
  const TableCost run_cost = table_cost(
      [&](auto&& visit) {
        for (uint32_t t = 0; t <= kRunCap; ++t)
          if (runs[t]) visit(t, runs[t]);
      },
      run_total);
  const uint64_t symbol_total = n - h.count[mode];
  TableCost symbol_cost{gamma_bits(1), 0};
  if (symbol_total)
    symbol_cost = table_cost(
        [&](auto&& visit) {
          for (uint16_t s : h.seen)
            if (s != mode) visit(s, h.count[s]);
        },
        symbol_total);

  for (uint16_t s : h.seen) h.count[s] = 0;
  h.seen.clear();

  const uint64_t head = varint_bytes(n) + 1 + 2;
  const uint64_t tables = ((run_cost.table_bits + symbol_cost.table_bits + 7) / 8 + 3) / 4 * 4;
  const uint64_t lanes = (n + kLaneSymbols - 1) / kLaneSymbols * kLaneBytes;
  const uint64_t payload = ((run_cost.content_q16 + symbol_cost.content_q16) >> 16) / 8;
  const uint64_t coded = head + tables + lanes + payload;
  const uint64_t stored = varint_bytes(n) + 1 + 2 * n;
  return coded < stored ? coded : stored;
}

}  // namespace fz::engine
