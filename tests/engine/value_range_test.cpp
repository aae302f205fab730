#include "value_range.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/cpu_features.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz::engine {
namespace {

// The definition, one element at a time: finite, not +0.0, not the fill or
// the missing value (each noted when present).
template <typename T, typename U>
FiniteRange reference_range(const std::vector<T>& v, std::optional<uint64_t> fill,
                            std::optional<uint64_t> missing = std::nullopt) {
  FiniteRange r;
  for (T x : v) {
    U bits;
    std::memcpy(&bits, &x, sizeof bits);
    if (fill && bits == static_cast<U>(*fill)) {
      r.has_fill = true;
      continue;
    }
    if (missing && bits == static_cast<U>(*missing)) {
      r.has_missing = true;
      continue;
    }
    if (bits == 0 || !std::isfinite(x)) continue;
    if (!r.any) {
      r.any = true;
      r.min = r.max = static_cast<double>(x);
    }
    r.min = std::min<double>(r.min, x);
    r.max = std::max<double>(r.max, x);
  }
  return r;
}

template <typename T>
std::vector<T> mixed_values(size_t n, uint32_t seed, T fill) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0.0), T(-0.0),
                        std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::max(), -std::numeric_limits<T>::max(), fill};
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    const unsigned kind = rng() % 8;
    v[i] = kind < 2 ? specials[rng() % (sizeof specials / sizeof specials[0])]
                    : static_cast<T>(std::ldexp(normal(rng), static_cast<int>(rng() % 40) - 20));
  }
  return v;
}

// Bit for bit: a range's ends go into the pipeline key and NOA's bound.
uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

template <typename T, typename U>
void check_against_reference() {
  const T fill = T(-1e30);
  U fill_bits;
  std::memcpy(&fill_bits, &fill, sizeof fill_bits);
  const T missing = T(9.5e29);
  U missing_bits;
  std::memcpy(&missing_bits, &missing, sizeof missing_bits);
  testing::ThreadExecutor three(3);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{8}, size_t{16}, size_t{17},
                   size_t{33}, size_t{4097}, size_t{70001}}) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      std::vector<T> v = mixed_values<T>(n, seed * 7919 + static_cast<uint32_t>(n), fill);
      // Some lanes see only skipped elements; the extremes sit in every lane position.
      if (seed == 1) std::fill(v.begin(), v.end(), T(0.0));
      if (seed == 2)
        for (size_t i = 0; i < n; ++i) v[i] = i % 4 == 3 ? static_cast<T>(i) : fill;
      // The missing value here and there, -0.0 as the only zero (the range's
      // lowest end when the rest is positive).
      if (seed == 3)
        for (size_t i = 0; i < n; ++i) v[i] = i % 5 == 1 ? missing : std::fabs(v[i]);
      if (seed == 4)
        for (size_t i = 0; i < n; ++i) v[i] = i % 7 == 2 ? T(-0.0) : (std::isnan(v[i]) ? v[i] : std::fabs(v[i]) + 1);
      for (std::optional<uint64_t> f : {std::optional<uint64_t>{}, std::optional<uint64_t>{fill_bits}}) {
        for (std::optional<uint64_t> m : {std::optional<uint64_t>{}, std::optional<uint64_t>{missing_bits}}) {
          const FiniteRange want = reference_range<T, U>(v, f, m);
          const ByteSpan bytes(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T));
          // The AVX2 loops where the CPU has them, and the SSE2 ones.
          for (bool optional_isa : {true, false}) {
            set_optional_isa_for_testing(optional_isa);
            for (const Executor* exec : {&serial_executor(), static_cast<const Executor*>(&three)}) {
              const FiniteRange got = finite_range(bytes, sizeof(T), false, f, m, *exec);
              ASSERT_EQ(got.any, want.any) << "n " << n << " seed " << seed;
              EXPECT_EQ(got.has_fill, want.has_fill) << "n " << n << " seed " << seed;
              EXPECT_EQ(got.has_missing, want.has_missing) << "n " << n << " seed " << seed;
              if (want.any) {
                EXPECT_EQ(bits_of(got.min), bits_of(want.min)) << "n " << n << " seed " << seed;
                EXPECT_EQ(bits_of(got.max), bits_of(want.max)) << "n " << n << " seed " << seed;
              }
            }
          }
          set_optional_isa_for_testing(true);
        }
        const FiniteRange want = reference_range<T, U>(v, f);
        const ByteSpan bytes(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T));
        // The same values stored big-endian give the same range.
        std::vector<uint8_t> swapped(bytes.size);
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t b = 0; b < sizeof(T); ++b) swapped[i * sizeof(T) + b] = bytes.data[i * sizeof(T) + sizeof(T) - 1 - b];
        const FiniteRange big = finite_range(ByteSpan(swapped.data(), swapped.size()), sizeof(T), true, f,
                                             serial_executor());
        ASSERT_EQ(big.any, want.any);
        if (want.any) {
          EXPECT_TRUE(big.min == want.min && big.max == want.max) << "big-endian n " << n;
        }
      }
    }
  }
}

TEST(FiniteRange, Float32MatchesTheDefinition) { check_against_reference<float, uint32_t>(); }
TEST(FiniteRange, Float64MatchesTheDefinition) { check_against_reference<double, uint64_t>(); }

TEST(NoaAbsoluteBound, NeverAboveTheRealProduct) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const double lo = std::ldexp(static_cast<double>(rng() >> 11), -53 + static_cast<int>(rng() % 60) - 30) * -1;
    const double hi = std::ldexp(static_cast<double>(rng() >> 11), -53 + static_cast<int>(rng() % 60) - 30);
    const double bound = std::ldexp(static_cast<double>(rng() >> 11) / 9007199254740992.0, -(static_cast<int>(rng() % 20)));
    FiniteRange r{true, lo, hi};
    const double e = noa_absolute_bound(bound, r);
    // In binary128 the difference (exponents within 60 of each other) and the
    // product of two doubles are exact.
    const __float128 exact = static_cast<__float128>(bound) * (static_cast<__float128>(hi) - lo);
    ASSERT_TRUE(static_cast<__float128>(e) <= exact) << bound << " " << lo << " " << hi;
    ASSERT_TRUE(static_cast<__float128>(e) >= exact * (1 - static_cast<__float128>(1e-15))) << "needlessly loose";
  }
  EXPECT_EQ(noa_absolute_bound(1e-3, FiniteRange{}), 0.0);
}

}  // namespace
}  // namespace fz::engine
