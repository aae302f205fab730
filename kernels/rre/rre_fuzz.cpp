// libFuzzer target for RRE. The first byte picks the word size; the rest is
// decoded as a hostile stream (only FormatError may come out, nothing may be
// read or written out of bounds) and, separately, round-tripped as plain data.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/error.hpp"
#include "rre/rre.hpp"

namespace {

constexpr size_t kMaxOut = size_t{1} << 20;  // keeps hostile lengths from eating memory

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr unsigned kWordSizes[] = {1, 2, 4, 8};
  const unsigned word_size = kWordSizes[data[0] % 4];
  const fz::ByteSpan rest(data + 1, size - 1);

  fz::Bytes decoded;
  try {
    fz::rre::decode(rest, word_size, decoded, kMaxOut);
    if (decoded.size() != fz::load_le<uint64_t>(rest.data)) __builtin_trap();
  } catch (const fz::FormatError&) {
  }

  fz::Bytes coded;
  fz::Bytes round_trip;
  fz::rre::encode(rest, word_size, coded);
  fz::rre::decode(coded, word_size, round_trip, rest.size);
  if (round_trip.size() != rest.size || (rest.size != 0 && std::memcmp(round_trip.data(), rest.data, rest.size) != 0)) {
    __builtin_trap();
  }
  return 0;
}
