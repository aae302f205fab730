// libFuzzer target for ANS, interleaved (stage type 15). The first 2 bytes
// pick the config (alphabet, probability bits); the rest is decoded as a
// hostile stream (only FormatError may come out, nothing may be read or
// written out of bounds, an accepted stream decodes to its n symbols, each
// inside the alphabet, and interleaved_format::parse from a 10-byte prefix
// asks at most twice and agrees with it) and, separately, taken as u16
// symbols folded into the alphabet, whose round trip must be exact.
#include <cstddef>
#include <cstdint>

#include "ans/interleaved.hpp"
#include "ans/interleaved_format.hpp"
#include "common/bytes.hpp"
#include "common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ifmt = fz::ans::interleaved_format;
  if (size < 2) return 0;
  constexpr size_t kMaxOut = size_t{1} << 20;  // keeps hostile counts from eating memory
  static constexpr uint32_t kAlphabets[] = {2, 3, 17, 64, 255, 1024, 8192, 65535};
  fz::ans::InterleavedConfig config;
  config.alphabet = kAlphabets[data[0] % 8];
  unsigned min_bits = ifmt::kMinProbBitsInterleaved;
  while ((uint64_t{1} << min_bits) < config.alphabet + 1) ++min_bits;
  config.prob_bits = static_cast<uint8_t>(min_bits + data[1] % (fz::ans::kMaxProbBits - min_bits + 1));
  const fz::ByteSpan stream(data + 2, size - 2);

  fz::Bytes decoded;
  bool accepted = false;
  try {
    fz::ans::decode_interleaved(stream, config, decoded, kMaxOut);
    accepted = true;
  } catch (const fz::FormatError&) {
  }
  if (accepted) {
    const ifmt::Layout l = ifmt::parse(stream.data, stream.size, stream.size, config, kMaxOut);
    if (decoded.size() != 2 * l.n) __builtin_trap();
    for (size_t i = 0; i < l.n; ++i) {
      if (fz::load_le<uint16_t>(decoded.data() + 2 * i) >= config.alphabet) __builtin_trap();
    }
    ifmt::Layout p = ifmt::parse(stream.data, stream.size < 10 ? stream.size : 10, stream.size, config, kMaxOut);
    for (int asks = 0; p.needed != 0; ++asks) {
      if (asks == 2) __builtin_trap();
      p = ifmt::parse(stream.data, p.needed, stream.size, config, kMaxOut);
    }
    if (p.payload_at != l.payload_at || p.word_start != l.word_start) __builtin_trap();
  }

  const size_t n = stream.size / 2;
  fz::Bytes symbols(2 * n);
  for (size_t i = 0; i < n; ++i) {
    fz::store_le<uint16_t>(symbols.data() + 2 * i,
                           static_cast<uint16_t>(fz::load_le<uint16_t>(stream.data + 2 * i) % config.alphabet));
  }
  fz::Bytes coded, round_trip;
  fz::ans::encode_interleaved(symbols, config, coded);
  fz::ans::decode_interleaved(coded, config, round_trip, symbols.size());
  if (round_trip != symbols) __builtin_trap();
  return 0;
}
