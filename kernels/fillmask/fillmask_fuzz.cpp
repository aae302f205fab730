// libFuzzer target for fillmask. Byte 0 picks the width (1, 2, 4, 8), bytes
// 1..8 the fill bits, byte 9 where the rest splits into (values, mask).
// Decode of the split must give FormatError or exactly values.size bytes with
// the fill at every set mask bit; encode -> decode of the rest (cut to whole
// words) must be bit-exact, and re-encoding the round trip gives the same streams.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "fillmask/fillmask.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fz;
  if (size < 10) return 0;
  static constexpr unsigned kWidths[] = {1, 2, 4, 8};
  const unsigned width = kWidths[data[0] % 4];
  uint64_t fill = load_le<uint64_t>(data + 1);
  if (width < 8) fill &= (uint64_t{1} << (8 * width)) - 1;
  const ByteSpan rest(data + 10, size - 10);
  const size_t split = rest.size == 0 ? 0 : data[9] * rest.size / 255;

  try {
    const ByteSpan values = rest.subspan(0, split), mask = rest.subspan(split, rest.size - split);
    Bytes out;
    fillmask::decode(values, mask, width, fill, out, size_t{1} << 20);
    if (out.size() != values.size) __builtin_trap();
    for (size_t i = 0; i < values.size / width; ++i) {
      const bool is_fill = (mask.data[i / 8] >> (i % 8)) & 1;
      if (std::memcmp(out.data() + i * width, is_fill ? reinterpret_cast<const uint8_t*>(&fill)
                                                      : values.data + i * width, width) != 0)
        __builtin_trap();
    }
  } catch (const FormatError&) {
  }

  const ByteSpan whole = rest.subspan(0, rest.size / width * width);
  fillmask::Streams s, again;
  fillmask::encode(whole, width, fill, s);
  Bytes back;
  fillmask::decode(s.values, s.mask, width, fill, back, whole.size);
  if (back.size() != whole.size || (whole.size != 0 && std::memcmp(back.data(), whole.data, whole.size) != 0))
    __builtin_trap();
  fillmask::encode(back, width, fill, again);
  if (again.values != s.values || again.mask != s.mask) __builtin_trap();
  return 0;
}
