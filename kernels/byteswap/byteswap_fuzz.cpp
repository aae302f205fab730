// libFuzzer target: byteswap of arbitrary bytes must not crash and must be its
// own inverse. The first byte picks the width; 3 stands for an invalid one (UsageError).
#include <cstddef>
#include <cstdint>

#include "byteswap/byteswap.hpp"
#include "common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr unsigned kWidths[] = {1, 2, 4, 8, 3};
  const unsigned width = kWidths[data[0] % 5];
  const fz::ByteSpan stream(data + 1, size - 1);
  try {
    fz::Bytes once, twice;
    fz::byteswap::apply(stream, width, once);
    fz::byteswap::apply(once, width, twice);
    if (twice != fz::Bytes(stream.data, stream.data + stream.size)) __builtin_trap();
  } catch (const fz::FormatError&) {
  } catch (const fz::UsageError&) {
  }
  return 0;
}
