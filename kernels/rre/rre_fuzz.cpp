// libFuzzer target for RRE. The first byte picks the word size; the rest is
// decoded as a hostile stream (only FormatError may come out, nothing may be
// read or written out of bounds) and, separately, round-tripped as plain data.
#include <cstddef>
#include <cstdint>

#include "common/testing/fuzz_targets.hpp"
#include "rre/rre.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fz::testing::fuzz_word_coder(data, size, fz::rre::encode, fz::rre::decode);
}
