// libFuzzer target for the Lorenzo stage. Byte 0 chooses the test:
//   bit 0 = 0: decode of hostile streams with small fuzzed dims: only FormatError
//              may come out, and an accepted stream decodes to N elements;
//   bit 0 = 1: encode -> decode of the remaining bytes as elements; every element
//              within the user bound (exact, in binary128) or, for NaN/Inf/
//              denormal/-0/fill, bit-exact; the streams are canonical (every
//              code < 2R, code 0 at every record with a stored delta, stored
//              deltas do not fit a code), and a nonzero code at an outlier
//              position is a FormatError; __builtin_trap otherwise.
// bit 1: float64 instead of float32; bits 2-3: rank - 1 (0..2); bit 4: fill value.
// Bytes 1-3: extents / shape selectors, byte 4: radius and bound selector.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "lorenzo/lorenzo.hpp"

namespace {

template <typename T, typename B>
bool element_ok(T x, T y, double bound, bool has_fill, uint64_t fill) {
  B bx, by;
  std::memcpy(&bx, &x, sizeof(T));
  std::memcpy(&by, &y, sizeof(T));
  const bool special = (has_fill && bx == static_cast<B>(fill)) || !std::isfinite(x) ||
                       std::fpclassify(x) == FP_SUBNORMAL || (x == 0 && std::signbit(x));
  if (special) return bx == by;
  if (!std::isfinite(y)) return false;
  __float128 d = static_cast<__float128>(x) - static_cast<__float128>(y);
  if (d < 0) d = -d;
  return d <= static_cast<__float128>(bound);
}

// Independent parse of the encoder's streams (format: docs/FORMAT.md): canonical form
// and the decoder's rejection of a nonzero code at an outlier position.
template <typename B>
void check_canonical(const fz::lorenzo::Streams& s, const std::vector<size_t>& dims, const fz::lorenzo::Config& c,
                     size_t n) {
  const uint64_t two_r = 2 * uint64_t{c.radius};
  for (size_t i = 0; i < n; ++i)
    if (fz::load_le<uint16_t>(s.codes.data() + 2 * i) >= two_r) __builtin_trap();
  const uint8_t* o = s.outliers.data();
  if (s.outliers.size() < 24) __builtin_trap();
  const uint64_t count = fz::load_le<uint64_t>(o);
  const uint64_t deltas = fz::load_le<uint64_t>(o + 8);
  const size_t iw = n <= (uint64_t{1} << 32) ? 4 : 8;
  const size_t kind_at = 24 + count * iw, delta_at = kind_at + count;
  if (s.outliers.size() < delta_at + deltas * sizeof(B)) __builtin_trap();
  size_t first_outlier = n;
  for (size_t r = 0, a = 0; r < count; ++r) {
    if (!(o[kind_at + r] & 4)) continue;
    const uint64_t index = iw == 4 ? fz::load_le<uint32_t>(o + 24 + 4 * r) : fz::load_le<uint64_t>(o + 24 + 8 * r);
    if (index >= n || fz::load_le<uint16_t>(s.codes.data() + 2 * index) != 0) __builtin_trap();
    const B d = fz::load_le<B>(o + delta_at + sizeof(B) * a++);
    const B z = static_cast<B>((d << 1) ^ (B{0} - (d >> (8 * sizeof(B) - 1))));
    if (z < two_r) __builtin_trap();
    if (first_outlier == n) first_outlier = index;
  }
  if (first_outlier == n) return;
  fz::Bytes codes = s.codes, out;  // a nonzero code in range there: 1 .. 2R-1
  fz::store_le<uint16_t>(codes.data() + 2 * first_outlier, static_cast<uint16_t>(1 + first_outlier % (two_r - 1)));
  try {
    fz::lorenzo::decode(codes, s.outliers, dims, c, out);
  } catch (const fz::FormatError&) {
    return;
  }
  __builtin_trap();
}

template <typename T, typename B>
void round_trip(const uint8_t* data, size_t size, unsigned rank, const uint8_t* shape, uint8_t knob, bool has_fill) {
  const size_t n_all = size / sizeof(T);
  std::vector<size_t> dims;
  size_t n = n_all;
  if (rank == 1) {
    dims = {n_all};
  } else {
    const size_t nx = 1 + shape[0] % 9;
    const size_t ny = rank == 3 ? 1 + shape[1] % 9 : 1;
    const size_t plane = nx * ny;
    const size_t slow = n_all / plane;
    n = slow * plane;
    dims = rank == 2 ? std::vector<size_t>{slow, nx} : std::vector<size_t>{slow, ny, nx};
  }
  static const double kBounds[] = {1e-6, 1e-3, 1.0, 1e3, 1e30, 4.0 * std::numeric_limits<float>::min(), 1e-300, 0.5};
  double bound = kBounds[knob % 8];
  if (sizeof(T) == 4 && bound < 4.0 * std::numeric_limits<float>::min()) bound = 1e-30;
  T eb = static_cast<T>(bound);
  if (static_cast<double>(eb) > bound) eb = std::nextafter(eb, T(0));
  fz::lorenzo::Config c;
  c.width = sizeof(T);
  c.eb = static_cast<double>(eb);
  static const uint32_t kRadii[] = {32768, 512, 1, 4};
  c.radius = kRadii[(knob >> 3) % 4];
  c.has_fill = has_fill;
  B fill = 0;
  if (has_fill && n > 0) std::memcpy(&fill, data, sizeof(T));  // the first element is the fill value
  c.fill_bits = fill;
  fz::lorenzo::Streams s;
  fz::lorenzo::encode(fz::ByteSpan(data, n * sizeof(T)), dims, c, bound, s);
  fz::Bytes out;
  fz::lorenzo::decode(s.codes, s.outliers, dims, c, out);
  if (out.size() != n * sizeof(T)) __builtin_trap();
  check_canonical<B>(s, dims, c, n);
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, data + i * sizeof(T), sizeof(T));
    std::memcpy(&y, out.data() + i * sizeof(T), sizeof(T));
    if (!element_ok<T, B>(x, y, bound, has_fill, fill)) __builtin_trap();
  }
}

void hostile_decode(const uint8_t* data, size_t size, unsigned width, unsigned rank, const uint8_t* shape,
                    uint8_t knob, bool has_fill) {
  std::vector<size_t> dims;
  for (unsigned k = 0; k < rank; ++k) dims.push_back(shape[k] % 12);
  size_t n = 1;
  for (size_t e : dims) n *= e;
  fz::lorenzo::Config c;
  c.width = width;
  c.eb = 0.5;
  c.radius = 1 + (static_cast<uint32_t>(knob) * 131) % 32768;
  c.has_fill = has_fill;
  c.fill_bits = 0x3F800000;  // 1.0f, or a small double
  // Mostly the right code length, sometimes not.
  size_t code_bytes = std::min(size, 2 * n);
  if ((knob & 0x80) && code_bytes > 0) --code_bytes;
  fz::Bytes out;
  try {
    fz::lorenzo::decode(fz::ByteSpan(data, code_bytes), fz::ByteSpan(data + code_bytes, size - code_bytes), dims, c,
                        out);
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
  const bool has_fill = mode & 16;
  const uint8_t* shape = data + 1;
  const uint8_t knob = data[4];
  if (mode & 1) {
    if (f64) round_trip<double, uint64_t>(data + 5, size - 5, rank, shape, knob, has_fill);
    else round_trip<float, uint32_t>(data + 5, size - 5, rank, shape, knob, has_fill);
  } else {
    hostile_decode(data + 5, size - 5, f64 ? 8 : 4, rank, shape, knob, has_fill);
  }
  return 0;
}
