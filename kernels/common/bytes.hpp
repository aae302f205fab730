// Byte buffers and little-endian field access shared by every stage.
// Stream formats are little-endian regardless of the host (docs/FORMAT.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fz {

using Bytes = std::vector<uint8_t>;

// A read-only view of bytes; the caller owns the memory.
struct ByteSpan {
  const uint8_t* data = nullptr;
  size_t size = 0;

  ByteSpan() = default;
  ByteSpan(const uint8_t* d, size_t n) : data(d), size(n) {}
  ByteSpan(const Bytes& b) : data(b.data()), size(b.size()) {}  // NOLINT: implicit on purpose
  ByteSpan subspan(size_t offset, size_t count) const { return ByteSpan(data + offset, count); }
};

template <typename T>
inline T load_le(const uint8_t* p) {
  static_assert(sizeof(T) <= 8, "scalar fields only");
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86-64 and every CUDA host are little-endian
  return v;
}

template <typename T>
inline void store_le(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
inline void append_le(Bytes& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  store_le<T>(out.data() + at, v);
}

}  // namespace fz
