#include "value_range.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "common/blocks.hpp"

namespace fz::engine {
namespace {

template <typename T, typename U>
FiniteRange block_range(const uint8_t* p, size_t n, bool big_endian, std::optional<uint64_t> fill) {
  FiniteRange r;
  for (size_t i = 0; i < n; ++i) {
    U bits;
    std::memcpy(&bits, p + i * sizeof(U), sizeof(U));
    if (big_endian) bits = sizeof(U) == 4 ? U(__builtin_bswap32(uint32_t(bits))) : U(__builtin_bswap64(uint64_t(bits)));
    if (bits == 0 || (fill && bits == static_cast<U>(*fill))) continue;  // +0.0: possibly padding
    T x;
    std::memcpy(&x, &bits, sizeof(T));
    if (!std::isfinite(x)) continue;
    const double v = static_cast<double>(x);
    if (!r.any) {
      r = {true, v, v};
    } else {
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
    }
  }
  return r;
}

}  // namespace

FiniteRange finite_range(ByteSpan data, unsigned width, bool big_endian, std::optional<uint64_t> fill,
                         const Executor& exec) {
  const size_t n = data.size / width;
  const size_t per_block = kBlockBytes / width * 16;  // 256 KiB of elements per work item
  const size_t blocks = (n + per_block - 1) / per_block;
  std::vector<FiniteRange> partial(blocks);
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t begin = b * per_block, count = std::min(per_block, n - begin);
    partial[b] = width == 4 ? block_range<float, uint32_t>(data.data + begin * 4, count, big_endian, fill)
                            : block_range<double, uint64_t>(data.data + begin * 8, count, big_endian, fill);
  });
  FiniteRange total;
  for (const FiniteRange& r : partial) {
    if (!r.any) continue;
    if (!total.any) {
      total = r;
    } else {
      total.min = std::min(total.min, r.min);
      total.max = std::max(total.max, r.max);
    }
  }
  return total;
}

double noa_absolute_bound(double bound, const FiniteRange& range) {
  if (!range.any) return 0;
  // range = max - min, rounded down: TwoSum gives the exact rounding error.
  const double a = range.max, b = -range.min;
  double span = a + b;
  const double bb = span - a;
  const double error = (a - (span - bb)) + (b - bb);
  if (error < 0) span = std::nextafter(span, 0.0);
  if (!std::isfinite(span)) span = std::numeric_limits<double>::max();
  // bound * span, rounded down: fma gives the exact error of the product.
  double eb = bound * span;
  if (std::fma(bound, span, -eb) < 0) eb = std::nextafter(eb, 0.0);
  return eb;
}

}  // namespace fz::engine
