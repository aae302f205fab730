// libFuzzer target for Huffman. The input is decoded as a hostile stream (only
// FormatError may come out, nothing may be read or written out of bounds, an
// accepted stream decodes to its stored symbol count) and, separately, taken
// as u16 symbols: the first 3 bytes pick the alphabet, length limit and block
// size, symbols are folded into the alphabet, and the round trip must be exact.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "huffman/huffman.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxOut = size_t{1} << 20;  // keeps hostile counts from eating memory
  fz::Bytes decoded;
  try {
    fz::huffman::decode(fz::ByteSpan(data, size), decoded, kMaxOut);
    if (decoded.size() != 2 * fz::load_le<uint64_t>(data)) __builtin_trap();
  } catch (const fz::FormatError&) {
  }

  if (size < 3) return 0;
  static constexpr uint32_t kAlphabets[] = {1, 2, 3, 17, 256, 1024, 4099, 65536};
  const uint32_t alphabet = kAlphabets[data[0] % 8];
  unsigned min_length = 1;
  while ((uint64_t{1} << min_length) < alphabet) ++min_length;
  fz::huffman::Config config;
  config.alphabet = alphabet;
  config.max_length = min_length + data[1] % (fz::huffman::kMaxLengthLimit - min_length + 1);
  config.block_symbols = 1 + data[2] % 64 * (data[2] >= 128 ? 97 : 1);
  const size_t n = (size - 3) / 2;
  fz::Bytes symbols(2 * n);
  for (size_t i = 0; i < n; ++i) {
    fz::store_le<uint16_t>(symbols.data() + 2 * i,
                           static_cast<uint16_t>(fz::load_le<uint16_t>(data + 3 + 2 * i) % alphabet));
  }
  fz::Bytes coded, round_trip;
  fz::huffman::encode(symbols, config, coded);
  fz::huffman::decode(coded, round_trip, symbols.size());
  if (round_trip != symbols) __builtin_trap();
  return 0;
}
