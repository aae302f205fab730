// Inputs the SPLINE tests share (spline_test.cpp, spline_cuda_test.cpp): a
// smooth field with noise, the special values every lossy stage must keep
// exact, and the ragged shapes that exercise the tile borders.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "common/bytes.hpp"

namespace fz::spline::test_inputs {

using Dims = std::vector<size_t>;

inline size_t element_count(const Dims& dims) {
  size_t n = 1;
  for (size_t e : dims) n *= e;
  return n;
}

template <typename T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A smooth field with some noise, as T.
template <typename T>
std::vector<T> smooth_field(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(0.001 * i) + std::cos(0.05 * i) + noise(rng));
  return v;
}

// NaN with a payload, +-Inf, -0, denormals and the extremes: each must come
// back bit-exact.
template <typename T>
std::vector<T> special_values() {
  using B = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const B nan_payload = sizeof(T) == 4 ? B(0x7FC01234u) : B(0xFFF8000000ABCDEFull);
  T nan;
  std::memcpy(&nan, &nan_payload, sizeof(T));
  return {nan,
          std::numeric_limits<T>::infinity(),
          -std::numeric_limits<T>::infinity(),
          T(-0.0),
          std::numeric_limits<T>::denorm_min(),
          -std::numeric_limits<T>::denorm_min() * 5,
          T(1e38),
          T(-1e38),
          std::numeric_limits<T>::max(),
          std::numeric_limits<T>::lowest()};
}

// A smooth field in 3, 2 and 1 axes with special values sprinkled over one
// element in 50 and one at element 0 (an anchor).
template <typename T>
struct FieldWithSpecials {
  Dims dims;
  std::vector<T> values;
};
template <typename T>
std::vector<FieldWithSpecials<T>> fields_with_specials() {
  const std::vector<T> specials = special_values<T>();
  std::vector<FieldWithSpecials<T>> out;
  for (const Dims& dims : std::vector<Dims>{{40, 41, 19}, {130, 99}, {5000}}) {
    std::vector<T> values = smooth_field<T>(element_count(dims), 7);
    std::mt19937_64 rng(11);
    for (size_t k = 0; k < values.size() / 50; ++k) values[rng() % values.size()] = specials[k % specials.size()];
    values[0] = specials[0];  // an anchor
    out.push_back({dims, std::move(values)});
  }
  return out;
}

// Empty, tiny, ragged and tile-sized shapes in 1, 2 and 3 axes.
inline std::vector<Dims> ragged_shapes() {
  return {{0},      {1},          {2},          {0, 5},      {3, 0},    {1, 1, 1},   {2, 1, 1},
          {17, 17, 17}, {33, 1, 65}, {1000001}, {65, 130}, {1, 64},   {64, 1},     {257},
          {16, 16, 16}, {15, 33, 17}, {129, 3}, {4, 5, 300}, {100, 70, 45}, {1, 1, 4097}, {300, 1}};
}

}  // namespace fz::spline::test_inputs
