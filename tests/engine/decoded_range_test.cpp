// fz::decoded_hulls (fz/decoded_range.hpp), the pass behind the filter's NOA
// frame check: against the definition, one element at a time, for float32 and
// float64, both byte orders, 0 to 5 exact values (5: past the vector loops),
// NaN, infinities, signed zeros, denormals, values on either side of `far`,
// lengths that leave vector tails, any thread count, with and without AVX2.
#include "fz/decoded_range.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/cpu_features.hpp"

namespace fz {
namespace {

template <typename T, typename U>
DecodedHulls reference(const std::vector<T>& v, const std::vector<uint64_t>& exact, double bound) {
  T far = static_cast<T>(bound);
  if (static_cast<double>(far) < bound) far = std::nextafter(far, std::numeric_limits<T>::infinity());
  DecodedHulls h;
  double low = INFINITY, high = -INFINITY, far_low = INFINITY, far_high = -INFINITY;
  for (T x : v) {
    if (!std::isfinite(x)) continue;
    U bits;
    std::memcpy(&bits, &x, sizeof bits);
    low = std::min<double>(low, x);
    high = std::max<double>(high, x);
    bool is_far = std::fabs(x) > far;
    for (uint64_t e : exact) is_far = is_far && bits != static_cast<U>(e);
    if (is_far) {
      far_low = std::min<double>(far_low, x);
      far_high = std::max<double>(far_high, x);
    }
  }
  if (low <= high) h = {true, low, high, false, 0, 0};
  if (far_low <= far_high) {
    h.far_any = true;
    h.far_min = far_low;
    h.far_max = far_high;
  }
  return h;
}

template <typename T, typename U>
std::vector<T> sample(size_t n, std::mt19937& rng, const std::vector<T>& specials, double scale, double shift) {
  std::uniform_real_distribution<double> value(-1, 1);
  std::uniform_int_distribution<size_t> pick(0, 19);
  std::vector<T> v(n);
  for (T& x : v) {
    const size_t k = pick(rng);
    x = k < specials.size() ? specials[k] : static_cast<T>(shift + scale * value(rng));
  }
  return v;
}

void expect_same(const DecodedHulls& got, const DecodedHulls& want, const std::string& where) {
  EXPECT_EQ(got.any, want.any) << where;
  EXPECT_EQ(got.far_any, want.far_any) << where;
  if (want.any) {
    EXPECT_EQ(got.min, want.min) << where;
    EXPECT_EQ(got.max, want.max) << where;
  }
  if (want.far_any) {
    EXPECT_EQ(got.far_min, want.far_min) << where;
    EXPECT_EQ(got.far_max, want.far_max) << where;
  }
}

template <typename T, typename U>
void check_type() {
  std::mt19937 rng(7);
  const double bound = 0.0123456789;  // not a T: rounded up
  const T near_far = static_cast<T>(bound);
  const std::vector<T> specials = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                                   -std::numeric_limits<T>::infinity(), T(0), -T(0),
                                   std::numeric_limits<T>::denorm_min(), near_far,
                                   std::nextafter(near_far, T(1)), -near_far, T(-1e30), T(9.96921e36)};
  for (int exacts = 0; exacts <= 5; ++exacts) {
    // Exact values among the specials (the outliers above, so that leaving
    // them out of the far hull changes it), then others not present.
    std::vector<uint64_t> exact;
    const T pool[] = {T(-1e30), T(9.96921e36), T(0), T(3.5), T(-7.25)};
    for (int k = 0; k < exacts; ++k) {
      U bits;
      std::memcpy(&bits, &pool[k], sizeof bits);
      exact.push_back(bits);
    }
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(4099), size_t(300001)}) {
      for (double shift : {0.0, 5.0, -0.01}) {
        const std::vector<T> v = sample<T, U>(n, rng, specials, 1.0, shift);
        const DecodedHulls want = reference<T, U>(v, exact, bound);
        std::vector<uint8_t> big(v.size() * sizeof(T));
        for (size_t i = 0; i < v.size(); ++i)
          for (size_t b = 0; b < sizeof(T); ++b)
            big[i * sizeof(T) + b] = reinterpret_cast<const uint8_t*>(&v[i])[sizeof(T) - 1 - b];
        DataType be = DataType::of<T>();
        be.order = ByteOrder::Big;
        for (bool avx2 : {true, false}) {
          set_optional_isa_for_testing(avx2);
          for (unsigned threads : {1u, 2u, 0u}) {
            const std::string where = std::to_string(sizeof(T)) + "-byte, exacts " + std::to_string(exacts) +
                                      ", n " + std::to_string(n) + ", threads " + std::to_string(threads) +
                                      (avx2 ? ", avx2" : ", baseline");
            expect_same(decoded_hulls(v.data(), v.size() * sizeof(T), DataType::of<T>(), exact, bound, threads), want,
                        where);
            expect_same(decoded_hulls(big.data(), big.size(), be, exact, bound, threads), want, where + ", big-endian");
          }
        }
        set_optional_isa_for_testing(true);
      }
    }
  }
}

TEST(DecodedHulls, Float32MatchesTheDefinition) { check_type<float, uint32_t>(); }
TEST(DecodedHulls, Float64MatchesTheDefinition) { check_type<double, uint64_t>(); }

TEST(DecodedHulls, NothingFiniteGivesNoHull) {
  const std::vector<float> v = {NAN, INFINITY, -INFINITY};
  const DecodedHulls h = decoded_hulls(v.data(), v.size() * 4, DataType::of<float>(), {}, 0.5, 2);
  EXPECT_FALSE(h.any);
  EXPECT_FALSE(h.far_any);
}

TEST(DecodedHulls, OnlyFloatsAreTaken) {
  const std::vector<int32_t> v = {1, 2, 3};
  EXPECT_THROW(decoded_hulls(v.data(), v.size() * 4, DataType::of<int32_t>(), {}, 0.5, 1), Error);
  EXPECT_THROW(decoded_hulls(nullptr, 8, DataType::of<float>(), {}, 0.5, 1), Error);
}

}  // namespace
}  // namespace fz
