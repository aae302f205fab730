// The CPU spline quantizer's batch loops (quantize_cpu.cpp: SSE2 / AVX2 for
// float32, AVX2 for float64) against rules::quantize, element by element,
// bit for bit in codes and values: ordinary values, values near and past the
// radius, errors exactly at the bound (the ties the loops hand back), -0,
// denormals, NaN, +-Inf, overflowing predictions. The GPU runs rules::quantize
// itself, so this is what keeps the CPU's frames the GPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/cpu_features.hpp"
#include "spline/quantize_cpu.hpp"

namespace fz::spline {
namespace {

template <typename T>
std::vector<T> special_values() {
  const T inf = std::numeric_limits<T>::infinity();
  return {T(0), -T(0), inf, -inf, std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
          -std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max(), -std::numeric_limits<T>::max(),
          std::numeric_limits<T>::min()};
}

template <typename T>
void check_batches(uint32_t radius, double bound) {
  const auto lq = rules::make_level_quantizer<T>(static_cast<T>(2 * bound), radius, bound);
  std::mt19937_64 rng(radius * 31 + static_cast<uint64_t>(bound * 1e6));
  std::normal_distribution<double> spread(0, 1);
  std::uniform_int_distribution<int> pick(0, 9);
  const std::vector<T> specials = special_values<T>();
  std::vector<T> x(4099), p(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    p[i] = static_cast<T>(spread(rng) * 100);
    switch (pick(rng)) {
      case 0:  // an error of exactly k steps +- the bound: ties and near ties
        x[i] = static_cast<T>(p[i] + (static_cast<int>(spread(rng) * 10) * 2 + (i % 2 ? 1 : -1)) * bound);
        break;
      case 1:  // near or past the radius
        x[i] = static_cast<T>(p[i] + (radius + spread(rng) * 3) * 2 * bound);
        break;
      case 2:
        x[i] = specials[i % specials.size()];
        break;
      case 3:
        p[i] = specials[(i / 3) % specials.size()];
        x[i] = static_cast<T>(spread(rng));
        break;
      default:
        x[i] = static_cast<T>(p[i] + spread(rng) * bound * (1 << pick(rng)));
    }
  }
  std::vector<T> expected_value(x.size());
  std::vector<uint32_t> expected_code(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int32_t q;
    expected_code[i] = rules::quantize(x[i], p[i], lq, expected_value[i], q);
  }
  for (bool avx2 : {false, cpu_has_avx2()}) {
    // Every start and length, so each loop's tail and alignment is taken.
    for (size_t start : {size_t{0}, size_t{1}, size_t{3}})
      for (size_t n : {x.size() - start, size_t{7}, size_t{1}}) {
        std::vector<T> value(n);
        std::vector<uint32_t> code(n);
        detail::quantize_batch(x.data() + start, p.data() + start, n, lq, avx2, value.data(), code.data());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(code[i], expected_code[start + i]) << "avx2 " << avx2 << " at " << start + i;
          ASSERT_EQ(std::memcmp(&value[i], &expected_value[start + i], sizeof(T)), 0)
              << "avx2 " << avx2 << " at " << start + i << ": " << value[i] << " vs " << expected_value[start + i];
        }
      }
  }
}

TEST(SplineQuantize, Float32BatchesEqualTheRule) {
  for (uint32_t radius : {4096u, 32768u})
    for (double bound : {1e-3, 0.37, 3.0}) check_batches<float>(radius, bound);
}

TEST(SplineQuantize, Float64BatchesEqualTheRule) {
  for (uint32_t radius : {4096u, 32768u})
    for (double bound : {1e-3, 0.37, 3.0, 1e-9}) check_batches<double>(radius, bound);
}

}  // namespace
}  // namespace fz::spline
