#include "common/testing/test_data.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

namespace fz::testing {

const std::vector<size_t>& edge_sizes() {
  static const std::vector<size_t> sizes = {0, 1, 7, 16383, 16384, 16385, 3 * 1024 * 1024 + 5};
  return sizes;
}

Bytes random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

Bytes zero_bytes(size_t n) { return Bytes(n, 0); }

Bytes constant_bytes(size_t n, uint8_t value) { return Bytes(n, value); }

Bytes alternating_bytes(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = ((i / 8) % 2) ? 0xFF : static_cast<uint8_t>(i & 1 ? 0x00 : 0xA5);
  return b;
}

Bytes smooth_words(size_t n, unsigned width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes b(n, 0);
  uint64_t value = rng();
  for (size_t i = 0; i + width <= n; i += width) {
    value += (rng() % 17) - 8;
    // Wider elements (compound) repeat the 8 value bytes.
    for (unsigned k = 0; k < width; ++k) b[i + k] = static_cast<uint8_t>(value >> (8 * (k % 8)));
  }
  return b;
}

std::string data_dir() {
  if (const char* env = std::getenv("FZ_DATA")) return env;
#ifdef FZ_DATA_DIR
  return FZ_DATA_DIR;
#else
  return "../shared/data";
#endif
}

Bytes read_field(const std::string& name) {
  const std::string path = data_dir() + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("real field missing: " + path + " (set FZ_DATA)");
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = {
      "vorticity.128_128_41", "vorticity.512_512", "wmag91.float",
      "999x999.float",        "const32x32x59.float", "pressure.384_384.f64"};
  return names;
}

const std::vector<RealField>& real_fields() {
  static const std::vector<RealField> fields = {
      {"wmag91.float", {91, 91, 91}, false},
      {"vorticity.128_128_41", {41, 128, 128}, false},
      {"vorticity.512_512", {512, 512}, false},
      {"999x999.float", {999, 999}, false},
      {"const32x32x59.float", {59, 32, 32}, false},
      {"pressure.384_384.f64", {384, 384}, true},
  };
  return fields;
}

std::vector<NamedInput> standard_inputs() {
  std::vector<NamedInput> inputs;
  for (size_t n : edge_sizes()) {
    const std::string s = std::to_string(n);
    inputs.push_back({"random/" + s, random_bytes(n, 0x5eed + n)});
    inputs.push_back({"zero/" + s, zero_bytes(n)});
    inputs.push_back({"constant/" + s, constant_bytes(n, 0x3C)});
    inputs.push_back({"alternating/" + s, alternating_bytes(n)});
    inputs.push_back({"smooth4/" + s, smooth_words(n, 4, n)});
  }
  for (const auto& name : field_names()) inputs.push_back({"field/" + name, read_field(name)});
  return inputs;
}

}  // namespace fz::testing
