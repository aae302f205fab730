// libFuzzer target for the spline stage (format: spline.hpp). Byte 0 chooses the test:
//   bit 0 = 0: decode of hostile streams with small fuzzed dims (the input
//              cut into the three code streams, mostly of their groups'
//              sizes, and the side stream): only FormatError may come out,
//              and an accepted stream decodes to N elements;
//   bit 0 = 1: encode -> decode of the remaining bytes as elements: each code
//              stream of its group's size (found the slow way,
//              spline_inputs.hpp), every element within the bound (exact, in
//              binary128), or bit-exact where it is an anchor, an outlier,
//              NaN, Inf or -0; the other code form gives the same side
//              stream and each stored word its code - R (signed) or code
//              (offset); and the same streams with a nonzero code at an
//              outlier, a 0 code at a predicted point, a code 2R or a code
//              moved to another group are a FormatError. __builtin_trap otherwise.
// bit 1: float64 instead of float32; bits 2-3: rank - 1 (0..2); bit 4: 1-byte
// codes; bit 5: tuning off; bit 6: the signed code form. Bytes 1-3: extents,
// byte 4: radius and bound (hostile: bit 7 a code stream one byte short,
// bits 5-6 which); coarse levels (spline.hpp) with bit 5 (round trip) or
// bit 0 (hostile): then only the root is a stored anchor (code 0, exact),
// and every other anchor is checked as any predicted point.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/testing/spline_inputs.hpp"

namespace {

namespace inputs = fz::spline::test_inputs;

bool is_anchor(const std::vector<size_t>& dims, size_t g) {
  const size_t tile = fz::spline::rules::tile_size(static_cast<unsigned>(dims.size()));
  for (size_t k = dims.size(); k-- > 0;) {
    if ((g % dims[k]) % tile != 0) return false;
    g /= dims[k];
  }
  return true;
}

bool rejects(const fz::spline::Streams& streams, const std::vector<size_t>& dims,
             const fz::spline::CodeFormat& format) {
  fz::Bytes out;
  try {
    fz::spline::decode(streams, dims, format, out);
  } catch (const fz::FormatError&) {
    return true;
  }
  return false;
}

template <typename T, typename B>
void round_trip(const uint8_t* data, size_t size, unsigned rank, const uint8_t* shape, uint8_t knob,
                unsigned code_bytes, bool tuned, fz::spline::CodeForm form) {
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
  c.code_form = form;
  c.coarse_levels = c.compact_config = (knob & 0x20) != 0;
  const fz::spline::CodeFormat format = fz::spline::format_of(c);
  fz::spline::Streams s;
  fz::spline::encode(fz::ByteSpan(data, n * sizeof(T)), dims, c, bound, s);
  const inputs::CodePlaces places = inputs::code_places(dims);
  for (unsigned k = 0; k < fz::spline::kCodeGroups; ++k)
    if (s.codes[k].size() != places.size[k] * code_bytes) __builtin_trap();
  fz::Bytes out;
  fz::spline::decode(s, dims, format, out);
  if (out.size() != n * sizeof(T)) __builtin_trap();
  size_t first_outlier = n, first_predicted = n;
  for (size_t g = 0; g < n; ++g) {
    T x, y;
    std::memcpy(&x, data + g * sizeof(T), sizeof(T));
    std::memcpy(&y, out.data() + g * sizeof(T), sizeof(T));
    const bool anchor = c.coarse_levels ? g == 0 : is_anchor(dims, g);  // a stored anchor
    const uint32_t code = inputs::code_at(s, places, format, c.radius, g);
    if (code >= 2 * c.radius) __builtin_trap();
    if (anchor && code != 0) __builtin_trap();
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
  {
    // The other code form: the same side stream, each word the same code.
    fz::spline::Config other = c;
    other.code_form =
        form == fz::spline::CodeForm::kSigned ? fz::spline::CodeForm::kOffset : fz::spline::CodeForm::kSigned;
    fz::spline::Streams t;
    fz::spline::encode(fz::ByteSpan(data, n * sizeof(T)), dims, other, bound, t);
    if (t.side != s.side) __builtin_trap();
    const uint32_t modulus = code_bytes == 1 ? 0x100 : 0x10000;
    for (size_t g = 0; g < n; ++g) {
      const uint32_t word = inputs::stored_at(s.codes, places, code_bytes, g);
      const uint32_t other_word = inputs::stored_at(t.codes, places, code_bytes, g);
      // Each form's word from the code the offset word is (testing/spline_inputs.hpp, the slow way).
      const uint32_t code = inputs::code_of_stored_word(word, form, c.radius, code_bytes);
      if (inputs::code_of_stored_word(other_word, other.code_form, c.radius, code_bytes) != code) __builtin_trap();
      if (inputs::stored_of_code(code, form, c.radius, code_bytes) != word) __builtin_trap();
      (void)modulus;
    }
  }
  if (first_outlier < n) {
    fz::spline::Streams t = s;
    inputs::set_code(t, places, format, c.radius, first_outlier, c.radius);
    if (!rejects(t, dims, format)) __builtin_trap();
  }
  if (first_predicted < n) {
    fz::spline::Streams t = s;
    inputs::set_code(t, places, format, c.radius, first_predicted, 0);
    if (!rejects(t, dims, format)) __builtin_trap();
    if (2 * c.radius < (code_bytes == 1 ? 0x100u : 0x10000u)) {
      inputs::set_code(t, places, format, c.radius, first_predicted, 2 * c.radius);
      if (!rejects(t, dims, format)) __builtin_trap();
    }
  }
  for (unsigned k = 0; k < fz::spline::kCodeGroups; ++k) {
    if (s.codes[k].empty()) continue;
    fz::spline::Streams t = s;
    const unsigned to = (k + 1) % fz::spline::kCodeGroups;
    t.codes[to].insert(t.codes[to].end(), t.codes[k].end() - code_bytes, t.codes[k].end());
    t.codes[k].resize(t.codes[k].size() - code_bytes);
    if (!rejects(t, dims, format)) __builtin_trap();
  }
}

void hostile_decode(const uint8_t* data, size_t size, unsigned width, unsigned rank, const uint8_t* shape,
                    uint8_t knob, unsigned code_bytes, fz::spline::CodeForm form) {
  std::vector<size_t> dims;
  for (unsigned k = 0; k < rank; ++k) dims.push_back(shape[k] % 40);
  size_t n = 1;
  for (size_t e : dims) n *= e;
  // Mostly the groups' sizes, sometimes one byte less in one of them.
  fz::spline::rules::Grid grid;
  fz::spline::rules::grid_of(dims, grid);
  const fz::spline::rules::CodeGroups groups = fz::spline::rules::code_groups(grid);
  fz::ByteSpan codes[fz::spline::kCodeGroups];
  size_t at = 0;
  for (unsigned k = 0; k < fz::spline::kCodeGroups; ++k) {
    size_t bytes = std::min(size - at, code_bytes * groups.size[k]);
    if ((knob & 0x80) && (knob >> 5) % 4 == k && bytes > 0) --bytes;
    codes[k] = fz::ByteSpan(data + at, bytes);
    at += bytes;
  }
  fz::Bytes out;
  try {
    fz::spline::decode(codes, fz::ByteSpan(data + at, size - at), dims, {width, code_bytes, form, (knob & 1) != 0},
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
  const unsigned code_bytes = mode & 16 ? 1 : 2;
  const bool tuned = !(mode & 32);
  const fz::spline::CodeForm form = mode & 64 ? (mode & 128 ? fz::spline::CodeForm::kZigzag : fz::spline::CodeForm::kSigned)
                                              : fz::spline::CodeForm::kOffset;
  const uint8_t* shape = data + 1;
  const uint8_t knob = data[4];
  if (mode & 1) {
    if (f64) round_trip<double, uint64_t>(data + 5, size - 5, rank, shape, knob, code_bytes, tuned, form);
    else round_trip<float, uint32_t>(data + 5, size - 5, rank, shape, knob, code_bytes, tuned, form);
  } else {
    hostile_decode(data + 5, size - 5, f64 ? 8 : 4, rank, shape, knob, code_bytes, form);
  }
  return 0;
}
