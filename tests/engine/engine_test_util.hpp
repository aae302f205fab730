// Helpers shared by the engine tests.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "crc32c.hpp"
#include "fz/fz.hpp"

namespace fz::test {

template <typename T>
std::vector<T> smooth_field(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  double x = 0;
  for (size_t i = 0; i < n; ++i) {
    x += std::normal_distribution<double>(0.0, 1.0)(rng);
    v[i] = static_cast<T>(x * 3 + 1000 * std::sin(i * 0.01));
  }
  return v;
}

inline Bytes as_bytes(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  return Bytes(b, b + n);
}

inline Bytes reversed_words(const Bytes& in, unsigned width) {
  Bytes out = in;
  for (size_t i = 0; i + width <= out.size(); i += width)
    for (unsigned k = 0; k < width / 2; ++k) std::swap(out[i + k], out[i + width - 1 - k]);
  return out;
}

// Recomputes both CRCs after a deliberate edit, to reach the parsers as a
// hostile writer would. Layout: docs/FORMAT.md.
inline void reseal(Bytes& frame) {
  uint32_t header_bytes;
  std::memcpy(&header_bytes, frame.data() + 8, 4);
  if (header_bytes > frame.size() || header_bytes < 12) return;
  const uint32_t payload = engine::crc32c(frame.data() + header_bytes, frame.size() - header_bytes);
  std::memcpy(frame.data() + header_bytes - 8, &payload, 4);
  const uint32_t header = engine::crc32c(frame.data(), header_bytes - 4);
  std::memcpy(frame.data() + header_bytes - 4, &header, 4);
}

}  // namespace fz::test
