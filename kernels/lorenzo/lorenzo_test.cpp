#include "lorenzo/lorenzo.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>

#include "bitshuffle/bitshuffle.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"
#include "diffnb/diffnb.hpp"
#include "lorenzo/lorenzo_rules.hpp"
#include "rze/rze.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace fz {
namespace {

using Dims = std::vector<size_t>;

template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
BitsOf<T> bits_of(T x) {
  BitsOf<T> b;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

template <typename T>
T from_bits(BitsOf<T> b) {
  T x;
  std::memcpy(&x, &b, sizeof(T));
  return x;
}

template <typename T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
std::vector<T> from_bytes(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

// The working bound the engine derives: the user's double rounded toward zero in T.
template <typename T>
double working_bound(double user) {
  T eb = static_cast<T>(user);
  if (static_cast<double>(eb) > user) eb = std::nextafter(eb, T(0));
  return static_cast<double>(eb);
}

// Independent exact check: binary128 holds the difference of two doubles exactly
// whenever it is anywhere near the bound.
template <typename T>
bool exactly_within(T x, T y, double bound) {
  __float128 d = static_cast<__float128>(x) - static_cast<__float128>(y);
  if (d < 0) d = -d;
  return d <= static_cast<__float128>(bound);
}

template <typename T>
bool must_be_exact(T x, bool has_fill, BitsOf<T> fill) {
  const BitsOf<T> b = bits_of(x);
  if (has_fill && b == fill) return true;
  if (!std::isfinite(x)) return true;
  if (x != 0 && std::fpclassify(x) == FP_SUBNORMAL) return true;
  return x == 0 && std::signbit(x);  // -0
}

struct Outcome {
  size_t violations = 0;
  size_t outliers = 0;
  lorenzo::Streams streams;
};

template <typename T>
lorenzo::Config make_config(double user_bound, uint32_t radius, bool has_fill = false, BitsOf<T> fill = 0) {
  lorenzo::Config c;
  c.width = sizeof(T);
  c.eb = working_bound<T>(user_bound);
  c.radius = radius;
  c.has_fill = has_fill;
  c.fill_bits = fill;
  return c;
}

template <typename T>
Outcome round_trip(const std::vector<T>& x, const Dims& dims, double user_bound, uint32_t radius = 32768,
                   bool has_fill = false, BitsOf<T> fill = 0, const Executor& exec = serial_executor()) {
  Outcome o;
  const lorenzo::Config c = make_config<T>(user_bound, radius, has_fill, fill);
  lorenzo::encode(to_bytes(x), dims, c, user_bound, o.streams, exec);
  Bytes out;
  lorenzo::decode(o.streams.codes, o.streams.outliers, dims, c, out, exec);
  // decode_into (the engine's path for the last stage) writes the same bytes
  // into a caller's buffer, whatever it held before.
  Bytes into(x.size() * sizeof(T), 0xA5);
  lorenzo::decode_into(o.streams.codes, o.streams.outliers, dims, c, into.data(), exec);
  EXPECT_EQ(into, out);
  const std::vector<T> y = from_bytes<T>(out);
  EXPECT_EQ(y.size(), x.size());
  if (y.size() != x.size()) return o;
  for (size_t i = 0; i < x.size(); ++i) {
    bool ok;
    if (must_be_exact(x[i], has_fill, fill)) ok = bits_of(x[i]) == bits_of(y[i]);
    else ok = std::isfinite(y[i]) && exactly_within(x[i], y[i], user_bound);
    if (!ok) {
      if (o.violations < 5)
        ADD_FAILURE() << "element " << i << ": " << x[i] << " -> " << y[i] << " bound " << user_bound;
      ++o.violations;
    }
  }
  o.outliers = load_le<uint64_t>(o.streams.outliers.data());
  return o;
}

// ---- real fields -------------------------------------------------------------

using testing::RealField;
using testing::real_fields;

template <typename T>
double finite_range(const std::vector<T>& v) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (T x : v)
    if (std::isfinite(x)) {
      lo = std::min(lo, static_cast<double>(x));
      hi = std::max(hi, static_cast<double>(x));
    }
  return hi > lo ? hi - lo : 0;
}

template <typename T>
void sweep_fields() {
  for (const RealField& f : real_fields()) {
    if (f.f64 && sizeof(T) == 4) continue;  // narrowing the f64 field would change the data
    const std::vector<T> v = testing::field_values<T>(f);
    const double range = finite_range(v);
    size_t total_violations = 0;
    for (double noa : {1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
      const double bound = range > 0 ? noa * range : noa;
      for (uint32_t radius : {32768u, 512u}) {
        const Outcome o = round_trip(v, f.dims, bound, radius);
        total_violations += o.violations;
      }
    }
    // The same field folded to 1-D and (where 3-D) to 2-D.
    const double bound = range > 0 ? 1e-3 * range : 1e-3;
    total_violations += round_trip(v, {v.size()}, bound).violations;
    if (f.dims.size() == 3) total_violations += round_trip(v, {f.dims[0] * f.dims[1], f.dims[2]}, bound).violations;
    EXPECT_EQ(total_violations, 0u) << f.name;
  }
}

TEST(Lorenzo, RealFieldsFloat32WithinBound) { sweep_fields<float>(); }
TEST(Lorenzo, RealFieldsFloat64WithinBound) { sweep_fields<double>(); }

// ---- synthetic, adversarial ---------------------------------------------------

const std::vector<Dims>& synthetic_dims() {
  static const std::vector<Dims> list = {{1},        {7},        {1000},        {100003},     {1, 1},
                                         {33, 17},   {3, 40000}, {40000, 3},    {1, 1, 1},    {5, 1, 9},
                                         {13, 11, 7}, {2, 3, 5500}, {9, 1, 1}, {0}, {4, 0, 3}};
  return list;
}

size_t product(const Dims& d) {
  size_t n = 1;
  for (size_t e : d) n *= e;
  return n;
}

enum class Pattern { Smooth, Spikes, Steps, Noise, Specials, NearMax, Constant, Zeros, Fill };

template <typename T>
std::vector<T> synthetic(Pattern pattern, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<T> v(n);
  const T big = std::numeric_limits<T>::max();
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i);
    switch (pattern) {
      case Pattern::Smooth: v[i] = static_cast<T>(100 * std::sin(t * 0.001) + 3 * std::cos(t * 0.07)); break;
      case Pattern::Spikes: v[i] = static_cast<T>(i % 97 == 3 ? 1e6 * unit(rng) : std::sin(t * 0.01)); break;
      case Pattern::Steps: v[i] = static_cast<T>(((i / 50) % 7) * 1000.0 - 2500.0); break;
      case Pattern::Noise: v[i] = static_cast<T>(unit(rng) * 1e3); break;
      case Pattern::Specials: {
        const int pick = static_cast<int>(rng() % 12);
        const T normal = static_cast<T>(unit(rng) * 10);
        const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                              -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::denorm_min(),
                              -std::numeric_limits<T>::denorm_min() * 77, T(-0.0), T(0.0),
                              from_bits<T>(static_cast<BitsOf<T>>(~BitsOf<T>{0})),  // negative NaN, all payload bits
                              std::numeric_limits<T>::min(), -std::numeric_limits<T>::min()};
        v[i] = pick < 10 ? specials[pick] : normal;
        break;
      }
      case Pattern::NearMax: v[i] = static_cast<T>(big * (0.9 + 0.1 * unit(rng))) * (rng() % 2 ? 1 : -1); break;
      case Pattern::Constant: v[i] = static_cast<T>(3.14159); break;
      case Pattern::Zeros: v[i] = T(0); break;
      case Pattern::Fill: v[i] = (i / 40) % 3 == 0 ? static_cast<T>(-1e34) : static_cast<T>(std::sin(t * 0.02)); break;
    }
  }
  return v;
}

template <typename T>
void sweep_synthetic() {
  const Pattern patterns[] = {Pattern::Smooth, Pattern::Spikes, Pattern::Steps,    Pattern::Noise, Pattern::Specials,
                              Pattern::NearMax, Pattern::Constant, Pattern::Zeros, Pattern::Fill};
  std::vector<double> bounds = {1e30, 1e6, 1.0, 1e-2, 1e-6, 1e-20, 1e-35, 4.0 * std::numeric_limits<float>::min()};
  if (sizeof(T) == 8) {
    bounds.push_back(1e300);
    bounds.push_back(1e-300);
    bounds.push_back(4.0 * std::numeric_limits<double>::min());
  }
  size_t violations = 0, runs = 0;
  for (const Dims& dims : synthetic_dims()) {
    const size_t n = product(dims);
    for (Pattern pattern : patterns) {
      const std::vector<T> v = synthetic<T>(pattern, n, n * 31 + static_cast<int>(pattern));
      const bool fill = pattern == Pattern::Fill;
      const BitsOf<T> fill_bits = bits_of(static_cast<T>(-1e34));
      for (double bound : bounds) {
        if (n > 50000 && bound != 1e-2 && bound != 1e-6 && bound != 1e30) continue;  // keep the run short
        for (uint32_t radius : {32768u, 512u, 1u}) {
          if (n > 50000 && radius == 1) continue;
          violations += round_trip(v, dims, bound, radius, fill, fill_bits).violations;
          ++runs;
        }
      }
    }
  }
  EXPECT_EQ(violations, 0u) << runs << " runs";
}

TEST(Lorenzo, SyntheticFloat32WithinBoundAndSpecialsExact) { sweep_synthetic<float>(); }
TEST(Lorenzo, SyntheticFloat64WithinBoundAndSpecialsExact) { sweep_synthetic<double>(); }

TEST(Lorenzo, FillValueNaNAndZeroAreStoredExactly) {
  // Fill values that are themselves special or ordinary values.
  const std::vector<float> v = synthetic<float>(Pattern::Specials, 5000, 7);
  for (float fill : {std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f, 1.0f})
    EXPECT_EQ(round_trip(v, {50, 100}, 1e-3, 32768, true, bits_of(fill)).violations, 0u);
}

TEST(Lorenzo, ExtremeBoundsOnLargeValues) {
  // Bounds far below the spacing of the data: every element fails the check and
  // is stored raw; far above: everything quantizes to 0 or a few levels.
  const std::vector<double> v = synthetic<double>(Pattern::NearMax, 3000, 3);
  EXPECT_EQ(round_trip(v, {3000}, 1e-300).violations, 0u);
  EXPECT_EQ(round_trip(v, {3000}, 1e300).violations, 0u);
  const std::vector<float> f = synthetic<float>(Pattern::NearMax, 3000, 4);
  EXPECT_EQ(round_trip(f, {30, 100}, 1e-30).violations, 0u);
  EXPECT_EQ(round_trip(f, {30, 100}, 1e37).violations, 0u);
}

// ---- determinism ---------------------------------------------------------------

template <typename T>
void expect_same_bytes_any_threads(const std::vector<T>& v, const Dims& dims, double bound, uint32_t radius) {
  const lorenzo::Config c = make_config<T>(bound, radius);
  lorenzo::Streams serial, threaded;
  lorenzo::encode(to_bytes(v), dims, c, bound, serial);
  const testing::ThreadExecutor four(4);
  lorenzo::encode(to_bytes(v), dims, c, bound, threaded, four);
  EXPECT_EQ(serial.codes, threaded.codes);
  EXPECT_EQ(serial.outliers, threaded.outliers);
  Bytes a, b;
  lorenzo::decode(serial.codes, serial.outliers, dims, c, a);
  lorenzo::decode(serial.codes, serial.outliers, dims, c, b, four);
  EXPECT_EQ(a, b);
}

// The encoder gives up (NotSmallerError) exactly when the outliers stream
// would reach the limit, on any thread count: one byte above the stream's
// length it finishes with the same bytes, at the length it gives up. Noise
// under a tight bound makes almost every element an outlier, in many blocks.
TEST(Lorenzo, GivesUpExactlyWhenTheOutliersReachTheLimit) {
  std::vector<float> v(3 * 32768 + 1000);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> noise(1.0f, 2.0f);
  for (float& x : v) x = noise(rng);
  v[5] = std::numeric_limits<float>::quiet_NaN();  // a raw value among them
  const Dims dims = {v.size()};
  const lorenzo::Config c = make_config<float>(1e-4, 512);
  lorenzo::Streams unlimited;
  lorenzo::encode(to_bytes(v), dims, c, 1e-4, unlimited);
  const size_t length = unlimited.outliers.size();
  ASSERT_GT(length, v.size() * 4);  // the outliers alone outweigh the chunk
  const testing::ThreadExecutor three(3);
  for (const Executor* exec : {&serial_executor(), static_cast<const Executor*>(&three)}) {
    lorenzo::Streams enough;
    lorenzo::encode(to_bytes(v), dims, c, 1e-4, enough, *exec, length + 1);
    EXPECT_EQ(enough.outliers, unlimited.outliers);
    EXPECT_EQ(enough.codes, unlimited.codes);
    lorenzo::Streams short_of;
    EXPECT_THROW(lorenzo::encode(to_bytes(v), dims, c, 1e-4, short_of, *exec, length), NotSmallerError);
    EXPECT_THROW(lorenzo::encode(to_bytes(v), dims, c, 1e-4, short_of, *exec, v.size() * 4), NotSmallerError);
  }
}

TEST(Lorenzo, SameBytesWithAnyThreadCount) {
  const RealField& wmag = real_fields()[0];
  const std::vector<float> v = testing::field_values<float>(wmag);
  expect_same_bytes_any_threads(v, wmag.dims, 1e-3 * finite_range(v), 512);
  expect_same_bytes_any_threads(v, {v.size()}, 1e-4 * finite_range(v), 32768);
  for (const Dims& dims : synthetic_dims()) {
    const size_t n = product(dims);
    expect_same_bytes_any_threads(synthetic<float>(Pattern::Specials, n, 5), dims, 1e-2, 512);
    expect_same_bytes_any_threads(synthetic<double>(Pattern::Spikes, n, 6), dims, 1e-3, 32768);
  }
}

// The decoder cuts the slowest axis with extent > 1 into one slab per thread
// (at least 2^14 elements each) and adds the earlier slabs' sums in a second
// pass; these shapes put the cuts at odd places, and the slab boundaries (the
// decoder's formula, for 2..7 slabs) get specials and outliers on both sides.
std::vector<size_t> slab_boundaries(size_t units, size_t unit) {
  std::vector<size_t> at;
  for (size_t slabs = 2; slabs <= 7; ++slabs)
    for (size_t k = 1; k < slabs && k < units; ++k) at.push_back(((units / slabs) * k + std::min(k, units % slabs)) * unit);
  return at;
}

template <typename T>
void expect_slab_grid_invisible(const Dims& dims, uint32_t radius) {
  const size_t n = product(dims);
  size_t ext[3] = {1, 1, 1};
  std::copy(dims.begin(), dims.end(), ext + (3 - dims.size()));
  const size_t unit = ext[0] > 1 ? ext[1] * ext[2] : ext[1] > 1 ? ext[2] : 1;
  const size_t units = n / unit;
  std::vector<T> v = synthetic<T>(Pattern::Smooth, n, static_cast<int>(n % 1000));
  size_t k = 0;
  for (size_t b : slab_boundaries(units, unit)) {
    for (size_t i : {b - 1, b, b + 1}) {
      if (i >= n) continue;
      switch (k++ % 4) {
        case 0: v[i] = std::numeric_limits<T>::quiet_NaN(); break;
        case 1: v[i] = static_cast<T>(1e4); break;  // outliers here and at the neighbours
        case 2: v[i] = static_cast<T>(-0.0); break;
        default: v[i] = static_cast<T>(-1e4); break;
      }
    }
  }
  const double bound = 1e-3;
  const lorenzo::Config c = make_config<T>(bound, radius);
  const Outcome serial = round_trip(v, dims, bound, radius);
  EXPECT_EQ(serial.violations, 0u);
  if (units > 1) {
    EXPECT_GT(serial.outliers, 0u);
  }
  Bytes expected;
  lorenzo::decode(serial.streams.codes, serial.streams.outliers, dims, c, expected);
  for (unsigned threads : {2u, 3u, 4u, 7u}) {
    const testing::ThreadExecutor exec(threads);
    lorenzo::Streams s;
    lorenzo::encode(to_bytes(v), dims, c, bound, s, exec);
    EXPECT_EQ(s.codes, serial.streams.codes) << threads;
    EXPECT_EQ(s.outliers, serial.streams.outliers) << threads;
    Bytes out;
    lorenzo::decode(serial.streams.codes, serial.streams.outliers, dims, c, out, exec);
    EXPECT_EQ(out, expected) << threads << " threads, dims[0] " << dims[0];
  }
}

// ---- against a reference encoder ----------------------------------------------

// The encoder as lorenzo.hpp describes it, one element at a time with no fast
// paths: prequantization (round half away from zero of x * inv, then q, q - 1,
// q + 1 with an exact check), Lorenzo deltas straight from the definition,
// codes, records. The library's vector paths must give the same bytes.
template <typename T>
lorenzo::Streams reference_encode(const std::vector<T>& x, const Dims& dims, const lorenzo::Config& c,
                                  double user_bound) {
  using U = BitsOf<T>;
  using I = std::make_signed_t<U>;
  constexpr unsigned kMantissa = sizeof(T) == 4 ? 23 : 52;
  constexpr U kExponentMask = sizeof(T) == 4 ? 0xFF : 0x7FF;
  constexpr I kPMax = I{1} << (kMantissa + 1);
  const T eb2 = static_cast<T>(c.eb) * 2;
  const T inv = static_cast<T>(1) / eb2;
  const size_t n = x.size();
  std::vector<U> p(n, 0);
  std::vector<uint8_t> value(n, 0);  // 0 quantized, 1 raw, 2 fill, 3 -0
  for (size_t i = 0; i < n; ++i) {
    const U bits = bits_of(x[i]);
    const U exponent = (bits >> kMantissa) & kExponentMask;
    if (c.has_fill && bits == static_cast<U>(c.fill_bits)) {
      value[i] = 2;
    } else if (exponent == kExponentMask || (exponent == 0 && (bits & ((U{1} << kMantissa) - 1)) != 0)) {
      value[i] = 1;  // NaN, +-Inf, denormal
    } else if (exponent == 0) {
      value[i] = bits == 0 ? 0 : 3;
    } else {
      const T s = x[i] * inv;
      const T a = std::fabs(s);
      value[i] = 1;
      if (a < static_cast<T>(kPMax)) {
        const T r = std::round(a);  // half away from zero (exact for these a)
        const I q = static_cast<I>(s < 0 ? -r : r);
        for (I cand : {q, q - 1, q + 1}) {
          if (cand > kPMax || cand < -kPMax) continue;
          const T y = static_cast<T>(cand) * eb2;
          if (exactly_within(x[i], y, user_bound)) {
            p[i] = static_cast<U>(cand);
            value[i] = 0;
            break;
          }
        }
      }
    }
  }
  size_t ext[3] = {1, 1, 1};
  std::copy(dims.begin(), dims.end(), ext + (3 - dims.size()));
  const size_t nz = ext[0], ny = ext[1], nx = ext[2];
  auto at = [&](size_t z, size_t y, size_t xx, int dz, int dy, int dx) -> U {
    if ((dz && z == 0) || (dy && y == 0) || (dx && xx == 0)) return 0;
    return p[((z - dz) * ny + (y - dy)) * nx + (xx - dx)];
  };
  lorenzo::Streams out;
  out.codes.assign(2 * n, 0);
  Bytes indices, kinds, deltas, raws;
  size_t count = 0, with_delta = 0, with_raw = 0;
  const U code_limit = static_cast<U>(2 * c.radius);
  for (size_t z = 0; z < nz; ++z)
    for (size_t y = 0; y < ny; ++y)
      for (size_t xx = 0; xx < nx; ++xx) {
        const size_t i = (z * ny + y) * nx + xx;
        // inclusion-exclusion over the 7 earlier corners of the unit cube
        U pred = 0;
        for (int m = 1; m < 8; ++m) {
          const U v = at(z, y, xx, m >> 2 & 1, m >> 1 & 1, m & 1);
          pred = static_cast<U>(__builtin_popcount(static_cast<unsigned>(m)) % 2 ? pred + v : pred - v);
        }
        const U d = static_cast<U>(p[i] - pred);
        const U zz = static_cast<U>((d << 1) ^ (U{0} - (d >> (8 * sizeof(U) - 1))));
        const bool fits = zz < code_limit;
        store_le<uint16_t>(out.codes.data() + 2 * i, fits ? static_cast<uint16_t>(zz) : uint16_t{0});
        if (fits && value[i] == 0) continue;
        ++count;
        if (n <= (uint64_t{1} << 32)) append_le<uint32_t>(indices, static_cast<uint32_t>(i));
        else append_le<uint64_t>(indices, i);
        kinds.push_back(static_cast<uint8_t>(value[i] | (fits ? 0 : 4)));
        if (!fits) {
          append_le<U>(deltas, d);
          ++with_delta;
        }
        if (value[i] == 1) {
          append_le<U>(raws, bits_of(x[i]));
          ++with_raw;
        }
      }
  append_le<uint64_t>(out.outliers, count);
  append_le<uint64_t>(out.outliers, with_delta);
  append_le<uint64_t>(out.outliers, with_raw);
  for (const Bytes* part : {&indices, &kinds, &deltas, &raws})
    out.outliers.insert(out.outliers.end(), part->begin(), part->end());
  return out;
}

// Values that sit on the decisions of the prequantization: specials, the fill
// value, +-0, denormals, the first normals, half-way points of eb2 (ties), the
// 2^51 / 2^52 / PMAX limits of |x * inv|, huge values, and smooth runs (so that
// the deltas fit the codes) with spikes (so that they do not).
template <typename T>
std::vector<T> adversarial(size_t n, T eb2, T fill, std::mt19937_64& rng) {
  using U = BitsOf<T>;
  constexpr int kDigits = std::numeric_limits<T>::digits;  // 24 / 53
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<T> v(n);
  const double base = unit(rng) * 1e3;
  const double slope = unit(rng) * 10;
  const int mode = static_cast<int>(rng() % 4);  // how often an element is odd
  for (size_t i = 0; i < n; ++i) {
    const double smooth = (base + slope * std::sin(static_cast<double>(i) * 0.05)) * static_cast<double>(eb2);
    v[i] = static_cast<T>(smooth);
    const unsigned odds = mode == 0 ? 2 : mode == 1 ? 8 : mode == 2 ? 64 : 1000;
    if (rng() % odds != 0) continue;
    const double k = std::ldexp(1.0, static_cast<int>(rng() % (kDigits + 2)));  // 1 .. 2^(digits+1)
    const double sign = rng() % 2 ? 1.0 : -1.0;
    switch (rng() % 16) {
      case 0: v[i] = std::numeric_limits<T>::quiet_NaN(); break;
      case 1: v[i] = from_bits<T>(static_cast<U>(rng())); break;  // any bits
      case 2: v[i] = static_cast<T>(sign * std::numeric_limits<T>::infinity()); break;
      case 3: v[i] = rng() % 2 ? T(0) : T(-0.0); break;
      case 4: v[i] = static_cast<T>(sign) * std::numeric_limits<T>::denorm_min() * static_cast<T>(rng() % 1000 + 1); break;
      case 5: v[i] = static_cast<T>(sign) * std::numeric_limits<T>::min() * static_cast<T>(rng() % 4 + 1); break;
      case 6: v[i] = fill; break;
      case 7: v[i] = static_cast<T>(sign * (std::floor(k * (unit(rng) + 1)) + 0.5)) * eb2; break;  // ties
      case 8: v[i] = static_cast<T>(sign * (k + static_cast<double>(static_cast<int>(rng() % 7) - 3))) * eb2; break;
      case 9: v[i] = std::nextafter(static_cast<T>(sign * k) * eb2, static_cast<T>(rng() % 2 ? 0 : 1e30)); break;
      case 10: v[i] = static_cast<T>(sign * unit(rng)) * std::numeric_limits<T>::max(); break;
      case 11: v[i] = static_cast<T>(smooth + sign * k * static_cast<double>(eb2)); break;  // spike
      case 12: v[i] = static_cast<T>(sign * std::ldexp(1.0, kDigits - 2 + static_cast<int>(rng() % 4)) *
                                     (1 + unit(rng) * 1e-3)) * eb2; break;  // around 2^51 .. 2^54 (2^22 .. for float)
      case 13: v[i] = static_cast<T>((std::round(smooth / static_cast<double>(eb2)) + 0.5) * static_cast<double>(eb2)); break;
      case 14: v[i] = from_bits<T>(bits_of(v[i]) ^ static_cast<U>(1 + rng() % 3)); break;  // a few ulps
      default: v[i] = static_cast<T>(unit(rng) * std::pow(10.0, static_cast<double>(rng() % 40) - 20)); break;
    }
  }
  return v;
}

template <typename T>
void expect_reference_bytes(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  const testing::ThreadExecutor three(3);
  for (int run = 0; run < 120; ++run) {
    Dims dims;
    const int rank = static_cast<int>(rng() % 3) + 1;
    const size_t budget = run % 10 == 0 ? 70001 : 1 + rng() % 3000;
    for (int r = 0; r < rank; ++r) dims.push_back(1 + rng() % (r + 1 == rank ? budget : 40));
    if (product(dims) > 200000) dims.back() = std::max<size_t>(1, 200000 / (product(dims) / dims.back()));
    const size_t n = product(dims);
    // user bound from tiny to huge; eb the working bound, or a power of two below it (exact inv)
    const double user_bound = std::pow(10.0, unit(rng) * (sizeof(T) == 4 ? 60 : 400) - (sizeof(T) == 4 ? 35 : 200));
    lorenzo::Config c = make_config<T>(user_bound, static_cast<uint32_t>(std::ldexp(1.0, 2 + static_cast<int>(rng() % 14))));
    if (rng() % 3 == 0) c.radius = static_cast<uint32_t>(4 + rng() % 32765);
    if (rng() % 2) {
      const double pow2 = std::ldexp(1.0, std::ilogb(c.eb));
      if (pow2 >= static_cast<double>(std::numeric_limits<T>::min())) c.eb = pow2;
    }
    const T eb2 = static_cast<T>(c.eb) * 2;
    const T fill = rng() % 2 ? static_cast<T>(-9.96921e36) : from_bits<T>(static_cast<BitsOf<T>>(rng()));
    c.has_fill = rng() % 2;
    c.fill_bits = c.has_fill ? bits_of(fill) : 0;
    const std::vector<T> v = adversarial<T>(n, eb2, fill, rng);
    const lorenzo::Streams expected = reference_encode(v, dims, c, user_bound);
    lorenzo::Streams got;
    lorenzo::encode(to_bytes(v), dims, c, user_bound, got, run % 2 ? three : serial_executor());
    const bool same = got.codes == expected.codes && got.outliers == expected.outliers;
    EXPECT_TRUE(same) << "run " << run << " n " << n << " rank " << rank << " eb " << c.eb << " R " << c.radius;
    if (!same) return;
  }
}

TEST(Lorenzo, SameBytesAsReferenceEncoderFloat32) {
  for (uint64_t seed : {1u, 2u, 3u}) expect_reference_bytes<float>(seed);
}
TEST(Lorenzo, SameBytesAsReferenceEncoderFloat64) {
  for (uint64_t seed : {1u, 2u, 3u}) expect_reference_bytes<double>(seed);
}

TEST(Lorenzo, SlabGridDoesNotChangeTheResult) {
  const std::vector<Dims> shapes = {{3, 1, 70000}, {2, 40000},   {40000, 2},   {200003},    {70001, 1, 1},
                                    {1, 70001, 1}, {9, 90, 91},  {1, 300, 301}, {5, 1, 9},  {1, 1, 1},
                                    {1},           {17, 3, 2049}, {2, 2, 20000}, {33000, 1}};
  for (const Dims& dims : shapes) {
    expect_slab_grid_invisible<float>(dims, 512);
    expect_slab_grid_invisible<float>(dims, 1);
    expect_slab_grid_invisible<double>(dims, 32768);
  }
}

// Hand-made 1-D stream: all codes 0, stored deltas of 2^23 at the given indices,
// so p climbs by 2^23 at each; the last slabs see it only through their carry.
Bytes climbing_outliers(const std::vector<uint32_t>& at) {
  Bytes o;
  append_le<uint64_t>(o, at.size());
  append_le<uint64_t>(o, at.size());
  append_le<uint64_t>(o, 0);
  for (uint32_t i : at) append_le<uint32_t>(o, i);
  for (size_t r = 0; r < at.size(); ++r) o.push_back(4);
  for (size_t r = 0; r < at.size(); ++r) append_le<int32_t>(o, int32_t{1} << 23);
  return o;
}

TEST(Lorenzo, RangeCheckedAfterTheCarry) {
  const size_t n = 100000;
  const Bytes codes(2 * n, 0);
  lorenzo::Config c;
  c.eb = 0.5;
  c.radius = 512;
  const testing::ThreadExecutor four(4);
  // p reaches 2^24 = PMAX exactly: accepted, and the same with any slab grid.
  const Bytes at_limit = climbing_outliers({0, 30000});
  Bytes serial, threaded;
  lorenzo::decode(codes, at_limit, {n}, c, serial);
  lorenzo::decode(codes, at_limit, {n}, c, threaded, four);
  EXPECT_EQ(serial, threaded);
  EXPECT_EQ(from_bytes<float>(serial).back(), 16777216.0f);
  // 1.5 * 2^24 from index 60000 on: slab 3 of 4 starts at 75000 with local sums of
  // zero, so only its carry brings it out of range.
  const Bytes beyond = climbing_outliers({0, 30000, 60000});
  Bytes out;
  EXPECT_THROW(lorenzo::decode(codes, beyond, {n}, c, out), FormatError);
  EXPECT_THROW(lorenzo::decode(codes, beyond, {n}, c, out, four), FormatError);
  EXPECT_THROW(lorenzo::decode(codes, beyond, {1, 1000, 100}, c, out, four), FormatError);
  EXPECT_THROW(lorenzo::decode(codes, beyond, {1000, 1, 100}, c, out, four), FormatError);
  // Damage in a later slab is found with any thread count.
  Bytes bad_code = codes;
  store_le<uint16_t>(bad_code.data() + 2 * 99999, 1024);
  EXPECT_THROW(lorenzo::decode(bad_code, at_limit, {n}, c, out, four), FormatError);
  EXPECT_THROW(lorenzo::decode(bad_code, at_limit, {10, 100, 100}, c, out, four), FormatError);
  Bytes code_at_outlier = codes;
  store_le<uint16_t>(code_at_outlier.data() + 2 * 30000, 2);
  EXPECT_THROW(lorenzo::decode(code_at_outlier, at_limit, {n}, c, out, four), FormatError);
}

TEST(Lorenzo, CallerFloatingPointStateIgnoredAndRestored) {
#if defined(__x86_64__)
  const std::vector<float> v = synthetic<float>(Pattern::Specials, 4096, 9);
  const lorenzo::Config c = make_config<float>(1e-3, 512);
  lorenzo::Streams plain, flushed;
  lorenzo::encode(to_bytes(v), {4096}, c, 1e-3, plain);
  const unsigned saved = _mm_getcsr();
  const unsigned ftz_daz_up = (saved | 0x8040u | 0x4000u);  // FTZ, DAZ, round toward -inf
  _mm_setcsr(ftz_daz_up);
  lorenzo::encode(to_bytes(v), {4096}, c, 1e-3, flushed);
  Bytes out;
  lorenzo::decode(flushed.codes, flushed.outliers, {4096}, c, out);
  const unsigned after = _mm_getcsr();
  _mm_setcsr(saved);
  EXPECT_EQ(after, ftz_daz_up);
  EXPECT_EQ(plain.codes, flushed.codes);
  EXPECT_EQ(plain.outliers, flushed.outliers);
  Bytes expected;
  lorenzo::decode(plain.codes, plain.outliers, {4096}, c, expected);
  EXPECT_EQ(out, expected);
#endif
}

// ---- format pinning ------------------------------------------------------------

Bytes codes_of(std::initializer_list<uint16_t> codes) {
  Bytes b;
  for (uint16_t c : codes) append_le<uint16_t>(b, c);
  return b;
}

Bytes header(uint64_t n, uint64_t a, uint64_t b) {
  Bytes h;
  append_le<uint64_t>(h, n);
  append_le<uint64_t>(h, a);
  append_le<uint64_t>(h, b);
  return h;
}

TEST(Lorenzo, Pinned1D) {
  // eb = 0.5 -> eb2 = 1, inv = 1: p = x for the integers. R = 4: codes 0..7, -4 <= delta <= 3.
  // x      0   1   3   2  -2   2   1000   NaN
  // p      0   1   3   2  -2   2   1000   0 (special)
  // delta  0   1   2  -1  -4   4    998  -1000
  // zigzag 0   2   4   1   7   8   1996   1999
  // code   0   2   4   1   7   0      0   0      (zigzag 8, 1996, 1999 do not fit below 8)
  const std::vector<float> x = {0, 1, 3, 2, -2, 2, 1000, from_bits<float>(0x7FC00000u)};
  lorenzo::Config c;
  c.width = 4;
  c.eb = 0.5;
  c.radius = 4;
  lorenzo::Streams s;
  lorenzo::encode(to_bytes(x), {8}, c, 0.5, s);
  EXPECT_EQ(s.codes, codes_of({0, 2, 4, 1, 7, 0, 0, 0}));
  Bytes outliers = header(3, 3, 1);
  append_le<uint32_t>(outliers, 5);  // indices
  append_le<uint32_t>(outliers, 6);
  append_le<uint32_t>(outliers, 7);
  outliers.push_back(4);  // kind: quantized, delta stored
  outliers.push_back(4);
  outliers.push_back(5);  // kind: raw bits, delta stored
  append_le<int32_t>(outliers, 4);
  append_le<int32_t>(outliers, 998);
  append_le<int32_t>(outliers, -1000);
  append_le<uint32_t>(outliers, 0x7FC00000u);
  EXPECT_EQ(outliers.size(), 55u);  // docs/FORMAT.md, stage 10 example
  EXPECT_EQ(s.outliers, outliers);
  Bytes out;
  lorenzo::decode(s.codes, s.outliers, {8}, c, out);
  EXPECT_EQ(out, to_bytes(x));
}

TEST(Lorenzo, PinnedRadiusEdges) {
  // R = 32768: the full u16 range; delta -32768 is code 65535, delta 32768 an outlier.
  {
    const std::vector<float> x = {0, -32768, 0};
    lorenzo::Config c;
    c.width = 4;
    c.eb = 0.5;
    lorenzo::Streams s;
    lorenzo::encode(to_bytes(x), {3}, c, 0.5, s);
    EXPECT_EQ(s.codes, codes_of({0, 65535, 0}));
    Bytes outliers = header(1, 1, 0);
    append_le<uint32_t>(outliers, 2);
    outliers.push_back(4);
    append_le<int32_t>(outliers, 32768);
    EXPECT_EQ(s.outliers, outliers);
    Bytes out;
    lorenzo::decode(s.codes, s.outliers, {3}, c, out);
    EXPECT_EQ(out, to_bytes(x));
  }
  // R = 1: codes 0 and 1 carry deltas 0 and -1.
  {
    const std::vector<double> x = {0, -1, -1, 0};
    lorenzo::Config c;
    c.width = 8;
    c.eb = 0.5;
    c.radius = 1;
    lorenzo::Streams s;
    lorenzo::encode(to_bytes(x), {4}, c, 0.5, s);
    EXPECT_EQ(s.codes, codes_of({0, 1, 0, 0}));
    Bytes outliers = header(1, 1, 0);
    append_le<uint32_t>(outliers, 3);
    outliers.push_back(4);
    append_le<int64_t>(outliers, 1);
    EXPECT_EQ(s.outliers, outliers);
    Bytes out;
    lorenzo::decode(s.codes, s.outliers, {4}, c, out);
    EXPECT_EQ(out, to_bytes(x));
  }
}

TEST(Lorenzo, ConstantFieldIsAllZeroCodes) {
  // Only the first element has a nonzero delta; a zero delta is code 0, no records.
  const std::vector<float> x(3 * 5 * 7, 3.0f);
  lorenzo::Config c;
  c.width = 4;
  c.eb = 0.5;
  lorenzo::Streams s;
  lorenzo::encode(to_bytes(x), {3, 5, 7}, c, 0.5, s);
  Bytes expected(2 * x.size(), 0);
  expected[0] = 6;  // zigzag(3)
  EXPECT_EQ(s.codes, expected);
  EXPECT_EQ(s.outliers, header(0, 0, 0));
}

TEST(Lorenzo, Pinned2D) {
  // 2 x 3, eb = 0.5 (eb2 = 1), R = 32768.
  // x = [[1 2 4] [3 5 -0]]  p = [[1 2 4] [3 5 0]]
  // delta[0] = 1, 2-1, 4-2 = 1 1 2;  delta[1] = 3-1, 5-3-2+1, 0-5-4+2 = 2 1 -7
  // codes = zigzag = 2 2 4 4 2 13; -0 is one record (index 5, kind 3), no payload,
  // and keeps its ordinary code since its delta fits.
  const std::vector<float> x = {1, 2, 4, 3, 5, -0.0f};
  lorenzo::Config c;
  c.width = 4;
  c.eb = 0.5;
  lorenzo::Streams s;
  lorenzo::encode(to_bytes(x), {2, 3}, c, 0.5, s);
  EXPECT_EQ(s.codes, codes_of({2, 2, 4, 4, 2, 13}));
  Bytes outliers = header(1, 0, 0);
  append_le<uint32_t>(outliers, 5);
  outliers.push_back(3);
  EXPECT_EQ(s.outliers, outliers);
  Bytes out;
  lorenzo::decode(s.codes, s.outliers, {2, 3}, c, out);
  EXPECT_EQ(out, to_bytes(x));
}

TEST(Lorenzo, Pinned3DFloat64) {
  // 2 x 2 x 2 of p = 1..8 in C order (eb2 = 1): only the first element and the
  // three axis steps are nonzero deltas: x-step 1, y-step 2, z-step 4.
  // delta = [1 1 | 2 0 || 4 0 | 0 0]
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
  lorenzo::Config c;
  c.width = 8;
  c.eb = 0.5;
  lorenzo::Streams s;
  lorenzo::encode(to_bytes(x), {2, 2, 2}, c, 0.5, s);
  EXPECT_EQ(s.codes, codes_of({2, 2, 4, 0, 8, 0, 0, 0}));
  EXPECT_EQ(s.outliers, header(0, 0, 0));
  Bytes out;
  lorenzo::decode(s.codes, s.outliers, {2, 2, 2}, c, out);
  EXPECT_EQ(out, to_bytes(x));
}

TEST(Lorenzo, EmptyChunk) {
  lorenzo::Config c;
  c.eb = 0.5;
  lorenzo::Streams s;
  lorenzo::encode(ByteSpan(), {0}, c, 0.5, s);
  EXPECT_TRUE(s.codes.empty());
  EXPECT_EQ(s.outliers, header(0, 0, 0));
  Bytes out = {1, 2};
  lorenzo::decode(s.codes, s.outliers, {0}, c, out);
  EXPECT_TRUE(out.empty());
}

// ---- usage and hostile input ---------------------------------------------------

TEST(Lorenzo, RejectsBadUsage) {
  const Bytes four(16, 0);
  lorenzo::Streams s;
  lorenzo::Config c;
  c.eb = 0.5;
  EXPECT_THROW(lorenzo::encode(four, {}, c, 0.5, s), UsageError);
  EXPECT_THROW(lorenzo::encode(four, {1, 1, 2, 2}, c, 0.5, s), UsageError);
  EXPECT_THROW(lorenzo::encode(four, {5}, c, 0.5, s), UsageError);
  EXPECT_THROW(lorenzo::encode(four, {4}, c, 0.0, s), UsageError);
  EXPECT_THROW(lorenzo::encode(four, {4}, c, std::numeric_limits<double>::infinity(), s), UsageError);
  lorenzo::Config bad = c;
  bad.width = 2;
  EXPECT_THROW(lorenzo::encode(four, {8}, bad, 0.5, s), UsageError);
  bad = c;
  bad.eb = 0.1;  // not a float
  EXPECT_THROW(lorenzo::encode(four, {4}, bad, 0.5, s), UsageError);
  bad.eb = 1e-40;  // denormal
  EXPECT_THROW(lorenzo::encode(four, {4}, bad, 0.5, s), UsageError);
  bad.eb = 3e38;  // 2*eb overflows
  EXPECT_THROW(lorenzo::encode(four, {4}, bad, 0.5, s), UsageError);
  bad = c;
  bad.radius = 0;
  EXPECT_THROW(lorenzo::encode(four, {4}, bad, 0.5, s), UsageError);
  bad.radius = 32769;
  EXPECT_THROW(lorenzo::encode(four, {4}, bad, 0.5, s), UsageError);
}

// A valid stream with every record kind, to be damaged in the tests below.
struct Sample {
  lorenzo::Config config;
  Dims dims = {4, 5};
  lorenzo::Streams streams;
};

Sample sample() {
  Sample s;
  s.config.width = 4;
  s.config.eb = 0.5;
  s.config.radius = 4;
  s.config.has_fill = true;
  s.config.fill_bits = bits_of(-1e34f);
  const std::vector<float> x = {0,      1,   2,   3,  1000, -1e34f, 5, 6, 7, 8, std::numeric_limits<float>::infinity(),
                                -0.0f, 12,  13,  14, 15,    16,     17, 18, 500};
  lorenzo::encode(to_bytes(x), s.dims, s.config, 0.5, s.streams);
  return s;
}

void expect_format_error(const Sample& s, const Bytes& codes, const Bytes& outliers, const char* what) {
  Bytes out;
  EXPECT_THROW(lorenzo::decode(codes, outliers, s.dims, s.config, out), FormatError) << what;
}

TEST(Lorenzo, HostileStreamsAreFormatErrors) {
  const Sample s = sample();
  const Bytes& codes = s.streams.codes;
  const Bytes& outl = s.streams.outliers;
  {
    Bytes out;
    ASSERT_NO_THROW(lorenzo::decode(codes, outl, s.dims, s.config, out));
  }
  ASSERT_GE(load_le<uint64_t>(outl.data()), 4u);
  expect_format_error(s, Bytes(codes.begin(), codes.end() - 2), outl, "codes truncated");
  expect_format_error(s, Bytes(codes.begin(), codes.end() - 1), outl, "codes odd");
  {
    Bytes longer = codes;
    longer.push_back(0);
    longer.push_back(0);
    expect_format_error(s, longer, outl, "codes too long");
  }
  for (size_t cut = 0; cut < outl.size(); ++cut)
    expect_format_error(s, codes, Bytes(outl.begin(), outl.begin() + cut), "outliers truncated");
  {
    Bytes longer = outl;
    longer.push_back(0);
    expect_format_error(s, codes, longer, "outliers too long");
  }
  const uint64_t n = load_le<uint64_t>(outl.data());
  const size_t kinds = 24 + 4 * n;
  auto mutated = [&](auto&& change, const char* what) {
    Bytes c = codes, o = outl;
    change(c, o);
    expect_format_error(s, c, o, what);
  };
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data(), load_le<uint64_t>(o.data()) + 1); }, "count");
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data() + 8, 0); }, "delta count");
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data() + 16, 99); }, "raw count");
  mutated([](Bytes&, Bytes& o) { store_le<uint64_t>(o.data(), ~uint64_t{0}); }, "huge count");
  mutated([](Bytes&, Bytes& o) { store_le<uint32_t>(o.data() + 24, 20); }, "index out of range");
  mutated([](Bytes&, Bytes& o) { store_le<uint32_t>(o.data() + 28, load_le<uint32_t>(o.data() + 24)); },
          "index repeated");
  mutated([&](Bytes&, Bytes& o) { o[kinds] = 0; }, "kind 0");
  mutated([&](Bytes&, Bytes& o) { o[kinds] = 8; }, "kind 8");
  mutated([&](Bytes&, Bytes& o) { o[kinds] ^= 4; }, "delta flag dropped");
  mutated([](Bytes& c, Bytes&) { store_le<uint16_t>(c.data(), 8); }, "code above 2R-1");
  {
    // Outliers are found through the records only; their code must be 0.
    ASSERT_EQ(outl[kinds] & 4, 4);
    const uint32_t first = load_le<uint32_t>(outl.data() + 24);
    ASSERT_EQ(load_le<uint16_t>(codes.data() + 2 * first), 0u);
    for (uint16_t code : {1, 7})
      mutated([&](Bytes& c, Bytes&) { store_le<uint16_t>(c.data() + 2 * first, code); },
              "nonzero code at an outlier position");
  }
  mutated([](Bytes& c, Bytes&) { store_le<uint16_t>(c.data(), 7); }, "prequantized value moved off a special");
  {
    // The record with a delta: make its delta small enough for a code.
    Bytes c = codes, o = outl;
    const size_t delta_at = kinds + n;
    for (int32_t d : {0, 1, 3, -4}) {  // zigzag 0, 2, 6, 7: all below 2R = 8
      store_le<int32_t>(o.data() + delta_at, d);
      expect_format_error(s, c, o, "non-canonical delta");
    }
    store_le<int32_t>(o.data() + delta_at, (1 << 26));
    expect_format_error(s, c, o, "prequantized value out of range");
  }
  {
    Sample no_fill = s;
    no_fill.config.has_fill = false;
    no_fill.config.fill_bits = 0;
    expect_format_error(no_fill, codes, outl, "fill record without fill value");
  }
}

TEST(Lorenzo, RandomDamageNeverCrashes) {
  const Sample s = sample();
  std::mt19937_64 rng(1);
  size_t accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    Bytes c = s.streams.codes, o = s.streams.outliers;
    Bytes& target = trial % 2 ? c : o;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    Bytes out;
    try {
      lorenzo::decode(c, o, s.dims, s.config, out);
      ++accepted;
      EXPECT_EQ(out.size(), 80u);
    } catch (const FormatError&) {
    }
  }
  std::printf("random damage: %zu of 20000 damaged streams still decode\n", accepted);
}

// ---- ratio indication and speed -------------------------------------------------

// bitshuffle(2) -> rze(1) over the codes (preset fzgpu), optionally with diffnb(2)
// first (Lorenzo deltas are already decorrelated, so it mostly hurts). Outliers
// are counted at their raw size by the caller.
double pipeline_bytes(const Bytes& codes, bool with_diffnb) {
  Bytes a, b, c;
  if (with_diffnb) diffnb::encode(codes, 2, a);
  else a = codes;
  bitshuffle::encode(a, 2, b);
  rze::encode(b, 1, c);
  return static_cast<double>(c.size());
}

// classify_fast (the GPU encoders' classify) must give classify's kind and p
// for every input: values at and around the bound (where its shortcut in T
// gives way to the exact test), half-way points, the edge of its 2^m range,
// specials and random bits, for working bounds equal to and below the user's.
template <typename T>
void classify_fast_matches_classify(uint64_t seed) {
  using U = BitsOf<T>;
  using I = typename lorenzo::rules::Traits<T>::I;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1, 1);
  size_t checked = 0, shortcut = 0;
  for (const double user : {0.5, 1e-1, 3.3e-2, 1e-3, 7e-5, 1e-6, 1e-12, 1e-30}) {
    for (const bool exact : {true, false}) {
      lorenzo::Config c;
      c.width = sizeof(T);
      T eb = static_cast<T>(user);
      if (static_cast<double>(eb) > user) eb = std::nextafter(eb, T(0));
      if (!exact) eb = std::nextafter(std::nextafter(eb, T(0)), T(0));
      if (!(eb > std::numeric_limits<T>::min() * 4)) continue;
      c.eb = static_cast<double>(eb);
      c.radius = 512;
      c.has_fill = exact;
      c.fill_bits = bits_of<T>(static_cast<T>(3) * eb);
      const auto quantizer = lorenzo::rules::make_quantizer<T>(c, user);
      const T eb2 = quantizer.eb2;
      for (int i = 0; i < 200000; ++i) {
        const double k = std::floor(unit(rng) * std::ldexp(1.0, static_cast<int>(rng() % 26)));
        T x;
        switch (rng() % 8) {
          case 0: x = static_cast<T>((k + 0.5) * static_cast<double>(eb2)); break;  // half-way
          case 1: x = static_cast<T>(k * static_cast<double>(eb2) + (rng() % 2 ? 1 : -1) * user); break;  // at the bound
          case 2: x = std::nextafter(static_cast<T>(k * static_cast<double>(eb2) + user), static_cast<T>(unit(rng) * 1e30)); break;
          case 3: x = static_cast<T>(unit(rng) * std::ldexp(static_cast<double>(eb2), std::numeric_limits<T>::digits - 1 + static_cast<int>(rng() % 3) - 1)); break;
          case 4: x = from_bits<T>(static_cast<U>(rng())); break;
          case 5: x = static_cast<T>(k * static_cast<double>(eb2) + unit(rng) * user); break;
          case 6: x = i % 2 ? static_cast<T>(3) * eb : static_cast<T>(-0.0); break;
          default: x = static_cast<T>(unit(rng) * std::pow(10.0, static_cast<double>(rng() % 60) - 30)); break;
        }
        const U bits = bits_of(x);
        I p_exact = 7, p_fast = 9;
        const uint8_t kind_exact = quantizer.classify(bits, p_exact);
        const uint8_t kind_fast = quantizer.classify_fast(bits, p_fast);
        ASSERT_EQ(kind_fast, kind_exact) << "x " << x << " user bound " << user << " eb " << eb;
        ASSERT_EQ(p_fast, p_exact) << "x " << x << " user bound " << user << " eb " << eb;
        ++checked;
        // The shortcut is taken where it may be: the fast path's own test in T.
        const T s = x * quantizer.inv, a = s < 0 ? -s : s;
        const T d = x - static_cast<T>(s < 0 ? -std::floor(a + static_cast<T>(0.5)) : std::floor(a + static_cast<T>(0.5))) * eb2;
        if (kind_exact == 0 && std::isfinite(d) && (d < 0 ? -d : d) <= quantizer.accept_below) ++shortcut;
      }
    }
  }
  // The test is void if the shortcut never applied, or always did.
  EXPECT_GT(shortcut, checked / 10);
  EXPECT_LT(shortcut, checked);
}

TEST(Lorenzo, ClassifyFastIsClassifyFloat32) { classify_fast_matches_classify<float>(11); }
TEST(Lorenzo, ClassifyFastIsClassifyFloat64) { classify_fast_matches_classify<double>(12); }

double entropy_bytes(const Bytes& codes) {
  std::map<uint16_t, size_t> histogram;
  for (size_t i = 0; i < codes.size(); i += 2) ++histogram[load_le<uint16_t>(codes.data() + i)];
  const double n = static_cast<double>(codes.size() / 2);
  double bits = 0;
  for (const auto& [code, count] : histogram) bits -= static_cast<double>(count) * std::log2(count / n);
  return bits / 8;
}

TEST(Lorenzo, RatioIndication) {
  for (const RealField& f : real_fields()) {
    if (f.f64) continue;
    const std::vector<float> v = testing::field_values<float>(f);
    const double range = finite_range(v);
    const double raw = static_cast<double>(v.size() * 4);
    const Outcome o3 = round_trip(v, f.dims, 1e-3 * range, 32768);
    const double size3 = pipeline_bytes(o3.streams.codes, true) + static_cast<double>(o3.streams.outliers.size());
    const double size3b = pipeline_bytes(o3.streams.codes, false) + static_cast<double>(o3.streams.outliers.size());
    const Outcome o4 = round_trip(v, f.dims, 1e-4 * range, 512);
    const double size4 = entropy_bytes(o4.streams.codes) + static_cast<double>(o4.streams.outliers.size());
    std::printf(
        "%-22s NOA 1e-3 R=32768: outliers %.4f%%, bitshuffle(2)+rze(1) ratio %.2f (diffnb(2) first: %.2f) | NOA 1e-4 "
        "R=512: outliers %.4f%%, order-0 entropy bound ratio %.2f\n",
        f.name.c_str(), 100.0 * static_cast<double>(o3.outliers) / static_cast<double>(v.size()), raw / size3b, raw / size3,
        100.0 * static_cast<double>(o4.outliers) / static_cast<double>(v.size()), raw / size4);
  }
}

}  // namespace
}  // namespace fz
