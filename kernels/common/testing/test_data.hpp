// Inputs for stage tests: synthetic patterns and the real fields of ../shared/data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.hpp"

namespace fz::testing {

// The sizes every stage must round-trip (issue 2): 0, 1, 7, 16383, 16384, 16385 and a few MiB.
const std::vector<size_t>& edge_sizes();

Bytes random_bytes(size_t n, uint64_t seed);
Bytes zero_bytes(size_t n);
Bytes constant_bytes(size_t n, uint8_t value);
Bytes alternating_bytes(size_t n);  // 0x00,0xFF,0x00,... and word-level alternation
// A smooth-ish signal of `width`-byte little-endian words (small deltas).
Bytes smooth_words(size_t n, unsigned width, uint64_t seed);

// u16 symbols as the little-endian bytes the symbol coders (Huffman, ANS) take.
inline Bytes u16_bytes(const std::vector<uint16_t>& symbols) {
  Bytes b(2 * symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) store_le<uint16_t>(b.data() + 2 * i, symbols[i]);
  return b;
}

// Directory of the real fields: $FZ_DATA if set, else ../shared/data beside the clone.
std::string data_dir();
// Reads a real field; throws std::runtime_error (so the test fails, never skips) if missing.
Bytes read_field(const std::string& name);
// Names of the real fields of ../shared/data/README.md.
const std::vector<std::string>& field_names();

// The real fields with their shapes (slowest extent first, as the predictors
// take them) and element type; wmag91 first.
struct RealField {
  std::string name;
  std::vector<size_t> dims;
  bool f64;
};
const std::vector<RealField>& real_fields();

// A real field's values as T (a float64 field is narrowed when T is float).
template <typename T>
std::vector<T> field_values(const RealField& field) {
  const Bytes raw = read_field(field.name);
  std::vector<T> values;
  const size_t width = field.f64 ? 8 : 4;
  for (size_t i = 0; i + width <= raw.size(); i += width)
    values.push_back(field.f64 ? static_cast<T>(load_le<double>(raw.data() + i))
                               : static_cast<T>(load_le<float>(raw.data() + i)));
  return values;
}

struct NamedInput {
  std::string name;
  Bytes bytes;
};
// Every synthetic pattern at every edge size, plus every real field.
std::vector<NamedInput> standard_inputs();

}  // namespace fz::testing
