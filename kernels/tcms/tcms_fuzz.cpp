// libFuzzer target: tcms decode of arbitrary bytes must not crash, and
// encode(decode(x)) == x and decode(encode(x)) == x (the stage is a bijection).
// The first byte picks the width; 3 stands for an invalid one (UsageError).
#include <cstddef>
#include <cstdint>

#include "tcms/tcms.hpp"
#include "common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr unsigned kWidths[] = {1, 2, 4, 8, 3};
  const unsigned width = kWidths[data[0] % 5];
  const fz::ByteSpan stream(data + 1, size - 1);
  try {
    fz::Bytes decoded, reencoded, encoded, redecoded;
    fz::tcms::decode(stream, width, decoded);
    fz::tcms::encode(decoded, width, reencoded);
    fz::tcms::encode(stream, width, encoded);
    fz::tcms::decode(encoded, width, redecoded);
    const fz::Bytes original(stream.data, stream.data + stream.size);
    if (reencoded != original || redecoded != original) __builtin_trap();
  } catch (const fz::FormatError&) {
  } catch (const fz::UsageError&) {
  }
  return 0;
}
