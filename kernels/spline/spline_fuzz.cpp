// libFuzzer target for the spline stage (format: spline.hpp). Byte 0 chooses the test:
//   bit 0 = 0: decode of hostile streams with small fuzzed dims: only
//              FormatError may come out, and an accepted stream decodes to N
//              elements;
//   bit 0 = 1: encode -> decode of the remaining bytes as elements: every
//              element within the bound (exact, in binary128), or bit-exact
//              where it is an anchor, an outlier, NaN, Inf or -0; and the
//              same streams with a nonzero code at an outlier or a 0 code at
//              a predicted point are a FormatError. __builtin_trap otherwise.
// bit 1: float64 instead of float32; bits 2-3: rank - 1 (0..2); bit 4: 1-byte
// codes; bit 5: tuning off. Bytes 1-3: extents, byte 4: radius and bound.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"

namespace {

bool is_anchor(const std::vector<size_t>& dims, size_t g) {
  const size_t tile = fz::spline::rules::tile_size(static_cast<unsigned>(dims.size()));
  for (size_t k = dims.size(); k-- > 0;) {
    if ((g % dims[k]) % tile != 0) return false;
    g /= dims[k];
  }
  return true;
}

bool rejects(const fz::Bytes& codes, const fz::Bytes& side, const std::vector<size_t>& dims, unsigned width,
             unsigned code_bytes) {
  fz::Bytes out;
  try {
    fz::spline::decode(codes, side, dims, width, code_bytes, out);
  } catch (const fz::FormatError&) {
    return true;
  }
  return false;
}

template <typename T, typename B>
void round_trip(const uint8_t* data, size_t size, unsigned rank, const uint8_t* shape, uint8_t knob,
                unsigned code_bytes, bool tuned) {
  const size_t n_all = size / sizeof(T);
  std::vector<size_t> dims;
  size_t n = n_all;
  if (rank == 1) {
    dims = {n_all};
  } else {
    const size_t nx = 1 + shape[0] % 80;
    const size_t ny = rank == 3 ? 1 + shape[1] % 20 : 1;
    const size_t plane = nx * ny;
    n = n_all / plane * plane;
    dims = rank == 2 ? std::vector<size_t>{n_all / plane, nx} : std::vector<size_t>{n_all / plane, ny, nx};
  }
  static const double kBounds[] = {1e-6, 1e-3, 1.0, 1e3, 1e30, 1e-40, 1e-300, 0.5};
  const double bound = kBounds[knob % 8];
  fz::spline::Config c;
  c.width = sizeof(T);
  c.code_bytes = code_bytes;
  static const uint32_t kRadii[] = {32768, 512, 1, 4};
  c.radius = kRadii[(knob >> 3) % 4];
  if (code_bytes == 1 && c.radius > 128) c.radius = 128;
  c.tuning = tuned ? fz::spline::Tuning::kRatioFirst : fz::spline::Tuning::kOff;
  fz::spline::Streams s;
  fz::spline::encode(fz::ByteSpan(data, n * sizeof(T)), dims, c, bound, s);
  fz::Bytes out;
  fz::spline::decode(s.codes, s.side, dims, c.width, code_bytes, out);
  if (out.size() != n * sizeof(T)) __builtin_trap();
  auto code_at = [&](size_t g) -> uint32_t {
    return code_bytes == 1 ? s.codes[g] : fz::load_le<uint16_t>(s.codes.data() + 2 * g);
  };
  size_t first_outlier = n, first_predicted = n;
  for (size_t g = 0; g < n; ++g) {
    T x, y;
    std::memcpy(&x, data + g * sizeof(T), sizeof(T));
    std::memcpy(&y, out.data() + g * sizeof(T), sizeof(T));
    const bool anchor = is_anchor(dims, g);
    const uint32_t code = code_at(g);
    if (code >= 2 * c.radius) __builtin_trap();
    if (anchor || code == 0 || !fz::spline::rules::is_codable(x)) {
      if (std::memcmp(&x, &y, sizeof(T)) != 0) __builtin_trap();
      if (!anchor && code == 0 && first_outlier == n) first_outlier = g;
      continue;
    }
    if (first_predicted == n) first_predicted = g;
    __float128 d = static_cast<__float128>(x) - static_cast<__float128>(y);
    if (d < 0) d = -d;
    if (!std::isfinite(y) || d > static_cast<__float128>(bound)) __builtin_trap();
  }
  auto set_code = [&](fz::Bytes& codes, size_t g, uint32_t value) {
    if (code_bytes == 1) codes[g] = static_cast<uint8_t>(value);
    else fz::store_le<uint16_t>(codes.data() + 2 * g, static_cast<uint16_t>(value));
  };
  if (first_outlier < n) {
    fz::Bytes codes = s.codes;
    set_code(codes, first_outlier, c.radius);
    if (!rejects(codes, s.side, dims, c.width, code_bytes)) __builtin_trap();
  }
  if (first_predicted < n) {
    fz::Bytes codes = s.codes;
    set_code(codes, first_predicted, 0);
    if (!rejects(codes, s.side, dims, c.width, code_bytes)) __builtin_trap();
  }
}

void hostile_decode(const uint8_t* data, size_t size, unsigned width, unsigned rank, const uint8_t* shape,
                    uint8_t knob, unsigned code_bytes) {
  std::vector<size_t> dims;
  for (unsigned k = 0; k < rank; ++k) dims.push_back(shape[k] % 40);
  size_t n = 1;
  for (size_t e : dims) n *= e;
  size_t codes_size = std::min(size, code_bytes * n);
  if ((knob & 0x80) && codes_size > 0) --codes_size;  // mostly the right code length, sometimes not
  fz::Bytes out;
  try {
    fz::spline::decode(fz::ByteSpan(data, codes_size), fz::ByteSpan(data + codes_size, size - codes_size), dims,
                       width, code_bytes, out);
    if (out.size() != n * width) __builtin_trap();
  } catch (const fz::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const uint8_t mode = data[0];
  const bool f64 = mode & 2;
  const unsigned rank = 1 + ((mode >> 2) & 3) % 3;
  const unsigned code_bytes = mode & 16 ? 1 : 2;
  const bool tuned = !(mode & 32);
  const uint8_t* shape = data + 1;
  const uint8_t knob = data[4];
  if (mode & 1) {
    if (f64) round_trip<double, uint64_t>(data + 5, size - 5, rank, shape, knob, code_bytes, tuned);
    else round_trip<float, uint32_t>(data + 5, size - 5, rank, shape, knob, code_bytes, tuned);
  } else {
    hostile_decode(data + 5, size - 5, f64 ? 8 : 4, rank, shape, knob, code_bytes);
  }
  return 0;
}
