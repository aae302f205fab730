// libFuzzer target: byteswap of arbitrary bytes must not crash and must be its
// own inverse. The first byte picks the width; 3 stands for an invalid one (UsageError).
#include <cstddef>
#include <cstdint>

#include "byteswap/byteswap.hpp"
#include "common/testing/fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fz::testing::fuzz_self_inverse_width_transform(data, size, fz::byteswap::apply);
}
