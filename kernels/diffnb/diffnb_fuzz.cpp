// libFuzzer target: diffnb decode of arbitrary bytes must not crash, and
// encode(decode(x)) == x and decode(encode(x)) == x (the stage is a bijection).
// The first byte picks the width; 3 stands for an invalid one (UsageError).
#include <cstddef>
#include <cstdint>

#include "diffnb/diffnb.hpp"
#include "common/testing/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fz::testing::fuzz_width_transform(data, size, fz::diffnb::encode, fz::diffnb::decode);
}
