// The 8x8 bit transpose at the heart of the bit-shuffle, one definition for
// the CPU coder (bitshuffle_cpu.cpp, beside its SSE2 twin on two lanes) and
// the CUDA one (bitshuffle_block_cuda.cuh): an 8x8 bit matrix as 8 row bytes
// (row j = byte j, column r = bit r) is transposed, so that afterwards bit j
// of byte r is what bit r of byte j was. Swapping 2x2, then 4x4, then 8x8
// sub-blocks; the transform is its own inverse.
#pragma once

#include <cstdint>

#include "common/host_device.hpp"

namespace fz::bitshuffle {

FZ_HOST_DEVICE inline uint64_t transpose_bits(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  return x;
}

}  // namespace fz::bitshuffle
