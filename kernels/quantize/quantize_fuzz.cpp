// libFuzzer target for the quantizer (quantize.hpp).
// Byte 0 picks the test:
//   even: decode of arbitrary (codes, outliers, params) must throw FormatError or
//         succeed without crashing; with bit 1 set the params header is repaired
//         (version, mode, width, method, count) so that the codes themselves are
//         exercised. Layout after byte 0: 40 params bytes, u16 codes length, codes,
//         outliers = the rest.
//   odd:  encode -> decode of fuzzed floats with a fuzzed bound must keep every
//         element within the bound (checked in __float128, exact for these
//         differences and products) and specials bit-exact; a violation traps.
//         Layout: byte 1 = width/mode/fill flags, bytes 2..9 = bound seed, rest = elements.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "quantize/quantize.hpp"

namespace {

using fz::Bytes;
using fz::ByteSpan;
namespace q = fz::quantize;

void fuzz_decode(const uint8_t* data, size_t size, bool repair) {
  if (size < q::kParamsBytes + 2) return;
  Bytes params(data, data + q::kParamsBytes);
  size_t codes_len = fz::load_le<uint16_t>(data + q::kParamsBytes);
  const uint8_t* rest = data + q::kParamsBytes + 2;
  size_t rest_len = size - q::kParamsBytes - 2;
  if (codes_len > rest_len) codes_len = rest_len;
  const ByteSpan codes(rest, codes_len), outliers(rest + codes_len, rest_len - codes_len);
  if (repair) {
    params[0] = q::kParamsVersion;
    params[1] %= 3;
    params[2] = (params[2] & 1) ? 8 : 4;
    params[3] %= 3;
    std::memset(params.data() + 4, 0, 4);
    const uint64_t count = params[3] == 1 ? outliers.size / params[2] : codes.size / params[2];
    fz::store_le<uint64_t>(params.data() + 8, count);
  }
  Bytes out;
  try {
    q::decode(codes, outliers, params, out, 1 << 20);
  } catch (const fz::FormatError&) {
  }
}

template <typename T>
using UintOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
void fuzz_round_trip(const uint8_t* data, size_t size) {
  if (size < 10) return;
  using U = UintOf<T>;
  const uint8_t flags = data[1];
  q::Config config;
  config.width = sizeof(T);
  config.mode = static_cast<q::Mode>((flags >> 1) % 3);
  // Bound: a mantissa from the seed, an exponent fitting the mode (ABS: the
  // whole normal range of T; NOA/REL: 1e-7 .. 1).
  const uint64_t seed = fz::load_le<uint64_t>(data + 2);
  const double mantissa = 1.0 + static_cast<double>(seed & 0xFFFFFFFFFFFFFull) * 0x1p-52;
  const int span = sizeof(T) == 4 ? 254 : 2046;
  int exponent = config.mode == q::Mode::kAbs ? static_cast<int>((seed >> 52) % span) - span / 2
                                              : -static_cast<int>((seed >> 52) % 24) - 1;
  config.bound = std::ldexp(mantissa, exponent);
  const uint8_t* elements = data + 10;
  const size_t n = (size - 10) / sizeof(T);
  const ByteSpan in(elements, n * sizeof(T));
  if ((flags & 0x80) && n > 0) config.fill = fz::load_le<U>(elements);

  q::Streams streams;
  q::encode(in, config, streams);
  Bytes out;
  q::decode(streams.codes, streams.outliers, streams.params, out, in.size);
  if (out.size() != in.size) __builtin_trap();

  auto is_fill = [&](U bits) { return config.fill && bits == static_cast<U>(*config.fill); };
  __float128 range = 0;
  if (config.mode == q::Mode::kNoa) {
    bool any = false;
    T lo = 0, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      const U bits = fz::load_le<U>(elements + i * sizeof(T));
      T x;
      std::memcpy(&x, &bits, sizeof x);
      if (!std::isfinite(x) || is_fill(bits)) continue;
      if (!any || x < lo) lo = x;
      if (!any || x > hi) hi = x;
      any = true;
    }
    range = static_cast<__float128>(hi) - static_cast<__float128>(lo);
  }
  for (size_t i = 0; i < n; ++i) {
    const U xb = fz::load_le<U>(elements + i * sizeof(T)), yb = fz::load_le<U>(out.data() + i * sizeof(T));
    T x, y;
    std::memcpy(&x, &xb, sizeof x);
    std::memcpy(&y, &yb, sizeof y);
    const bool special = is_fill(xb) || !std::isfinite(x) || (x != 0 && !std::isnormal(x)) || (x == 0 && std::signbit(x));
    if (special) {
      if (xb != yb) __builtin_trap();
      continue;
    }
    __float128 err = static_cast<__float128>(x) - static_cast<__float128>(y);
    if (err < 0) err = -err;
    __float128 limit = config.bound;
    if (config.mode == q::Mode::kNoa) limit = static_cast<__float128>(config.bound) * range;
    if (config.mode == q::Mode::kRel) limit = static_cast<__float128>(config.bound) * static_cast<__float128>(std::fabs(x));
    if (!std::isfinite(y) || !(err <= limit)) __builtin_trap();
    if (config.mode == q::Mode::kRel && std::signbit(x) != std::signbit(y)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    fuzz_decode(data + 1, size - 1, (data[0] & 2) != 0);
  } else if (size >= 2) {
    if (data[1] & 1)
      fuzz_round_trip<double>(data, size);
    else
      fuzz_round_trip<float>(data, size);
  }
  return 0;
}
