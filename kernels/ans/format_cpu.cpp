// The ANS stream layout's host routines (ans_format.hpp): the config checks,
// the encoder's choices (run symbol, normalised tables), the stream's head
// written, and a stream's head, tables and lane arrays parsed and validated.
// The CPU coder and the CUDA backend both call these, so they write the same
// bytes and refuse the same streams.
#include <algorithm>
#include <numeric>
#include <string>

#include "ans/ans_format.hpp"
#include "common/error.hpp"

namespace fz::ans {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

// gamma(v) takes at most 2 * 16 + 1 bits for the values a table holds
// (v <= 2^16 + 1): the decoder refuses more leading zeros.
constexpr unsigned kMaxGammaZeros = 16;
constexpr unsigned kMaxGammaBits = 2 * kMaxGammaZeros + 1;
constexpr size_t kMaxVarintBytes = 10;

size_t align4(size_t x) { return (x + 3) & ~size_t{3}; }

// The format's LSB-first bit string (bit b is bit b % 8 of byte b / 8),
// gathered in a 64-bit word and written out a byte at a time; finish() writes
// the last partial byte (its unused high bits 0).
class BitWriter {
 public:
  explicit BitWriter(Bytes& out) : out_(out) {}
  void put(uint64_t v, unsigned bits) {  // the low `bits` (<= 56) bits of v, from the least significant
    acc_ |= (v & ((uint64_t{1} << bits) - 1)) << fill_;
    fill_ += bits;
    for (; fill_ >= 8; fill_ -= 8, acc_ >>= 8) out_.push_back(static_cast<uint8_t>(acc_));
  }
  void gamma(uint64_t v) {  // 1 <= v < 2^28: b zero bits, then v's b + 1 bits from the most significant
    unsigned b = 0;
    while ((v >> (b + 1)) != 0) ++b;
    uint64_t reversed = 0;
    for (unsigned i = 0; i <= b; ++i) reversed |= ((v >> i) & 1u) << (b - i);
    put(reversed << b, 2 * b + 1);
  }
  void finish() {
    if (fill_ > 0) out_.push_back(static_cast<uint8_t>(acc_));
    acc_ = 0;
    fill_ = 0;
  }

 private:
  Bytes& out_;
  uint64_t acc_ = 0;
  unsigned fill_ = 0;  // bits in acc_, < 8 between calls
};

// A table: gamma(used + 1), then per used symbol, in increasing order, the
// gap from the previous one (the first: s + 1) and f, both as gamma. Over
// `count` candidates (symbol(i) increasing, f(i) possibly 0: not listed).
template <typename Symbol, typename Freq>
void put_table(BitWriter& w, size_t count, Symbol&& symbol, Freq&& freq) {
  size_t used = 0;
  for (size_t i = 0; i < count; ++i) used += freq(i) != 0;
  w.gamma(used + 1);
  size_t next = 0;  // the previous used symbol + 1
  for (size_t i = 0; i < count; ++i) {
    const uint32_t f = freq(i);
    if (f == 0) continue;
    const size_t s = symbol(i);
    w.gamma(s + 1 - next);
    w.gamma(f);
    next = s + 1;
  }
}

void put_table(BitWriter& w, const std::vector<uint32_t>& freq) {
  put_table(w, freq.size(), [](size_t i) { return i; }, [&](size_t i) { return freq[i]; });
}

uint64_t gamma_bits(uint64_t v) { return uint64_t{2} * (63 - static_cast<unsigned>(__builtin_clzll(v))) + 1; }

// Reads the tables' bit string from data[begin, end). `short_` turns true
// (and reads stop) when a read would pass `end`.
class BitReader {
 public:
  BitReader(const uint8_t* data, size_t begin, size_t end) : data_(data), bit_(begin * 8), end_(end * 8) {}
  bool short_ = false;
  uint64_t bit() {
    if (bit_ >= end_) {
      short_ = true;
      return 0;
    }
    const uint64_t b = (data_[bit_ / 8] >> (bit_ % 8)) & 1u;
    ++bit_;
    return b;
  }
  // 0 when the prefix ran out (short_ set); FormatError for too many zeros.
  uint64_t gamma() {
    unsigned b = 0;
    for (;;) {
      const uint64_t one = bit();
      if (short_) return 0;
      if (one) break;
      require_format(++b <= kMaxGammaZeros, "ANS: table value too long");
    }
    uint64_t v = 1;
    for (unsigned i = 0; i < b; ++i) v = (v << 1) | bit();
    return short_ ? 0 : v;
  }
  size_t bit_position() const { return bit_; }

 private:
  const uint8_t* data_;
  size_t bit_, end_;
};

// One table over `size` symbols into freq (size entries) and cum (size + 1).
// Returns false when the prefix ran out. `may_be_empty`: used == 0 allowed.
bool read_table(BitReader& r, size_t size, unsigned prob_bits, bool may_be_empty, const char* empty_message,
                std::vector<uint32_t>& freq, std::vector<uint32_t>& cum, std::vector<uint32_t>* listed) {
  const uint64_t used = r.gamma() - 1;
  if (r.short_) return false;
  freq.assign(size, 0);
  cum.assign(size + 1, 0);
  require_format(used > 0 || may_be_empty, empty_message);
  require_format(used <= size, "ANS: table lists more symbols than its alphabet");
  if (listed != nullptr) listed->clear();
  const uint64_t total = uint64_t{1} << prob_bits;
  // cum is constant between listed symbols: filled a run at a time up to each.
  size_t cum_at = 1;  // cum[cum_at..] not yet written (cum[0] = 0)
  uint64_t sum = 0;
  uint64_t next = 0;  // the previous listed symbol + 1
  for (uint64_t i = 0; i < used; ++i) {
    const uint64_t gap = r.gamma();
    const uint64_t f = r.gamma();
    if (r.short_) return false;
    require_format(gap <= size - next, "ANS: table symbol outside its alphabet");
    const uint64_t s = next + gap - 1;
    std::fill(cum.begin() + cum_at, cum.begin() + s + 1, static_cast<uint32_t>(sum));
    sum += f;
    require_format(sum <= total, "ANS: table frequencies exceed 2^M");
    freq[s] = static_cast<uint32_t>(f);
    if (listed != nullptr) listed->push_back(static_cast<uint32_t>(s));
    next = s + 1;
    cum_at = next;
  }
  if (used == 0) return true;
  require_format(sum == total, "ANS: table frequencies do not sum to 2^M");
  std::fill(cum.begin() + cum_at, cum.end(), static_cast<uint32_t>(sum));
  return true;
}

// The prefix size that holds a method-1 stream's tables and lane arrays,
// whatever they hold: everything up to the tables, their longest bit string,
// padding, and 6 bytes per lane.
size_t head_bound(size_t tables_at, uint64_t lanes, const Config& config, size_t stream_size) {
  const uint64_t bound =
      tables_at + format::tables_bytes_bound(kRunTokens, config.alphabet) + 6 * std::min<uint64_t>(lanes, stream_size / 6 + 1);
  return static_cast<size_t>(std::min<uint64_t>(bound, stream_size));
}

}  // namespace

namespace format {

void check_config(const Config& config) {
  if (config.alphabet < 2 || config.alphabet > 65536) {
    throw UsageError("ANS alphabet size must be 2..65536, got " + std::to_string(config.alphabet));
  }
  if (config.prob_bits < kMinProbBits || config.prob_bits > kMaxProbBits ||
      (uint64_t{1} << config.prob_bits) < config.alphabet) {
    throw UsageError("ANS probability bits must be 6..16 with 2^M >= A, got M " +
                     std::to_string(unsigned{config.prob_bits}) + " for A " + std::to_string(config.alphabet));
  }
  if (config.lane_symbols < 1 || config.lane_symbols > kMaxLaneSymbols) {
    throw UsageError("ANS lane size must be 1..32767 symbols, got " + std::to_string(config.lane_symbols));
  }
}

uint64_t lane_count(uint64_t n, const Config& config) {
  return n / config.lane_symbols + (n % config.lane_symbols != 0 ? 1 : 0);
}

uint16_t mode_of(const std::vector<uint64_t>& counts) {
  // The largest count, then the first symbol that has it: two loops without
  // a carried index, which the compiler vectorises (a pass over 8192 counts
  // per stream, whatever its length).
  uint64_t top = 0;
  for (const uint64_t c : counts) top = std::max(top, c);
  size_t best = 0;
  while (best + 1 < counts.size() && counts[best] != top) ++best;
  return static_cast<uint16_t>(best);
}

std::vector<uint32_t> normalize(const std::vector<uint64_t>& counts, unsigned prob_bits) {
  return normalize(counts.data(), counts.size(), prob_bits);
}

std::vector<uint32_t> normalize(const uint64_t* counts, size_t size, unsigned prob_bits) {
  const uint64_t total_f = uint64_t{1} << prob_bits;
  std::vector<uint32_t> f(size, 0);
  unsigned __int128 total = 0;
  size_t counted = 0;
  for (size_t s = 0; s < size; ++s) {
    total += counts[s];
    counted += counts[s] != 0;
  }
  if (counted == 0) return f;
  if (counted > total_f) {
    throw UsageError("ANS: " + std::to_string(counted) + " symbols counted, more than 2^M = " +
                     std::to_string(total_f));
  }
  const bool small = total < (static_cast<unsigned __int128>(1) << (64 - prob_bits));  // so is every count
  uint64_t sum = 0;
  for (size_t s = 0; s < size; ++s) {
    if (counts[s] == 0) continue;
    // The same quotient in 64 bits where it fits (every real input): a
    // 128-bit division is a library call.
    const uint64_t q = small ? (counts[s] << prob_bits) / static_cast<uint64_t>(total)
                             : static_cast<uint64_t>((static_cast<unsigned __int128>(counts[s]) << prob_bits) / total);
    f[s] = static_cast<uint32_t>(std::max<uint64_t>(1, q));
    sum += f[s];
  }
  if (sum < total_f) {
    size_t most = 0;
    for (size_t s = 1; s < size; ++s) {
      if (counts[s] > counts[most]) most = s;
    }
    f[most] += static_cast<uint32_t>(total_f - sum);
    return f;
  }
  // Passes over the symbols with f > 1 by (f descending, symbol ascending),
  // 1 from each. A whole pass lowers every such f by one, which keeps their
  // order; the ones that reach 1 are the last in it. So the order is sorted
  // once, whole passes are taken in bulk, and only the last pass is partial.
  uint64_t excess = sum - total_f;
  std::vector<uint32_t> order;
  for (size_t s = 0; s < f.size(); ++s) {
    if (f[s] > 1) order.push_back(static_cast<uint32_t>(s));
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return f[a] > f[b]; });
  size_t active = order.size();
  uint32_t taken = 0;  // whole passes done: every active f is its start value minus taken
  while (excess > 0) {
    // active > 0 here: with every f at 1 the sum is the counted symbols, <= 2^M.
    const uint32_t room = f[order[active - 1]] - taken - 1;  // passes before the last active one reaches 1
    const uint64_t passes = std::min<uint64_t>(room, excess / active);
    taken += static_cast<uint32_t>(passes);
    excess -= passes * active;
    // Those the passes brought to 1 take no part in the next pass, partial or whole.
    while (active > 0 && f[order[active - 1]] - taken == 1) --active;
    if (excess < active) break;
  }
  for (size_t i = 0; i < active; ++i) f[order[i]] -= taken + (i < excess ? 1 : 0);
  for (size_t i = active; i < order.size(); ++i) f[order[i]] = 1;
  return f;
}

std::vector<uint32_t> cumulative(const std::vector<uint32_t>& freq) {
  std::vector<uint32_t> cum(freq.size() + 1, 0);
  for (size_t s = 0; s < freq.size(); ++s) cum[s + 1] = cum[s] + freq[s];
  return cum;
}

std::vector<uint32_t> cumulative(size_t size, const uint32_t* symbols, const uint32_t* freq, size_t count) {
  std::vector<uint32_t> cum(size + 1);
  uint32_t sum = 0;
  size_t at = 0;  // cum[at..] not yet written
  for (size_t i = 0; i < count; ++i) {
    if (freq[i] == 0) continue;
    std::fill(cum.begin() + at, cum.begin() + symbols[i] + 1, sum);
    sum += freq[i];
    at = symbols[i] + 1;
  }
  std::fill(cum.begin() + at, cum.end(), sum);
  return cum;
}

Bytes write_head(uint64_t n, uint16_t mode, const std::vector<uint32_t>& run_freq,
                 const std::vector<uint32_t>& symbol_freq) {
  Bytes out;
  append_varint(out, n);
  out.push_back(kMethodCoded);
  append_le<uint16_t>(out, mode);
  append_tables(out, run_freq, symbol_freq);
  return out;
}

void append_varint(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

size_t read_varint(const uint8_t* data, size_t at, size_t end, uint64_t& value) {
  const size_t first = at;
  value = 0;
  for (unsigned shift = 0;; shift += 7) {
    require_format(at - first < kMaxVarintBytes, "ANS: varint too long");
    if (at >= end) return 0;
    const uint8_t byte = data[at++];
    require_format(shift < 63 || byte <= 1, "ANS: varint exceeds 64 bits");
    value |= uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) {
      require_format(byte != 0 || at == first + 1, "ANS: varint has a redundant group");
      return at;
    }
  }
}

uint64_t table_bits(const std::vector<uint32_t>& freq) {
  uint64_t used = 0, bits = 0;
  size_t next = 0;
  for (size_t s = 0; s < freq.size(); ++s) {
    if (freq[s] == 0) continue;
    ++used;
    bits += gamma_bits(s + 1 - next) + gamma_bits(freq[s]);
    next = s + 1;
  }
  return bits + gamma_bits(used + 1);
}

uint64_t table_bits(const uint32_t* symbols, const uint32_t* freq, size_t count) {
  uint64_t used = 0, bits = 0;
  size_t next = 0;
  for (size_t i = 0; i < count; ++i) {
    if (freq[i] == 0) continue;
    ++used;
    bits += gamma_bits(symbols[i] + 1 - next) + gamma_bits(freq[i]);
    next = symbols[i] + 1;
  }
  return bits + gamma_bits(used + 1);
}

void append_tables(Bytes& out, const std::vector<uint32_t>& first, const std::vector<uint32_t>& second) {
  {
    BitWriter w(out);
    put_table(w, first);
    put_table(w, second);
    w.finish();
  }
  out.resize(align4(out.size()), 0);
}

void append_tables(Bytes& out, const std::vector<uint32_t>& first, const uint32_t* second_symbols,
                   const uint32_t* second_freq, size_t second_count) {
  {
    BitWriter w(out);
    put_table(w, first);
    put_table(
        w, second_count, [&](size_t i) { return second_symbols[i]; }, [&](size_t i) { return second_freq[i]; });
    w.finish();
  }
  out.resize(align4(out.size()), 0);
}

size_t read_tables(const uint8_t* data, size_t begin, size_t end, unsigned prob_bits, size_t first_size,
                   std::vector<uint32_t>& first_freq, std::vector<uint32_t>& first_cum, size_t second_size,
                   bool second_may_be_empty, std::vector<uint32_t>& second_freq, std::vector<uint32_t>& second_cum) {
  return read_tables(data, begin, end, prob_bits, first_size, first_freq, first_cum, second_size, second_may_be_empty,
                     second_freq, second_cum, nullptr);
}

size_t read_tables(const uint8_t* data, size_t begin, size_t end, unsigned prob_bits, size_t first_size,
                   std::vector<uint32_t>& first_freq, std::vector<uint32_t>& first_cum, size_t second_size,
                   bool second_may_be_empty, std::vector<uint32_t>& second_freq, std::vector<uint32_t>& second_cum,
                   std::vector<uint32_t>* second_listed) {
  BitReader r(data, begin, end);
  const bool whole =
      read_table(r, first_size, prob_bits, false, "ANS: empty run table", first_freq, first_cum, nullptr) &&
      read_table(r, second_size, prob_bits, second_may_be_empty, "ANS: empty symbol table", second_freq, second_cum,
                 second_listed);
  if (!whole) return 0;
  const size_t end_bits = r.bit_position();
  const size_t padded = align4((end_bits + 7) / 8);
  if (padded > end) return 0;
  if (end_bits % 8 != 0) {
    require_format((data[end_bits / 8] >> (end_bits % 8)) == 0, "ANS: non-zero table padding");
  }
  for (size_t i = (end_bits + 7) / 8; i < padded; ++i) require_format(data[i] == 0, "ANS: non-zero table padding");
  return padded;
}

uint64_t tables_bytes_bound(uint64_t first_size, uint64_t second_size) {
  const uint64_t bits = 2 * kMaxGammaBits + (first_size + second_size) * 2 * kMaxGammaBits;
  return (bits + 7) / 8 + 4;
}

void read_stored(const uint8_t* symbols, uint64_t n, uint32_t alphabet, Bytes& out) {
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = std::max<uint32_t>(top, load_le<uint16_t>(symbols + 2 * i));
  require_format(top < alphabet, "ANS: stored symbol outside the alphabet");
  out.assign(symbols, symbols + 2 * n);
}

Bytes write_stored(ByteSpan symbols) {
  Bytes out;
  const uint64_t n = symbols.size / 2;
  append_varint(out, n);
  if (n == 0) return out;
  out.push_back(kMethodStored);
  out.insert(out.end(), symbols.data, symbols.data + 2 * n);
  return out;
}

Layout parse(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const Config& config, size_t max_bytes) {
  check_config(config);
  Layout layout;
  // Bytes are read only below prefix_size; past it, either more prefix is
  // needed (it is shorter than the stream) or the stream is truncated.
  const auto out_of_prefix = [&](size_t end, Layout& l, size_t needed) {
    if (end <= prefix_size) return false;
    require_format(prefix_size < stream_size, "ANS: stream truncated");
    l.needed = needed;
    return true;
  };

  // varint n
  uint64_t n = 0;
  size_t at = read_varint(prefix, 0, prefix_size, n);
  if (at == 0) {
    require_format(prefix_size < stream_size, "ANS: stream truncated");
    layout.needed = std::min(stream_size, kMaxVarintBytes);
    return layout;
  }
  require_format(n <= max_bytes / 2, "ANS: decoded size exceeds the allowed maximum");
  layout.n = n;
  if (n == 0) {
    require_format(stream_size == at, "ANS: bytes after an empty stream");
    layout.payload_at = at;
    return layout;
  }
  // From here on one more call, with `bound` bytes, has all a method-1 stream's head.
  const uint64_t lanes = lane_count(n, config);
  const size_t tables_at = at + 3;  // after the method and m
  const size_t bound = head_bound(tables_at, lanes, config, stream_size);
  if (out_of_prefix(at + 1, layout, bound)) return layout;
  layout.method = prefix[at++];
  if (layout.method == kMethodStored) {
    layout.payload_at = at;
    require_format(stream_size >= at && (stream_size - at) / 2 == n && (stream_size - at) % 2 == 0,
                   "ANS: stored stream's length disagrees with n");
    return layout;
  }
  require_format(layout.method == kMethodCoded, "ANS: unknown method");

  if (out_of_prefix(tables_at, layout, bound)) return layout;
  layout.mode = load_le<uint16_t>(prefix + at);
  require_format(layout.mode < config.alphabet, "ANS: run symbol outside the alphabet");

  const size_t states_at =
      read_tables(prefix, tables_at, prefix_size, config.prob_bits, kRunTokens, layout.run_freq, layout.run_cum,
                  config.alphabet, true, layout.symbol_freq, layout.symbol_cum);
  if (states_at == 0) {
    require_format(prefix_size < stream_size, "ANS: tables truncated");
    layout.needed = bound;
    return layout;
  }
  require_format(layout.symbol_freq[layout.mode] == 0, "ANS: the run symbol has a symbol frequency");

  // Lane arrays: checked against the stream's length before anything is sized by n.
  require_format(stream_size >= states_at && lanes <= (stream_size - states_at) / 6, "ANS: lane arrays truncated");
  const size_t words_at = states_at + 4 * lanes;
  const size_t payload_at = words_at + 2 * lanes;
  if (out_of_prefix(payload_at, layout, payload_at)) return layout;
  std::vector<uint64_t>& start = layout.word_start;
  start.assign(lanes + 1, 0);
  const uint32_t max_words = 2 * config.lane_symbols;
  for (size_t k = 0; k < lanes; ++k) {
    require_format(load_le<uint32_t>(prefix + states_at + 4 * k) >= kStateLow, "ANS: lane state below 2^16");
    const uint32_t words = load_le<uint16_t>(prefix + words_at + 2 * k);
    require_format(words <= max_words, "ANS: lane holds more than 2S words");
    start[k + 1] = start[k] + words;
  }
  require_format((stream_size - payload_at) % 2 == 0 && (stream_size - payload_at) / 2 == start[lanes],
                 "ANS: payload length disagrees with the lanes' word counts");
  layout.lanes = lanes;
  layout.states_at = states_at;
  layout.words_at = words_at;
  layout.payload_at = payload_at;
  return layout;
}

}  // namespace format
}  // namespace fz::ans
