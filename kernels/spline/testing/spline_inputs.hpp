// Inputs the SPLINE tests share (spline_test.cpp, spline_hostile_test.cpp,
// spline_cuda_test.cpp, spline_fuzz.cpp): a smooth field with noise, the special values every
// lossy stage must keep exact, the ragged shapes that exercise the tile
// borders, and each element's place in the three code streams found the slow
// way (CodePlaces), independently of spline_code_rules.hpp's closed forms.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bytes.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"  // side_layout (the outlier list's place)

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
// The FILLMASK stage's mask stream for `fill` (bit g % 8 of byte g / 8 set
// iff element g is a fill element), as the spline's fill input takes it.
inline Bytes fill_mask_of(const std::vector<bool>& fill) {
  Bytes mask((fill.size() + 7) / 8, 0);
  for (size_t g = 0; g < fill.size(); ++g)
    if (fill[g]) mask[g / 8] = static_cast<uint8_t>(mask[g / 8] | (1u << (g % 8)));
  return mask;
}

inline std::vector<Dims> ragged_shapes() {
  return {{0},      {1},          {2},          {0, 5},      {3, 0},    {1, 1, 1},   {2, 1, 1},
          {17, 17, 17}, {33, 1, 65}, {1000001}, {65, 130}, {1, 64},   {64, 1},     {257},
          {16, 16, 16}, {15, 33, 17}, {129, 3}, {4, 5, 300}, {100, 70, 45}, {1, 1, 4097}, {300, 1}};
}

// Each element's code group and offset there (spline.hpp), the slow and
// independent way: the group from the element's own coordinates (2: every
// coordinate a multiple of 4; 1: every coordinate even; 0: the rest), the
// offset from a running counter per group over the elements in C order. It
// never calls spline_code_rules.hpp's closed forms (code_groups, code_row,
// code_place): the tests check those against it.
struct CodePlaces {
  Dims dims;
  std::vector<uint8_t> group;    // per element
  std::vector<size_t> offset;    // per element, in its group
  size_t size[kCodeGroups] = {0, 0, 0};  // codes per group
};

inline CodePlaces code_places(const Dims& dims) {
  CodePlaces p;
  p.dims = dims;
  const size_t n = element_count(dims);
  p.group.resize(n);
  p.offset.resize(n);
  std::vector<size_t> coord(dims.size(), 0);
  for (size_t g = 0; g < n; ++g) {
    bool all_even = true, all_fourth = true;
    for (size_t c : coord) {
      all_even = all_even && c % 2 == 0;
      all_fourth = all_fourth && c % 4 == 0;
    }
    const unsigned group = all_fourth ? 2 : all_even ? 1 : 0;
    p.group[g] = static_cast<uint8_t>(group);
    p.offset[g] = p.size[group]++;
    for (size_t k = dims.size(); k-- > 0;) {  // the next coordinates in C order
      if (++coord[k] < dims[k]) break;
      coord[k] = 0;
    }
  }
  return p;
}

inline uint32_t code_mask(unsigned code_bytes) { return code_bytes == 1 ? 0xFFu : 0xFFFFu; }

// The outlier indices listed in a side stream (spline.hpp's layout; with
// coarse levels L + C levels and the root alone); throws std::runtime_error
// when the stream is shorter than its header or its size does not match its
// outlier count.
inline std::vector<size_t> listed_outliers(const Bytes& side, const Dims& dims, unsigned width, bool coarse = false) {
  rules::Grid grid;
  if (rules::grid_of(dims, grid) != rules::GridCheck::kOk) throw std::runtime_error("spline test: bad dims");
  const auto layout = rules::side_layout(grid.rank, width, rules::stored_anchor_count(grid, coarse),
                                         coarse ? rules::coarse_level_count(grid) : 0);
  if (side.size() < layout.indices_at) throw std::runtime_error("spline test: side stream shorter than its header");
  const uint64_t count = load_le<uint64_t>(side.data() + layout.count_at);
  const size_t index_width = rules::index_width_of(grid.elements);
  if (count > grid.elements || side.size() != layout.values_at(count, index_width) + count * width)
    throw std::runtime_error("spline test: side stream of " + std::to_string(side.size()) + " bytes for " +
                             std::to_string(count) + " outliers");
  std::vector<size_t> indices;
  for (size_t k = 0; k < count; ++k)
    indices.push_back(index_width == 4 ? load_le<uint32_t>(side.data() + layout.indices_at + 4 * k)
                                       : load_le<uint64_t>(side.data() + layout.indices_at + 8 * k));
  return indices;
}

// The word stored for a code (offset form: q + R, 0 at anchors and
// outliers) in `form`, and back: signed = code - R modulo 2^(8 code_bytes);
// zigzag = that signed word v (as an integer in [-2^(b-1), 2^(b-1)), b = 8
// code_bytes) as 2v for v >= 0 and -2v - 1 for v < 0. Written from the
// definitions with wide integers, not with spline_code_rules.hpp's bit tricks.
inline uint32_t stored_of_code(uint32_t code, CodeForm form, uint32_t radius, unsigned code_bytes) {
  if (form == CodeForm::kOffset) return code;
  const int64_t q = static_cast<int64_t>(code) - static_cast<int64_t>(radius);
  const int64_t modulus = int64_t{1} << (8 * code_bytes);
  const int64_t word = ((q % modulus) + modulus) % modulus;
  if (form == CodeForm::kSigned) return static_cast<uint32_t>(word);
  const int64_t v = word >= modulus / 2 ? word - modulus : word;
  return static_cast<uint32_t>(v >= 0 ? 2 * v : -2 * v - 1);
}
inline uint32_t code_of_stored_word(uint32_t stored, CodeForm form, uint32_t radius, unsigned code_bytes) {
  if (form == CodeForm::kOffset) return stored;
  const int64_t modulus = int64_t{1} << (8 * code_bytes);
  int64_t word = stored;
  if (form == CodeForm::kZigzag) {
    const int64_t v = stored % 2 == 0 ? int64_t{stored} / 2 : -(int64_t{stored} + 1) / 2;
    word = (v + modulus) % modulus;
  }
  return static_cast<uint32_t>((word + radius) % modulus);
}

// The byte range of element g's code; throws std::out_of_range when its
// stream is too short for it (so that a test reading a stream of the wrong
// size fails instead of reading past it).
inline size_t code_byte_at(const Bytes (&codes)[kCodeGroups], const CodePlaces& places, unsigned code_bytes,
                           size_t g) {
  const size_t at = places.offset.at(g) * code_bytes;
  if (at + code_bytes > codes[places.group[g]].size()) throw std::out_of_range("spline test: code stream too short");
  return at;
}

// The word stored for element g, as it is in its group stream.
inline uint32_t stored_at(const Bytes (&codes)[kCodeGroups], const CodePlaces& places, unsigned code_bytes,
                          size_t g) {
  const Bytes& stream = codes[places.group.at(g)];
  const size_t at = code_byte_at(codes, places, code_bytes, g);
  return code_bytes == 1 ? stream[at] : load_le<uint16_t>(stream.data() + at);
}

// Sets the word stored for element g (any value, also one no encoder writes).
inline void set_stored(Bytes (&codes)[kCodeGroups], const CodePlaces& places, unsigned code_bytes, size_t g,
                       uint32_t stored) {
  Bytes& stream = codes[places.group.at(g)];
  const size_t at = code_byte_at(codes, places, code_bytes, g);
  if (code_bytes == 1) stream[at] = static_cast<uint8_t>(stored);
  else store_le<uint16_t>(stream.data() + at, static_cast<uint16_t>(stored));
}

// Element g's code in the offset form (q + R; 0 at anchors and outliers),
// whatever form the streams store.
inline uint32_t code_at(const Streams& streams, const CodePlaces& places, const CodeFormat& format, uint32_t radius,
                        size_t g) {
  return code_of_stored_word(stored_at(streams.codes, places, format.code_bytes, g), format.code_form, radius,
                             format.code_bytes);
}

// Sets element g's code, given in the offset form (only its low 8 * code_bytes
// bits are stored: 0xFFFF stays 0xFFFF in the offset form).
inline void set_code(Streams& streams, const CodePlaces& places, const CodeFormat& format, uint32_t radius, size_t g,
                     uint32_t code) {
  set_stored(streams.codes, places, format.code_bytes, g,
             stored_of_code(code & code_mask(format.code_bytes), format.code_form, radius, format.code_bytes));
}

}  // namespace fz::spline::test_inputs
