// libFuzzer target for ANS. The first 3 bytes pick the config (alphabet,
// probability bits, lane size); the rest is decoded as a hostile stream (only
// FormatError may come out, nothing may be read or written out of bounds, an
// accepted stream decodes to its n symbols, each inside the alphabet, and
// format::parse from any prefix agrees with it) and, separately, taken as u16
// symbols folded into the alphabet, whose round trip must be exact.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ans/ans.hpp"
#include "ans/ans_format.hpp"
#include "common/bytes.hpp"
#include "common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  constexpr size_t kMaxOut = size_t{1} << 20;  // keeps hostile counts from eating memory
  static constexpr uint32_t kAlphabets[] = {2, 3, 17, 64, 256, 1024, 8192, 65536};
  fz::ans::Config config;
  config.alphabet = kAlphabets[data[0] % 8];
  unsigned min_bits = fz::ans::kMinProbBits;
  while ((uint64_t{1} << min_bits) < config.alphabet) ++min_bits;
  config.prob_bits = static_cast<uint8_t>(min_bits + data[1] % (fz::ans::kMaxProbBits - min_bits + 1));
  config.lane_symbols = 1 + data[2] % 64 * (data[2] >= 128 ? 511 : 1);
  const fz::ByteSpan stream(data + 3, size - 3);

  fz::Bytes decoded;
  bool accepted = false;
  try {
    fz::ans::decode(stream, config, decoded, kMaxOut);
    accepted = true;
  } catch (const fz::FormatError&) {
  }
  if (accepted) {
    const fz::ans::format::Layout l = fz::ans::format::parse(stream.data, stream.size, stream.size, config, kMaxOut);
    if (decoded.size() != 2 * l.n) __builtin_trap();
    for (size_t i = 0; i < l.n; ++i) {
      if (fz::load_le<uint16_t>(decoded.data() + 2 * i) >= config.alphabet) __builtin_trap();
    }
    // From a 10-byte prefix, at most one more call, then the same layout.
    fz::ans::format::Layout p = fz::ans::format::parse(stream.data, stream.size < 10 ? stream.size : 10, stream.size,
                                                       config, kMaxOut);
    if (p.needed != 0) p = fz::ans::format::parse(stream.data, p.needed, stream.size, config, kMaxOut);
    if (p.needed != 0 || p.payload_at != l.payload_at || p.word_start != l.word_start) __builtin_trap();
  }

  const size_t n = stream.size / 2;
  fz::Bytes symbols(2 * n);
  for (size_t i = 0; i < n; ++i) {
    fz::store_le<uint16_t>(symbols.data() + 2 * i,
                           static_cast<uint16_t>(fz::load_le<uint16_t>(stream.data + 2 * i) % config.alphabet));
  }
  fz::Bytes coded, round_trip;
  fz::ans::encode(symbols, config, coded);
  fz::ans::decode(coded, config, round_trip, symbols.size());
  if (round_trip != symbols) __builtin_trap();
  return 0;
}
