// ANS decoding on the CPU (format: ans/ans.hpp). format::parse validates the
// head, the tables and the lane arrays (and the payload's exact length)
// before anything is sized by n; then runs of consecutive lanes decode in
// parallel. A lane's output is first filled with the run symbol m, so a run
// token only moves the position, and a symbol token writes one symbol. Each
// token is one lookup in a table of 2^M slots (token, f, slot - cum), so the
// serial chain per token is a load, a multiply-add and the refill test.
#include <algorithm>
#include <cstring>

#include "ans/ans.hpp"
#include "ans/ans_format.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

struct Slot {
  uint32_t freq;   // f of the slot's token (<= 2^16)
  uint16_t bias;   // slot - cum of the token
  uint16_t token;  // the run token or the symbol
};

std::vector<Slot> slot_table(const std::vector<uint32_t>& freq, const std::vector<uint32_t>& cum,
                             unsigned prob_bits) {
  std::vector<Slot> table(size_t{1} << prob_bits, Slot{0, 0, 0});
  for (size_t s = 0; s < freq.size(); ++s) {
    for (uint32_t i = 0; i < freq[s]; ++i) {
      table[cum[s] + i] = Slot{freq[s], static_cast<uint16_t>(i), static_cast<uint16_t>(s)};
    }
  }
  return table;
}

struct LaneDecoder {
  const Slot* run;
  const Slot* sym;
  bool has_symbols;
  unsigned prob_bits;
  uint16_t mode;

  // Decodes one lane of `len` symbols into out (len u16 slots) from its
  // state and its `count` words at `words` (unaligned, little-endian).
  void operator()(uint32_t state, const uint8_t* words, size_t count, size_t len, uint16_t* out) const {
    std::fill(out, out + len, mode);
    const uint32_t mask = (uint32_t{1} << prob_bits) - 1;
    uint32_t x = state;
    size_t w = 0;
    const auto step = [&](const Slot* table) {
      const Slot e = table[x & mask];
      x = e.freq * (x >> prob_bits) + e.bias;
      if (x < kStateLow) {
        require_format(w < count, "ANS: a lane reads past its words");
        x = (x << 16) | load_le<uint16_t>(words + 2 * w);
        ++w;
      }
      return e.token;
    };
    size_t p = 0;
    while (p < len) {
      const uint32_t t = step(run);
      require_format(t <= len - p, "ANS: a run passes the lane's end");
      p += t;
      if (t < kRunCap && p < len) {
        require_format(has_symbols, "ANS: a symbol token with an empty symbol table");
        out[p++] = step(sym);
      }
    }
    require_format(w == count, "ANS: a lane leaves words unread");
    require_format(x == kStateLow, "ANS: a lane's final state is not 2^16");
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
    const uint8_t* src = stream.data + layout.payload_at;
    uint32_t top = 0;
    for (size_t i = 0; i < n; ++i) top = std::max<uint32_t>(top, load_le<uint16_t>(src + 2 * i));
    require_format(top < config.alphabet, "ANS: stored symbol outside the alphabet");
    out.assign(src, src + 2 * n);
    return;
  }
  const std::vector<Slot> run = slot_table(layout.run_freq, layout.run_cum, config.prob_bits);
  const std::vector<Slot> sym = slot_table(layout.symbol_freq, layout.symbol_cum, config.prob_bits);
  const LaneDecoder lane_decoder{run.data(), sym.data(), layout.symbol_cum.back() != 0, config.prob_bits,
                                 layout.mode};
  out.resize(2 * n);
  auto* symbols = reinterpret_cast<uint16_t*>(out.data());
  const size_t S = config.lane_symbols;
  const size_t lanes = layout.lanes;
  const size_t runs = std::min<size_t>(std::max(1u, exec.concurrency()), lanes);
  exec.parallel_for(runs, [&](size_t r) {
    for (size_t lane = lanes * r / runs; lane < lanes * (r + 1) / runs; ++lane) {
      const uint32_t state = load_le<uint32_t>(stream.data + layout.states_at + 4 * lane);
      const uint64_t first = layout.word_start[lane];
      const size_t len = static_cast<size_t>(std::min<uint64_t>(S, n - lane * S));
      lane_decoder(state, stream.data + layout.payload_at + 2 * first, layout.word_start[lane + 1] - first, len,
                   symbols + lane * S);
    }
  });
}

}  // namespace fz::ans
