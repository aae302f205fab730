// 64-bit FNV-1a (offset basis 0xcbf29ce484222325, prime 0x100000001b3) for
// tests that compare bytes by digest: defined byte by byte, so the same bytes
// give the same digest on every machine (the frame digests of
// tests/golden/frame_digests.txt, the memory-limit probe's decoded chunks).
// Header-only: the probe links no test library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fz::testing {

inline uint64_t fnv1a64(const uint8_t* bytes, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace fz::testing
