// ANS decoding on the CPU (format: ans/ans.hpp). format::parse validates the
// head, the tables and the lane arrays (and the payload's exact length)
// before anything is sized by n; then runs of consecutive lanes decode in
// parallel, four side by side in one loop (their serial chains overlap). A
// lane's output is first filled with the run symbol m, so a run token only
// moves the position, and a symbol token writes one symbol. Each token is a
// slot's token (a byte table for runs, u16 for symbols: 2^M entries each)
// and that token's (f, cum), so the serial chain per token is two small
// loads, a multiply-add and a branch-free refill. Groups of
// lanes whose reads cannot leave the payload (all but the last few) run
// without the per-word bound check; the exact word count is checked at each
// lane's end either way.
#include <algorithm>
#include <cstring>

#include "ans/ans.hpp"
#include "ans/ans_format.hpp"
#include "ans/rans_cpu.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using cpu::FreqCum;
using cpu::Table;
using cpu::make_table;

// One lane being decoded: its state, its next word, and its output as the
// lane's end and a negative offset from it (p - len: the lane is done at 0),
// few values, so that the interleaved lanes stay in registers.
struct Lane {
  uint32_t x = 0;
  int64_t at = 0;                // p - len
  uint16_t* end = nullptr;       // the lane's output ends here
  const uint8_t* w = nullptr;    // the next word
  const uint8_t* wend = nullptr; // past the lane's last word
};

struct LaneDecoder {
  Table<uint8_t> run;
  Table<uint16_t> sym;
  bool has_symbols;
  unsigned prob_bits;
  uint16_t mode;
  const uint8_t* spare;  // two readable bytes: what a refill past a lane's words reads

  // One token from `table`. The refill is branch-free. kChecked: a lane that
  // runs out of words reads `spare` and moves on past wend, which finish()
  // refuses. Unchecked (a lane whose 2 * len words from its first lie in the
  // payload: a lane reads at most one word per token and has at most 2 * len
  // tokens, every run token 0 being followed by a symbol): it reads the next
  // lane's words instead, and moves on alike.
  template <bool kChecked, typename Token>
  uint32_t step(Lane& l, const Table<Token>& table) const {
    const uint32_t slot = l.x & ((uint32_t{1} << prob_bits) - 1);
    const uint32_t token = table.token[slot];
    const FreqCum e = table.fc[token];
    const uint32_t x = e.freq * (l.x >> prob_bits) + slot - e.cum;
    // Arithmetic rather than a select, which the compiler may turn into a
    // branch (taken about half the time, unpredictably).
    const uint32_t refill = x < kStateLow;
    const uint8_t* src = !kChecked || l.w < l.wend ? l.w : spare;
    l.x = (x << (16 * refill)) | (load_le<uint16_t>(src) & (0u - refill));
    l.w += 2 * refill;
    return token;
  }

  // A run token, then a symbol token unless the run is 63 or ends the lane.
  // The output is pre-filled with m, so a run only moves the position. A run
  // past the lane's end stops the lane with at > 0, which finish() refuses;
  // unchecked lanes have a non-empty symbol table.
  template <bool kChecked>
  void item(Lane& l) const {
    const uint32_t t = step<kChecked>(l, run);
    l.at += t;
    if (t < kRunCap && l.at < 0) {
      if (kChecked) require_format(has_symbols, "ANS: a symbol token with an empty symbol table");
      l.end[l.at++] = static_cast<uint16_t>(step<kChecked>(l, sym));
    }
  }

  template <bool kChecked>
  void finish(Lane& l) const {
    while (l.at < 0) item<kChecked>(l);
    require_format(l.at == 0, "ANS: a run passes the lane's end");
    require_format(l.w <= l.wend, "ANS: a lane reads past its words");
    require_format(l.w == l.wend, "ANS: a lane leaves words unread");
    require_format(l.x == kStateLow, "ANS: a lane's final state is not 2^16");
  }

  // Up to kInterleave lanes side by side, so that their serial chains
  // (lookup, multiply-add, refill) overlap; each finishes alone once the
  // first of them is done.
  static constexpr size_t kInterleave = 4;
  template <bool kChecked>
  void lanes(Lane* lanes, size_t count) const {
    for (size_t i = 0; i < count; ++i) std::fill(lanes[i].end + lanes[i].at, lanes[i].end, mode);
    if (count == kInterleave) {
      Lane a = lanes[0], b = lanes[1], c = lanes[2], d = lanes[3];
      while (a.at < 0 && b.at < 0 && c.at < 0 && d.at < 0) {
        item<kChecked>(a);
        item<kChecked>(b);
        item<kChecked>(c);
        item<kChecked>(d);
      }
      lanes[0] = a;
      lanes[1] = b;
      lanes[2] = c;
      lanes[3] = d;
    }
    for (size_t i = 0; i < count; ++i) finish<kChecked>(lanes[i]);
  }

  // Checked unless every lane's reads stay in the payload (payload_end: past
  // all lanes' words) and the symbol table is not empty.
  void operator()(Lane* group, size_t count, const uint8_t* payload_end) const {
    bool safe = has_symbols;
    for (size_t i = 0; i < count; ++i) {
      safe = safe && static_cast<size_t>(payload_end - group[i].w) / 4 >= static_cast<size_t>(-group[i].at);
    }
    if (safe) {
      lanes<false>(group, count);
    } else {
      lanes<true>(group, count);
    }
  }
};

}  // namespace

void decode(ByteSpan stream, const Config& config, Bytes& out, size_t max_bytes, const Executor& exec) {
  const format::Layout layout = format::parse(stream.data, stream.size, stream.size, config, max_bytes);
  const uint64_t n = layout.n;
  if (n == 0) {
    out.clear();
    return;
  }
  if (layout.method == kMethodStored) {
    format::read_stored(stream.data + layout.payload_at, n, config.alphabet, out);
    return;
  }
  thread_local std::vector<uint8_t> run_token;
  thread_local std::vector<uint16_t> symbol_token;
  thread_local std::vector<FreqCum> run_fc, symbol_fc;
  const LaneDecoder lane_decoder{make_table(layout.run_freq, layout.run_cum, config.prob_bits, run_token, run_fc),
                                 make_table(layout.symbol_freq, layout.symbol_cum, config.prob_bits, symbol_token,
                                            symbol_fc), layout.symbol_cum.back() != 0, config.prob_bits,
                                 layout.mode, stream.data};
  out.resize(2 * n);
  auto* symbols = reinterpret_cast<uint16_t*>(out.data());
  const size_t S = config.lane_symbols;
  const size_t lanes = layout.lanes;
  const size_t runs = std::min<size_t>(std::max(1u, exec.concurrency()), lanes);
  exec.parallel_for(runs, [&](size_t r) {
    const size_t end = lanes * (r + 1) / runs;
    for (size_t first = lanes * r / runs; first < end; first += LaneDecoder::kInterleave) {
      Lane group[LaneDecoder::kInterleave];
      const size_t count = std::min(LaneDecoder::kInterleave, end - first);
      for (size_t i = 0; i < count; ++i) {
        const size_t lane = first + i;
        Lane& l = group[i];
        l.x = load_le<uint32_t>(stream.data + layout.states_at + 4 * lane);
        const size_t len = static_cast<size_t>(std::min<uint64_t>(S, n - lane * S));
        l.end = symbols + lane * S + len;
        l.at = -static_cast<int64_t>(len);
        l.w = stream.data + layout.payload_at + 2 * layout.word_start[lane];
        l.wend = stream.data + layout.payload_at + 2 * layout.word_start[lane + 1];
      }
      lane_decoder(group, count, stream.data + layout.payload_at + 2 * layout.word_start[lanes]);
    }
  });
}

}  // namespace fz::ans
