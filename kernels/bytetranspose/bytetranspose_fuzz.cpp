// libFuzzer: decode(encode(x)) == x for any bytes and element size.
#include <cstddef>
#include <cstdint>

#include "bytetranspose/bytetranspose.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t s = 1 + data[0] % 40;
  fz::ByteSpan in(data + 1, size - 1);
  fz::Bytes enc, dec;
  fz::bytetranspose::encode(in, s, enc);
  fz::bytetranspose::decode(enc, s, dec);
  if (dec.size() != in.size) __builtin_trap();
  for (size_t i = 0; i < in.size; ++i)
    if (dec[i] != in.data[i]) __builtin_trap();
  return 0;
}
