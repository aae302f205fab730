#include "bytetranspose/bytetranspose.hpp"

#include <cstring>

#include "common/error.hpp"

namespace fz::bytetranspose {
namespace {

constexpr uint32_t kMaxElementSize = 1u << 24;

void check(uint32_t s) {
  if (s < 1 || s > kMaxElementSize) throw UsageError("bytetranspose: element size must be 1 .. 2^24");
}

// One work item per run of elements keeps each thread's writes contiguous per plane.
constexpr size_t kElementsPerItem = 4096;

}  // namespace

void encode(ByteSpan in, uint32_t s, Bytes& out, const Executor& exec) {
  check(s);
  out.resize(in.size);
  const size_t n = in.size / s;
  const size_t items = (n + kElementsPerItem - 1) / kElementsPerItem;
  exec.parallel_for(items, [&](size_t item) {
    const size_t begin = item * kElementsPerItem;
    const size_t end = std::min(n, begin + kElementsPerItem);
    for (uint32_t k = 0; k < s; ++k) {
      uint8_t* plane = out.data() + size_t(k) * n;
      for (size_t i = begin; i < end; ++i) plane[i] = in.data[i * s + k];
    }
  });
  if (in.size > n * s) std::memcpy(out.data() + n * s, in.data + n * s, in.size - n * s);
}

void decode(ByteSpan in, uint32_t s, Bytes& out, const Executor& exec) {
  check(s);
  out.resize(in.size);
  const size_t n = in.size / s;
  const size_t items = (n + kElementsPerItem - 1) / kElementsPerItem;
  exec.parallel_for(items, [&](size_t item) {
    const size_t begin = item * kElementsPerItem;
    const size_t end = std::min(n, begin + kElementsPerItem);
    for (uint32_t k = 0; k < s; ++k) {
      const uint8_t* plane = in.data + size_t(k) * n;
      for (size_t i = begin; i < end; ++i) out[i * s + k] = plane[i];
    }
  });
  if (in.size > n * s) std::memcpy(out.data() + n * s, in.data + n * s, in.size - n * s);
}

}  // namespace fz::bytetranspose
