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

// Directory of the real fields: $FZ_DATA if set, else ../shared/data beside the clone.
std::string data_dir();
// Reads a real field; throws std::runtime_error (so the test fails, never skips) if missing.
Bytes read_field(const std::string& name);
// Names of the real fields of ../shared/data/README.md.
const std::vector<std::string>& field_names();

struct NamedInput {
  std::string name;
  Bytes bytes;
};
// Every synthetic pattern at every edge size, plus every real field.
std::vector<NamedInput> standard_inputs();

}  // namespace fz::testing
