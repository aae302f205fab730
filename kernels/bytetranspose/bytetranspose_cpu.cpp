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

// Element byte k of element i sits at i*s + k in element order and at k*n + i
// in plane order; `to_planes` says which way this call moves bytes.
template <bool to_planes>
void transpose(ByteSpan in, uint32_t s, Bytes& out, const Executor& exec) {
  check(s);
  out.resize(in.size);
  const size_t n = in.size / s;
  const size_t items = (n + kElementsPerItem - 1) / kElementsPerItem;
  exec.parallel_for(items, [&](size_t item) {
    const size_t begin = item * kElementsPerItem;
    const size_t end = std::min(n, begin + kElementsPerItem);
    for (uint32_t k = 0; k < s; ++k) {
      const size_t plane = size_t(k) * n;
      for (size_t i = begin; i < end; ++i) {
        if (to_planes) {
          out[plane + i] = in.data[i * s + k];
        } else {
          out[i * s + k] = in.data[plane + i];
        }
      }
    }
  });
  if (in.size > n * s) std::memcpy(out.data() + n * s, in.data + n * s, in.size - n * s);
}

}  // namespace

void encode(ByteSpan in, uint32_t s, Bytes& out, const Executor& exec) { transpose<true>(in, s, out, exec); }

void decode(ByteSpan in, uint32_t s, Bytes& out, const Executor& exec) { transpose<false>(in, s, out, exec); }

}  // namespace fz::bytetranspose
