#include "quantize/quantize.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "bitshuffle/bitshuffle.hpp"
#include "common/cpu_features.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"
#include "diffnb/diffnb.hpp"
#include "rze/rze.hpp"

namespace fz {
namespace {

using quantize::Config;
using quantize::Mode;
using quantize::Streams;
using Quad = __float128;  // 113-bit significand: differences of nearby doubles and
                          // products of two doubles are exact, independent of the
                          // kernel's double-double reasoning.

const std::vector<double> kRelativeBounds = {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
const std::vector<double> kAbsBounds32 = {1e30, 1, 1e-3, 1e-6, 1e-20, 1.1754944e-38 * 4};
const std::vector<double> kAbsBounds64 = {1e30, 1, 1e-3, 1e-6, 1e-20, 2.2250738585072014e-308 * 4};

template <typename T>
using UintOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
std::vector<T> as_values(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}
template <typename T>
Bytes as_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
UintOf<T> bits_of(T v) {
  UintOf<T> u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <typename T>
T from_bits(UintOf<T> u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

Bytes round_trip(const Bytes& in, const Config& config, Streams* streams_out = nullptr,
                 const Executor& exec = serial_executor()) {
  Streams s;
  quantize::encode(in, config, s, exec);
  Bytes out;
  quantize::decode(s.codes, s.outliers, s.params, out, in.size(), exec);
  if (streams_out) *streams_out = std::move(s);
  return out;
}

// Counts elements outside the bound; checks bit-exactness where it is required
// (NaN, inf, denormals, -0 and the fill value).
template <typename T>
size_t violations(const Bytes& in_bytes, const Bytes& out_bytes, const Config& config) {
  const auto in = as_values<T>(in_bytes);
  const auto out = as_values<T>(out_bytes);
  if (in.size() != out.size()) return in.size() + 1;
  auto special = [&](T x) {
    const auto u = bits_of(x);
    if (config.fill && u == static_cast<UintOf<T>>(*config.fill)) return true;
    return !std::isfinite(x) || (x != 0 && !std::isnormal(x)) || (x == 0 && std::signbit(x));
  };
  Quad range = 0;
  if (config.mode == Mode::kNoa) {
    bool any = false;
    T lo = 0, hi = 0;
    for (T x : in) {
      if (!std::isfinite(x) || (config.fill && bits_of(x) == static_cast<UintOf<T>>(*config.fill))) continue;
      if (!any) lo = hi = x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      any = true;
    }
    range = static_cast<Quad>(hi) - static_cast<Quad>(lo);
  }
  size_t bad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const T x = in[i], y = out[i];
    if (special(x)) {
      if (bits_of(x) != bits_of(y)) ++bad;
      continue;
    }
    const Quad err = static_cast<Quad>(x) - static_cast<Quad>(y);
    const Quad abs_err = err < 0 ? -err : err;
    Quad limit;
    if (config.mode == Mode::kAbs)
      limit = config.bound;
    else if (config.mode == Mode::kNoa)
      limit = static_cast<Quad>(config.bound) * range;
    else
      limit = static_cast<Quad>(config.bound) * (x < 0 ? -static_cast<Quad>(x) : static_cast<Quad>(x));
    if (!(abs_err <= limit) || !std::isfinite(y)) ++bad;
    if (config.mode == Mode::kRel && (std::signbit(x) != std::signbit(y))) ++bad;
  }
  return bad;
}

template <typename T>
void expect_bounded(const Bytes& in, const Config& config, const std::string& what) {
  Streams s;
  const Bytes out = round_trip(in, config, &s);
  ASSERT_EQ(out.size(), in.size()) << what;
  EXPECT_EQ(violations<T>(in, out, config), 0u) << what << " mode " << int(config.mode) << " eb " << config.bound;
}

const char* mode_name(Mode m) { return m == Mode::kAbs ? "ABS" : m == Mode::kNoa ? "NOA" : "REL"; }

template <typename T>
void sweep(const Bytes& in, const std::string& what, std::optional<uint64_t> fill = std::nullopt) {
  for (Mode mode : {Mode::kAbs, Mode::kNoa, Mode::kRel}) {
    const auto& bounds = mode != Mode::kAbs ? kRelativeBounds : sizeof(T) == 4 ? kAbsBounds32 : kAbsBounds64;
    for (double eb : bounds) {
      Config c;
      c.width = sizeof(T);
      c.mode = mode;
      c.bound = eb;
      c.fill = fill;
      expect_bounded<T>(in, c, what + " " + mode_name(mode));
    }
  }
}

Bytes float_field_as_double(const Bytes& f32) {
  const auto v = as_values<float>(f32);
  std::vector<double> d(v.begin(), v.end());
  return as_bytes(d);
}

const std::vector<std::string> kFloatFields = {"vorticity.128_128_41", "vorticity.512_512", "wmag91.float",
                                               "999x999.float", "const32x32x59.float"};

TEST(Quantize, RealFloatFieldsWithinEveryBound) {
  for (const auto& name : kFloatFields) sweep<float>(testing::read_field(name), name);
}

TEST(Quantize, RealFieldsAsDoubleWithinEveryBound) {
  sweep<double>(testing::read_field("pressure.384_384.f64"), "pressure");
  for (const auto& name : kFloatFields) sweep<double>(float_field_as_double(testing::read_field(name)), name);
}

// Spikes, steps, noise, specials, extremes, all in one array.
template <typename T>
std::vector<T> adversarial(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  const T big = std::numeric_limits<T>::max();
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = (i / 97) % 9;
    T x;
    switch (kind) {
      case 0: x = static_cast<T>(std::sin(i * 0.01) * 10); break;                 // smooth
      case 1: x = static_cast<T>(normal(rng));  break;                            // white noise
      case 2: x = static_cast<T>((i / 13) % 2 ? 1000.0 : -3.5); break;            // steps
      case 3: x = i % 17 == 0 ? static_cast<T>(1e30) : T(0.5); break;            // spikes
      case 4: x = static_cast<T>(big * (1 - 1e-3 * (rng() % 100) / 100.0)) * ((i & 1) ? 1 : -1); break;
      case 5: x = from_bits<T>(static_cast<UintOf<T>>(rng()));  break;             // any bits
      case 6: x = static_cast<T>(normal(rng) * std::numeric_limits<T>::min() * 8); break;  // near the normals
      case 7: x = static_cast<T>(std::ldexp(normal(rng), static_cast<int>(rng() % 200) - 100)); break;
      default: x = static_cast<T>(i * 0.25); break;                               // ties of power-of-2 bounds
    }
    v[i] = x;
  }
  // Specials sprinkled in.
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::min() / 3, T(-0.0), T(0.0), big, -big,
                        from_bits<T>(static_cast<UintOf<T>>(~UintOf<T>{0})),  // NaN with payload
                        std::numeric_limits<T>::min(), -std::numeric_limits<T>::min()};
  for (size_t i = 0; i < n; i += 31) v[i] = specials[(i / 31) % (sizeof specials / sizeof specials[0])];
  return v;
}

template <typename T>
void adversarial_sweep() {
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4095}, size_t{100000}}) {
    sweep<T>(as_bytes(adversarial<T>(n, n)), "adversarial " + std::to_string(n));
  }
  const size_t n = 20000;
  sweep<T>(as_bytes(std::vector<T>(n, T(3.25))), "constant");
  sweep<T>(as_bytes(std::vector<T>(n, std::numeric_limits<T>::quiet_NaN())), "all NaN");
  sweep<T>(as_bytes(std::vector<T>(n, -std::numeric_limits<T>::infinity())), "all -inf");
  sweep<T>(as_bytes(std::vector<T>(n, T(-0.0))), "all -0");
  {
    std::vector<T> zeros(n, T(0));
    for (size_t i = 0; i < n; i += 3) zeros[i] = T(-0.0);
    sweep<T>(as_bytes(zeros), "+-0");
  }
  {
    std::vector<T> near_max(n);
    for (size_t i = 0; i < n; ++i)
      near_max[i] = std::nextafter(std::numeric_limits<T>::max(), T(0)) * ((i % 3) ? 1 : -1);
    sweep<T>(as_bytes(near_max), "near max");
  }
  // Fill values: a land mask of -1e34 (and one of -1e10) beside smooth data.
  for (T fill : {T(-1e34), T(-1e10), T(0)}) {
    std::vector<T> masked(n);
    for (size_t i = 0; i < n; ++i) masked[i] = (i / 50) % 3 == 0 ? fill : static_cast<T>(20 + std::sin(i * 0.003));
    const auto fill_bits = static_cast<uint64_t>(bits_of(fill));
    sweep<T>(as_bytes(masked), "fill", fill_bits);
    std::vector<T> all_fill(n, fill);
    sweep<T>(as_bytes(all_fill), "all fill", fill_bits);
    masked[5] = T(7);  // fill, one other value and NaN: NOA's constant path
    masked[6] = std::numeric_limits<T>::quiet_NaN();
    for (size_t i = 7; i < n; ++i) masked[i] = masked[i] == fill ? fill : T(7);
    sweep<T>(as_bytes(masked), "fill+constant", fill_bits);
  }
}

TEST(Quantize, AdversarialFloat) { adversarial_sweep<float>(); }
TEST(Quantize, AdversarialDouble) { adversarial_sweep<double>(); }

// Values sitting exactly on the bound: the exact test must accept them (no
// needless outliers) and never accept one ulp more.
TEST(Quantize, ExactTiesAreAcceptedAndNothingMore) {
  Config c;
  c.width = 4;
  c.bound = 1.0;  // eb2 = 2: odd integers are ties, error exactly 1
  std::vector<float> v;
  for (int i = -1000; i <= 1000; ++i) v.push_back(static_cast<float>(i));
  Streams s;
  const Bytes in = as_bytes(v);
  const Bytes out = round_trip(in, c, &s);
  EXPECT_EQ(s.outliers.size(), 0u);
  EXPECT_EQ(violations<float>(in, out, c), 0u);
  // A bound just below 1 (not a float): the working bound rounds down, ties become
  // errors of 1 > bound unless re-binned, and the check must still hold.
  c.bound = std::nextafter(1.0, 0.0);
  EXPECT_EQ(violations<float>(in, round_trip(in, c), c), 0u);
  c.width = 8;
  std::vector<double> d(v.begin(), v.end());
  EXPECT_EQ(violations<double>(as_bytes(d), round_trip(as_bytes(d), c), c), 0u);
}

TEST(Quantize, ThreadsGiveTheSerialBytes) {
  const testing::ThreadExecutor threads(4);
  std::vector<Bytes> inputs = {testing::read_field("wmag91.float"), as_bytes(adversarial<float>(300000, 3))};
  for (const Bytes& in : inputs)
    for (Mode mode : {Mode::kAbs, Mode::kNoa, Mode::kRel}) {
      Config c;
      c.mode = mode;
      c.bound = 1e-3;
      Streams a, b;
      quantize::encode(in, c, a);
      quantize::encode(in, c, b, threads);
      EXPECT_EQ(a.codes, b.codes);
      EXPECT_EQ(a.outliers, b.outliers);
      EXPECT_EQ(a.params, b.params);
      Bytes x, y;
      quantize::decode(a.codes, a.outliers, a.params, x, in.size());
      quantize::decode(a.codes, a.outliers, a.params, y, in.size(), threads);
      EXPECT_EQ(x, y);
    }
  const Bytes d = as_bytes(adversarial<double>(200000, 4));
  for (Mode mode : {Mode::kAbs, Mode::kNoa, Mode::kRel}) {
    Config c;
    c.width = 8;
    c.mode = mode;
    c.bound = 1e-4;
    Streams a, b;
    quantize::encode(d, c, a);
    quantize::encode(d, c, b, threads);
    EXPECT_EQ(a.codes, b.codes);
    EXPECT_EQ(a.outliers, b.outliers);
    EXPECT_EQ(a.params, b.params);
  }
}

// ---- format pinning ---------------------------------------------------------

Bytes params_bytes(uint8_t mode, uint8_t width, uint8_t method, uint64_t count, uint64_t step, double user,
                   double enforced) {
  Bytes p = {1, mode, width, method, 0, 0, 0, 0};
  append_le<uint64_t>(p, count);
  append_le<uint64_t>(p, step);
  append_le<double>(p, user);
  append_le<double>(p, enforced);
  return p;
}

template <typename U>
Bytes words(std::initializer_list<U> w) {
  Bytes b;
  for (U x : w) append_le<U>(b, x);
  return b;
}

TEST(QuantizeFormat, AbsFloat) {
  // eb = 0.5: eb_w = 0.5, eb2 = 1, inv = 1. 2.6 -> b = 3 (error 0.4); 1.5 -> b = 2
  // (round half away), error exactly 0.5 = eb: accepted. NaN and -0 are outliers.
  const std::vector<float> in = {0.0f, 1.0f, -2.0f, 2.6f, NAN, -0.0f, 1.5f};
  Config c;
  c.bound = 0.5;
  Streams s;
  quantize::encode(as_bytes(in), c, s);
  EXPECT_EQ(s.codes, words<uint32_t>({1, 3, 4, 7, 0, 0, 5}));
  EXPECT_EQ(s.outliers, words<uint32_t>({bits_of(NAN), 0x80000000u}));
  EXPECT_EQ(s.params, params_bytes(0, 4, 0, 7, 0x3F800000u, 0.5, 0.5));
  Bytes out;
  quantize::decode(s.codes, s.outliers, s.params, out, 1000);
  const std::vector<float> expect = {0.0f, 1.0f, -2.0f, 3.0f, NAN, -0.0f, 2.0f};
  EXPECT_EQ(out, as_bytes(expect));
}

TEST(QuantizeFormat, AbsDouble) {
  // eb = 0.25: eb2 = 0.5, inv = 2. 1.3 -> s = 2.6 -> b = 3 -> 1.5; -0.2 -> b = 0 -> +0.
  const std::vector<double> in = {1.3, -0.2, -1.0};
  Config c;
  c.width = 8;
  c.bound = 0.25;
  Streams s;
  quantize::encode(as_bytes(in), c, s);
  EXPECT_EQ(s.codes, words<uint64_t>({7, 1, 4}));
  EXPECT_TRUE(s.outliers.empty());
  EXPECT_EQ(s.params, params_bytes(0, 8, 0, 3, bits_of(0.5), 0.25, 0.25));
  Bytes out;
  quantize::decode(s.codes, s.outliers, s.params, out, 1000);
  EXPECT_EQ(out, as_bytes(std::vector<double>{1.5, 0.0, -1.0}));
}

TEST(QuantizeFormat, RelFloat) {
  // eb = 0.25: 1 + eb = 1.25 exactly, L = 2 Lg(1.25) = 0.5, 1/L = 2.
  // Lg(1) = 0 -> b 0 -> code 3 (+), 4 (-). Lg(4) = 2 -> b 4 -> zigzag 8 -> 3 + 16 = 19.
  // Lg(3) = 1.5 -> b 3 -> zigzag 6 -> 3 + 12 = 15, Pw(1.5) = 3 exactly.
  // 1.1: Lg = 0.1 -> b 0 -> 1.0, error 0.1 <= 0.275. +0 -> 1, -0 -> 2; inf outlier.
  const std::vector<float> in = {1.0f, -1.0f, 4.0f, 3.0f, 1.1f, 0.0f, -0.0f, INFINITY};
  Config c;
  c.mode = Mode::kRel;
  c.bound = 0.25;
  Streams s;
  quantize::encode(as_bytes(in), c, s);
  EXPECT_EQ(s.codes, words<uint32_t>({3, 4, 19, 15, 3, 1, 2, 0}));
  EXPECT_EQ(s.outliers, words<uint32_t>({0x7F800000u}));
  EXPECT_EQ(s.params, params_bytes(2, 4, 0, 8, bits_of(0.5f), 0.25, 0.25));
  Bytes out;
  quantize::decode(s.codes, s.outliers, s.params, out, 1000);
  EXPECT_EQ(out, as_bytes(std::vector<float>{1.0f, -1.0f, 4.0f, 3.0f, 1.0f, 0.0f, -0.0f, INFINITY}));
}

TEST(QuantizeFormat, NoaConstantAndLossless) {
  Config c;
  c.mode = Mode::kNoa;
  c.bound = 1e-3;
  Streams s;
  quantize::encode(as_bytes(std::vector<float>{2.0f, 2.0f, INFINITY, 2.0f}), c, s);
  EXPECT_EQ(s.codes, words<uint32_t>({1, 1, 0, 1}));
  EXPECT_EQ(s.outliers, words<uint32_t>({0x7F800000u}));
  EXPECT_EQ(s.params, params_bytes(1, 4, 2, 4, 0x40000000u, 1e-3, 0));

  const Bytes nans = as_bytes(std::vector<float>{NAN, -INFINITY});
  quantize::encode(nans, c, s);
  EXPECT_TRUE(s.codes.empty());
  EXPECT_EQ(s.outliers, nans);
  EXPECT_EQ(s.params, params_bytes(1, 4, 1, 2, 0, 1e-3, 0));
  Bytes out;
  quantize::decode(s.codes, s.outliers, s.params, out, 8);
  EXPECT_EQ(out, nans);
}

TEST(QuantizeFormat, NoaRange) {
  // Range 0..8, eb 0.125: bound exactly 1, eb2 = 2. 3 -> b 2 (tie, away) -> 4.
  Config c;
  c.mode = Mode::kNoa;
  c.bound = 0.125;
  Streams s;
  quantize::encode(as_bytes(std::vector<float>{0.0f, 8.0f, 3.0f}), c, s);
  EXPECT_EQ(s.codes, words<uint32_t>({1, 9, 5}));
  EXPECT_EQ(s.params, params_bytes(1, 4, 0, 3, 0x40000000u, 0.125, 1.0));
}

TEST(QuantizeFormat, TinyAbsBoundGoesLossless) {
  Config c;
  c.bound = 1e-40;  // below FLT_MIN
  Streams s;
  const Bytes in = as_bytes(std::vector<float>{1.0f, 2.0f});
  quantize::encode(in, c, s);
  EXPECT_TRUE(s.codes.empty());
  EXPECT_EQ(s.outliers, in);
  EXPECT_EQ(s.params[3], 1);
}

// ---- hostile input ----------------------------------------------------------

TEST(QuantizeHostile, MalformedStreamsThrowFormatError) {
  Config c;
  c.bound = 1e-2;
  Streams s;
  const Bytes in = as_bytes(adversarial<float>(10000, 9));
  quantize::encode(in, c, s);
  ASSERT_GT(s.outliers.size(), 0u);
  Bytes out;
  auto bad = [&](Bytes codes, Bytes outliers, Bytes params, size_t max_out, const char* what) {
    EXPECT_THROW(quantize::decode(codes, outliers, params, out, max_out), FormatError) << what;
  };
  Bytes p = s.params;
  bad(Bytes(s.codes.begin(), s.codes.end() - 4), s.outliers, p, in.size(), "codes short");
  bad(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - 4), p, in.size(), "outliers short");
  Bytes more = s.outliers;
  more.insert(more.end(), 4, 0);
  bad(s.codes, more, p, in.size(), "outliers long");
  bad(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - 1), p, in.size(), "outliers ragged");
  bad(s.codes, s.outliers, Bytes(p.begin(), p.end() - 1), in.size(), "params short");
  bad(s.codes, s.outliers, p, in.size() - 1, "max_out");
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{8}, size_t{13}}) {
    Bytes q = p;
    q[i] ^= 0x40;
    bad(s.codes, s.outliers, q, SIZE_MAX, "params byte");
  }
  {
    Bytes q = p;
    store_le<uint64_t>(q.data() + 8, ~uint64_t{0});  // count huge
    bad(s.codes, s.outliers, q, SIZE_MAX, "count");
  }
  for (uint64_t step : {uint64_t{0}, uint64_t{0x7F800000}, uint64_t{0x7FC00000}, uint64_t{0x00000001},
                        uint64_t{0xBF800000}, uint64_t{1} << 40}) {
    Bytes q = p;
    store_le<uint64_t>(q.data() + 16, step);
    bad(s.codes, s.outliers, q, SIZE_MAX, "step");
  }
  {
    Bytes codes = s.codes;
    store_le<uint32_t>(codes.data() + 40, 0x80000000u);  // zigzag 2^31 - 1 > 2^30 - 1
    // Keep the zero count unchanged: only a nonzero code is replaced.
    if (load_le<uint32_t>(s.codes.data() + 40) != 0) bad(codes, s.outliers, p, in.size(), "code range");
  }
  // REL: a code whose exponent leaves the range.
  c.mode = Mode::kRel;
  quantize::encode(as_bytes(std::vector<float>{1.0f}), c, s);
  bad(words<uint32_t>({0x3FFFFFFF}), {}, s.params, 4, "REL exponent");
  bad(words<uint32_t>({0xFFFFFFFF}), {}, s.params, 4, "REL zigzag");
  // Constant method: only code 1.
  c.mode = Mode::kNoa;
  quantize::encode(as_bytes(std::vector<float>{2.0f}), c, s);
  bad(words<uint32_t>({2}), {}, s.params, 4, "constant code");
  // Lossless with codes.
  quantize::encode(as_bytes(std::vector<float>{NAN}), c, s);
  bad(words<uint32_t>({0}), s.outliers, s.params, 4, "lossless codes");
}

// The decoder converts double codes with |b| < 2^51 by the magic-number method
// and falls back to a general conversion for a block with larger codes. Values
// near 5e3 at ABS 1e-12 give |b| around 2^51.2; a block holding one of them
// among small codes, and blocks of wide codes only, must stay within the bound.
TEST(Quantize, DoubleCodesBeyondTwoToTheFiftyOne) {
  std::vector<double> v(3 * 2048 + 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1e-11 * std::sin(i * 0.37);
  v[2048 + 5] = 5234.5678901234;  // second block: one wide code
  for (size_t i = 2 * 2048; i < v.size(); ++i) v[i] = 5000.0 + std::sin(i * 0.1);  // third block on: wide
  Config c;
  c.width = 8;
  c.mode = Mode::kAbs;
  c.bound = 1e-12;
  Streams s;
  const Bytes in = as_bytes(v);
  const Bytes out = round_trip(in, c, &s);
  EXPECT_EQ(violations<double>(in, out, c), 0u);
  size_t wide = 0;
  for (size_t i = 0; i < v.size(); ++i) wide += load_le<uint64_t>(s.codes.data() + 8 * i) - 1 >= (uint64_t{1} << 52);
  EXPECT_GT(wide, 1000u) << "the test must reach codes with |b| >= 2^51";
  EXPECT_GT(load_le<uint64_t>(s.codes.data() + 8 * (2048 + 5)), uint64_t{1} << 52) << "the lone wide code";
}

// A code out of range is refused wherever it sits: inside the vector loop or in
// the scalar tail of a block (n % 4 != 0 for float, odd n for double).
TEST(QuantizeHostile, CodeOutOfRangeAnywhere) {
  for (bool optional_isa : {true, false}) {
  set_optional_isa_for_testing(optional_isa);
  auto check = [](auto zero, unsigned width, size_t n, uint64_t bad_code) {
    using T = decltype(zero);
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(i * 0.01));
    Config c;
    c.width = width;
    c.bound = 1e-3;
    Streams s;
    quantize::encode(as_bytes(v), c, s);
    ASSERT_EQ(s.outliers.size(), 0u);
    for (size_t at : {size_t{0}, size_t{1}, n / 2, n - 2, n - 1}) {
      Bytes codes = s.codes;
      if (width == 4)
        store_le<uint32_t>(codes.data() + 4 * at, static_cast<uint32_t>(bad_code));
      else
        store_le<uint64_t>(codes.data() + 8 * at, bad_code);
      Bytes out;
      EXPECT_THROW(quantize::decode(codes, s.outliers, s.params, out, SIZE_MAX), FormatError)
          << "width " << width << " n " << n << " at " << at;
    }
  };
  for (size_t n : {size_t{7}, size_t{4097}, size_t{4099}}) check(float{}, 4, n, uint64_t{1} << 30 | 1);
  for (size_t n : {size_t{7}, size_t{2049}, size_t{4099}}) check(double{}, 8, n, (uint64_t{1} << 62) | 1);
  }
  set_optional_isa_for_testing(true);
}

// Blockwise decoding (a fused chain hands over one block of codes at a time,
// in any order) gives decode()'s bytes, and refuses what decode() refuses.
TEST(Quantize, BlockwiseDecoderMatchesDecode) {
  auto check = [](const Bytes& in, unsigned width, Mode mode, double bound, const std::string& what) {
    Config c;
    c.width = width;
    c.mode = mode;
    c.bound = bound;
    Streams s;
    quantize::encode(in, c, s);
    if (!quantize::BlockwiseDecoder::is_blockwise(s.params)) return false;
    Bytes whole;
    quantize::decode(s.codes, s.outliers, s.params, whole, in.size());
    quantize::BlockwiseDecoder decoder(s.outliers, s.params, s.codes.size());
    EXPECT_EQ(decoder.decoded_bytes(), whole.size()) << what;
    Bytes out(decoder.decoded_bytes(), 0xA5);
    const size_t blocks = (s.codes.size() + 16383) / 16384;
    for (size_t k = blocks; k-- > 0;) decoder.consume(k, s.codes.data() + k * 16384, out.data());  // backwards
    decoder.finish(out.data());
    EXPECT_TRUE(out == whole) << what;
    return true;
  };
  size_t checked = 0;
  for (size_t n : {size_t{1}, size_t{7}, size_t{4096}, size_t{4097}, size_t{100000}}) {
    checked += check(as_bytes(adversarial<float>(n, 3)), 4, Mode::kAbs, 1e-2, "f32 adversarial " + std::to_string(n));
    checked += check(as_bytes(adversarial<double>(n, 4)), 8, Mode::kAbs, 1e-3, "f64 adversarial " + std::to_string(n));
  }
  EXPECT_EQ(checked, 10u);
  // Hostile: a code out of range, one outlier too few.
  Config c;
  c.bound = 1e-2;
  Streams s;
  const Bytes in = as_bytes(adversarial<float>(10000, 9));
  quantize::encode(in, c, s);
  ASSERT_GT(s.outliers.size(), 4u);
  auto run = [&](const Bytes& codes, const Bytes& outliers) {
    quantize::BlockwiseDecoder decoder(outliers, s.params, codes.size());
    Bytes out(decoder.decoded_bytes());
    for (size_t k = 0; k * 16384 < codes.size(); ++k) decoder.consume(k, codes.data() + k * 16384, out.data());
    decoder.finish(out.data());
  };
  Bytes bad_codes = s.codes;
  for (size_t i = 0; i < bad_codes.size() / 4; ++i)
    if (load_le<uint32_t>(bad_codes.data() + 4 * i) != 0) {
      store_le<uint32_t>(bad_codes.data() + 4 * i, 0x80000000u);
      break;
    }
  EXPECT_THROW(run(bad_codes, s.outliers), FormatError);
  EXPECT_THROW(run(s.codes, Bytes(s.outliers.begin(), s.outliers.end() - 4)), FormatError);
  EXPECT_THROW(quantize::BlockwiseDecoder(s.outliers, s.params, s.codes.size() - 4), FormatError);
}

// The AVX2 decoding loops (chosen at run time) and the SSE2 ones give the same
// bytes, out-of-range codes are refused by both, and wide double codes take
// the general path in both.
TEST(Quantize, OptionalInstructionSetsGiveTheSameValues) {
  std::vector<std::pair<Bytes, unsigned>> inputs = {
      {as_bytes(adversarial<float>(100003, 11)), 4}, {as_bytes(adversarial<double>(50001, 12)), 8},
      {testing::read_field("wmag91.float"), 4}, {float_field_as_double(testing::read_field("999x999.float")), 8}};
  {  // wide double codes in one block, small ones elsewhere
    std::vector<double> v(3 * 2048 + 3);
    for (size_t i = 0; i < v.size(); ++i) v[i] = i < 2048 ? 1e-11 * std::sin(i * 0.37) : 5000.0 + std::sin(i * 0.1);
    inputs.push_back({as_bytes(v), 8});
  }
  for (const auto& [in, width] : inputs) {
    for (double bound : {1e-2, 1e-4, 1e-12}) {
      Config c;
      c.width = width;
      c.mode = Mode::kAbs;
      c.bound = bound;
      Streams s;
      quantize::encode(in, c, s);
      Bytes fast, baseline;
      set_optional_isa_for_testing(true);
      quantize::decode(s.codes, s.outliers, s.params, fast, in.size());
      set_optional_isa_for_testing(false);
      quantize::decode(s.codes, s.outliers, s.params, baseline, in.size());
      set_optional_isa_for_testing(true);
      EXPECT_TRUE(fast == baseline) << "width " << width << " bound " << bound;
    }
  }
}

TEST(QuantizeHostile, BadConfigIsUsageError) {
  Streams s;
  const Bytes in(8, 0);
  Config c;
  c.bound = 1;
  c.width = 2;
  EXPECT_THROW(quantize::encode(in, c, s), UsageError);
  c.width = 4;
  for (double eb : {0.0, -1.0, double(NAN), double(INFINITY)}) {
    c.bound = eb;
    EXPECT_THROW(quantize::encode(in, c, s), UsageError);
  }
  c.bound = 1;
  EXPECT_THROW(quantize::encode(Bytes(7, 0), c, s), UsageError);
  c.fill = uint64_t{1} << 40;
  EXPECT_THROW(quantize::encode(in, c, s), UsageError);
}

// ---- floating-point state -----------------------------------------------------

#if defined(__x86_64__)
TEST(Quantize, IgnoresAndRestoresFlushToZero) {
  const Bytes in = as_bytes(adversarial<float>(20000, 11));
  Config c;
  c.bound = 1e-6;
  Streams clean, dirty;
  quantize::encode(in, c, clean);
  const unsigned saved = _mm_getcsr();
  const unsigned ftz_daz_up = (saved | 0x8040u | 0x6000u);  // FTZ, DAZ, round toward zero
  _mm_setcsr(ftz_daz_up);
  quantize::encode(in, c, dirty);
  Bytes out;
  quantize::decode(dirty.codes, dirty.outliers, dirty.params, out, in.size());
  const unsigned after = _mm_getcsr() & ~0x3Fu;  // ignore sticky flags
  _mm_setcsr(saved);
  EXPECT_EQ(after, ftz_daz_up & ~0x3Fu);
  EXPECT_EQ(clean.codes, dirty.codes);
  EXPECT_EQ(clean.outliers, dirty.outliers);
  EXPECT_EQ(violations<float>(in, out, c), 0u);
}
#endif

// ---- ratio sanity ------------------------------------------------------------

TEST(Quantize, Wmag91Noa1e3MostlyCodes) {
  const Bytes in = testing::read_field("wmag91.float");
  Config c;
  c.mode = Mode::kNoa;
  c.bound = 1e-3;
  Streams s;
  quantize::encode(in, c, s);
  const size_t n = in.size() / 4, outliers = s.outliers.size() / 4;
  EXPECT_LT(outliers * 100, n) << outliers << " of " << n;
  Bytes d, b, r;
  diffnb::encode(s.codes, 4, d);
  bitshuffle::encode(d, 4, b);
  rze::encode(b, 4, r);
  std::printf("wmag91 NOA 1e-3: %zu outliers of %zu; codes %zu -> diffnb+bitshuffle+rze %zu bytes "
              "(ratio %.2f with outliers and params)\n",
              outliers, n, s.codes.size(), r.size(),
              double(in.size()) / double(r.size() + s.outliers.size() + s.params.size()));
}

}  // namespace
}  // namespace fz
