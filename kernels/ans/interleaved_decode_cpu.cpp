// Stage type 15's decoder on the CPU (format: interleaved.hpp).
// interleaved_format::parse validates the head, the tables and the lane
// records (and the payload's exact length) before anything is sized by n;
// then runs of consecutive lanes decode in parallel. A lane's W states go
// round by round in the format's order (run tokens, refills in increasing j,
// symbol tokens, refills), so a W-state round is W independent chains the
// CPU overlaps. Tables are type 14's slot tables (cpu::make_table). The lane
// is first filled with m, so a pair's run only moves the position.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "ans/ans_format.hpp"
#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "ans/rans_cpu.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

namespace ifmt = interleaved_format;

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

struct LaneDecoder {
  cpu::Table<uint8_t> run;
  cpu::Table<uint16_t> symbol;
  unsigned prob_bits;
  uint16_t mode;
  uint32_t esc;
  uint32_t states;
  const uint8_t* spare;  // two readable bytes: what a refill past a lane's words reads

  template <typename Token>
  uint32_t step(uint32_t& x, const cpu::Table<Token>& table) const {
    const uint32_t slot = x & ((uint32_t{1} << prob_bits) - 1);
    const uint32_t token = table.token[slot];
    const cpu::FreqCum e = table.fc[token];
    x = e.freq * (x >> prob_bits) + slot - e.cum;
    return token;
  }

  // Lane: P pairs, its record's states, its words [w, wend), its output
  // [out, out + len). FormatError for anything the format refuses. W: the
  // state count as a constant (its states then stay in registers), or 0 for
  // `states`. A state past its lane's words reads `spare` and moves w on
  // past wend, which the lane's end refuses (branch-free).
  template <uint32_t W>
  void decode_lane(const uint8_t* record, const uint8_t* w, const uint8_t* wend, uint16_t* out, uint64_t len) const {
    constexpr uint32_t kSlots = W ? W : kMaxStates;
    const uint32_t n = W ? W : states;
    const uint64_t P = load_le<uint32_t>(record);
    uint32_t x[kSlots];
    for (uint32_t j = 0; j < n; ++j) x[j] = load_le<uint32_t>(record + ifmt::kRecordFixedBytes + 4 * j);
    std::fill(out, out + len, mode);
    const auto refill = [&](uint32_t count) {
      for (uint32_t j = 0; j < count; ++j) {
        const uint32_t r = x[j] < kStateLow;
        const uint8_t* src = w < wend ? w : spare;
        x[j] = (x[j] << (16 * r)) | (load_le<uint16_t>(src) & (0u - r));
        w += 2 * r;
      }
    };
    uint64_t pos = 0;
    for (uint64_t base = 0; base < P; base += n) {
      const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(n, P - base));
      uint32_t t[kSlots], s[kSlots];
      for (uint32_t j = 0; j < count; ++j) t[j] = step(x[j], run);
      refill(count);
      for (uint32_t j = 0; j < count; ++j) s[j] = step(x[j], symbol);
      refill(count);
      for (uint32_t j = 0; j < count; ++j) {
        const bool has_symbol = s[j] != esc;
        require_format(t[j] != 0 || has_symbol, "ANS: a pair (0, ESC)");
        require_format(t[j] + uint64_t{has_symbol} <= len - pos, "ANS: a pair passes the lane's end");
        pos += t[j];
        if (has_symbol) out[pos++] = static_cast<uint16_t>(s[j]);
      }
    }
    require_format(pos == len, "ANS: a lane's pairs do not fill it");
    require_format(w <= wend, "ANS: a lane reads past its words");
    require_format(w == wend, "ANS: a lane leaves words unread");
    for (uint32_t j = 0; j < n; ++j) require_format(x[j] == kStateLow, "ANS: a lane's final state is not 2^16");
  }

  // The state count as a constant up to kFixedStates (every stream of under
  // ~64k estimated bits, the plan's rule: small chunks' and loose bounds'
  // streams): with a runtime count the states lived in memory and every step
  // made a store-to-load round trip, 75% of a 64x64 chunk's read at NOA 1e-2
  // (perf, one thread); more states than that are enough independent chains
  // to hide it (fixed at 32 they were no faster).
  static constexpr uint32_t kFixedStates = 16;
  using LaneFn = void (LaneDecoder::*)(const uint8_t*, const uint8_t*, const uint8_t*, uint16_t*, uint64_t) const;
  template <size_t... W>
  static constexpr std::array<LaneFn, sizeof...(W)> lane_table(std::index_sequence<W...>) {
    return {&LaneDecoder::decode_lane<static_cast<uint32_t>(W)>...};
  }

  void operator()(const uint8_t* record, const uint8_t* w, const uint8_t* wend, uint16_t* out, uint64_t len) const {
    static constexpr std::array<LaneFn, kFixedStates + 1> kLaneOf =
        lane_table(std::make_index_sequence<kFixedStates + 1>());
    (this->*kLaneOf[states <= kFixedStates ? states : 0])(record, w, wend, out, len);
  }
};

}  // namespace

void decode_interleaved(ByteSpan stream, const InterleavedConfig& config, Bytes& out, size_t max_bytes,
                        const Executor& exec) {
  const ifmt::Layout layout = ifmt::parse(stream.data, stream.size, stream.size, config, max_bytes);
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
  thread_local std::vector<cpu::FreqCum> run_fc, symbol_fc;
  const LaneDecoder decoder{
      cpu::make_table(layout.run_freq, layout.run_cum, config.prob_bits, run_token, run_fc),
      cpu::make_table(layout.symbol_freq, layout.symbol_cum, layout.symbol_listed, config.prob_bits, symbol_token,
                      symbol_fc),
      config.prob_bits,
      layout.mode,
      config.alphabet,
      layout.states,
      stream.data};
  out.resize(2 * n);
  auto* symbols = reinterpret_cast<uint16_t*>(out.data());
  const uint64_t S = layout.lane_symbols, K = layout.lanes;
  const size_t runs = static_cast<size_t>(std::min<uint64_t>(std::max(1u, exec.concurrency()), K));
  exec.parallel_for(runs, [&](size_t r) {
    for (uint64_t k = K * r / runs; k < K * (r + 1) / runs; ++k) {
      const uint8_t* payload = stream.data + layout.payload_at;
      decoder(stream.data + layout.records_at + k * layout.record_bytes, payload + 2 * layout.word_start[k],
              payload + 2 * layout.word_start[k + 1], symbols + k * S, ifmt::lane_length(n, S, k));
    }
  });
}

}  // namespace fz::ans
