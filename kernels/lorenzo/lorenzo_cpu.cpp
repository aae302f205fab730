// CPU Lorenzo dual quantization (stream format: lorenzo.hpp, docs/FORMAT.md).
//
// Encoding runs in three passes over a fixed grid of element blocks, so the bytes
// do not depend on the thread count:
//   1. prequantize every element to an integer p (specials get p = 0 and are
//      listed per block with their kind and bits);
//   2. Lorenzo deltas from the already-prequantized neighbours (the prediction
//      never uses reconstructed values, so every element is independent), codes,
//      and per-block outlier records in index order;
//   3. gather the records: per-block counts, a prefix sum, parallel copies.
// Decoding: codes -> deltas (code = zigzag(delta); code 0 is delta 0), the stored
// deltas written over the outlier positions (whose code must be 0), inclusive
// prefix sums along x, y, z (the exact inverse of the delta operator), then
// x' = (T)p * eb2.
// All integer work is modulo 2^(8*width) (unsigned), which is exact because
// every final p fits the signed type; it also keeps hostile streams free of UB.
#include "lorenzo/lorenzo.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "common/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FZ_LORENZO_HAVE_MXCSR 1
#endif

namespace fz::lorenzo {
namespace {

// Work-item grid of the encoder and of the decoder's element-wise passes.
constexpr size_t kBlockElems = size_t{1} << 15;
// Columns per work item of the y and z prefix sums (rows of 1-2 KiB stream well).
constexpr size_t kScanColumns = 256;
constexpr size_t kHeaderBytes = 24;

constexpr uint8_t kValueQuantized = 0;
constexpr uint8_t kValueRaw = 1;
constexpr uint8_t kValueFill = 2;
constexpr uint8_t kValueNegZero = 3;
constexpr uint8_t kValueMask = 3;
constexpr uint8_t kHasDelta = 4;

// Decision 5: our arithmetic must not see flush-to-zero / denormals-are-zero or a
// non-default rounding mode left behind by another library. MXCSR is per thread,
// so every work item sets it and restores the caller's value.
class FloatStateGuard {
 public:
  FloatStateGuard() {
#ifdef FZ_LORENZO_HAVE_MXCSR
    saved_ = _mm_getcsr();
    const unsigned wanted = saved_ & ~(0x8000u | 0x0040u | 0x6000u);  // FTZ, DAZ, rounding control
    if (wanted != saved_) _mm_setcsr(wanted);
#endif
  }
  ~FloatStateGuard() {
#ifdef FZ_LORENZO_HAVE_MXCSR
    if (_mm_getcsr() != saved_) _mm_setcsr(saved_);
#endif
  }
  FloatStateGuard(const FloatStateGuard&) = delete;
  FloatStateGuard& operator=(const FloatStateGuard&) = delete;

 private:
  unsigned saved_ = 0;
};

template <typename T>
struct Traits;
// PMAX: every integer with |p| <= PMAX converts to T exactly, so (T)p * eb2 has a
// single rounding, the same in encoder and decoder (and on the GPU). Deltas of
// up to 8*PMAX and all partial sums then fit the signed type as well.
template <>
struct Traits<float> {
  using I = int32_t;
  using U = uint32_t;
  static constexpr unsigned kMantissaBits = 23;
  static constexpr U kExponentMask = 0xFF;
  static constexpr I kPMax = I{1} << 24;
};
template <>
struct Traits<double> {
  using I = int64_t;
  using U = uint64_t;
  static constexpr unsigned kMantissaBits = 52;
  static constexpr U kExponentMask = 0x7FF;
  static constexpr I kPMax = I{1} << 53;
};

struct Shape {
  size_t nz = 1, ny = 1, nx = 1, n = 0;
};

Shape make_shape(const std::vector<size_t>& dims) {
  if (dims.empty() || dims.size() > 3)
    throw UsageError("lorenzo: 1 to 3 extents expected, got " + std::to_string(dims.size()));
  size_t ext[3] = {1, 1, 1};
  std::copy(dims.begin(), dims.end(), ext + (3 - dims.size()));
  Shape s;
  s.nz = ext[0];
  s.ny = ext[1];
  s.nx = ext[2];
  // Bounded so that N * 16 (codes, outliers, temporaries) never overflows.
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t n = 1;
  for (size_t e : ext) {
    if (e == 0) return Shape{s.nz, s.ny, s.nx, 0};
    if (n > kMaxElements / e) throw UsageError("lorenzo: too many elements");
    n *= e;
  }
  s.n = n;
  return s;
}

template <typename T>
void check_config(const Config& c) {
  const T eb = static_cast<T>(c.eb);
  if (!(static_cast<double>(eb) == c.eb))
    throw UsageError("lorenzo: working bound must be exactly representable in the element type");
  if (!(eb >= std::numeric_limits<T>::min()) || !std::isfinite(eb + eb))
    throw UsageError("lorenzo: working bound must be normal, with 2*eb finite");
  if (c.radius < 1 || c.radius > 32768) throw UsageError("lorenzo: radius must be in [1, 32768]");
  if (sizeof(T) == 4 && (c.fill_bits >> 32) != 0) throw UsageError("lorenzo: fill bits wider than the element");
}

template <typename U>
inline U zigzag(U d) {
  return static_cast<U>((d << 1) ^ (U{0} - (d >> (8 * sizeof(U) - 1))));
}
template <typename U>
inline U unzigzag(U z) {
  return static_cast<U>((z >> 1) ^ (U{0} - (z & 1)));
}

// |a - b| <= bound, decided exactly (a finite; b finite or infinite; bound finite,
// > 0). s = fl(a - b): rounding is monotone and bound is a double, so |s| < bound
// and |s| > bound already decide. Only |s| == bound needs the rounding error e,
// which Fast2Sum (larger magnitude first) gives exactly: s + e == a - b. The
// common path has no data-dependent branch on which operand is larger.
inline bool within_bound(double a, double b, double bound) {
  const double s = a - b;
  const double m = std::fabs(s);
  if (m < bound) return true;
  if (!(m == bound)) return false;
  double hi = a, lo = -b;
  if (std::fabs(hi) < std::fabs(lo)) std::swap(hi, lo);
  const double e = lo - (s - hi);
  return s > 0 ? e <= 0 : e >= 0;
}

template <typename T>
struct Quantizer {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  T eb2, inv;
  double bound;
  bool has_fill;
  U fill;

  bool accept(T x, I c) const {
    if (c > Traits<T>::kPMax || c < -Traits<T>::kPMax) return false;
    return within_bound(static_cast<double>(x), static_cast<double>(static_cast<T>(c) * eb2), bound);
  }

  // Returns the value kind; p is set (and nonzero only) for quantized elements.
  uint8_t classify(U bits, I& p) const {
    p = 0;
    if (has_fill && bits == fill) return kValueFill;
    const U exponent = (bits >> Traits<T>::kMantissaBits) & Traits<T>::kExponentMask;
    if (exponent == Traits<T>::kExponentMask) return kValueRaw;  // NaN, +-Inf
    if (exponent == 0) {
      if ((bits & ((U{1} << Traits<T>::kMantissaBits) - 1)) != 0) return kValueRaw;  // denormal
      return bits == 0 ? kValueQuantized : kValueNegZero;  // +0 is p = 0 exactly; -0 kept bit-exact
    }
    T x;
    std::memcpy(&x, &bits, sizeof(T));
    const T s = x * inv;
    const T a = std::fabs(s);
    if (!(a < static_cast<T>(Traits<T>::kPMax))) return kValueRaw;  // too large for exact integers
    // Round half away from zero without libm: a < 2^24 (2^53), so the truncation
    // and a - t are exact.
    I t = static_cast<I>(a);
    t += static_cast<I>(a - static_cast<T>(t) >= static_cast<T>(0.5));  // branch-free: the fraction is random
    const I q = s < 0 ? -t : t;
    // inv is rounded, so q may sit one step off near a half-way point; the two
    // neighbours are tried in a fixed order before giving up (deterministic).
    if (accept(x, q)) {
      p = q;
    } else if (accept(x, q - 1)) {
      p = q - 1;
    } else if (accept(x, q + 1)) {
      p = q + 1;
    } else {
      return kValueRaw;
    }
    return kValueQuantized;
  }
};

struct Special {
  size_t index;
  uint8_t kind;
  uint64_t bits;
};

struct Record {
  size_t index;
  uint8_t kind;
  uint64_t delta;
  uint64_t bits;
};

size_t block_count_elems(size_t n) { return (n + kBlockElems - 1) / kBlockElems; }

// Column term of the Lorenzo operator at x: the y/z differences of p at (z, y, x).
// The neighbour rows are separate pointers (formed only when they exist), so no
// index ever wraps below zero.
template <typename U, bool Up, bool Back>
inline U column(const U* row, const U* up, const U* back, const U* up_back, size_t x) {
  U v = row[x];
  if (Up) v -= up[x];
  if (Back) v -= back[x];
  if (Up && Back) v += up_back[x];
  return v;
}

// deltas for x in [x0, x1) of one row; then the x difference of the column terms.
template <typename U, bool Up, bool Back>
void row_deltas(const U* row, size_t x0, size_t x1, size_t sy, size_t sz, U* out) {
  const U* up = Up ? row - sy : row;
  const U* back = Back ? row - sz : row;
  const U* up_back = Up && Back ? row - sy - sz : row;
  U previous = x0 > 0 ? column<U, Up, Back>(row, up, back, up_back, x0 - 1) : U{0};
  for (size_t x = x0; x < x1; ++x) {
    const U c = column<U, Up, Back>(row, up, back, up_back, x);
    out[x - x0] = static_cast<U>(c - previous);
    previous = c;
  }
}

template <typename U>
void deltas_of_range(const U* p, const Shape& s, size_t begin, size_t end, U* out) {
  const size_t sy = s.nx, sz = s.nx * s.ny;
  size_t i = begin;
  while (i < end) {
    const size_t row_index = i / s.nx;
    const size_t x0 = i % s.nx;
    const size_t x1 = std::min(s.nx, x0 + (end - i));
    const bool up = row_index % s.ny != 0;
    const bool back = row_index / s.ny != 0;
    const U* row = p + row_index * s.nx;
    U* o = out + (i - begin);
    if (up && back) row_deltas<U, true, true>(row, x0, x1, sy, sz, o);
    else if (up) row_deltas<U, true, false>(row, x0, x1, sy, sz, o);
    else if (back) row_deltas<U, false, true>(row, x0, x1, sy, sz, o);
    else row_deltas<U, false, false>(row, x0, x1, sy, sz, o);
    i += x1 - x0;
  }
}

template <typename T>
void encode_typed(ByteSpan in, const Shape& s, const Config& config, double user_bound, Streams& out,
                  const Executor& exec) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  const size_t n = s.n;
  out.codes.assign(2 * n, 0);
  out.outliers.clear();
  if (n == 0) {
    out.outliers.assign(kHeaderBytes, 0);
    return;
  }

  Quantizer<T> quantizer;
  quantizer.eb2 = static_cast<T>(config.eb) * 2;
  {
    FloatStateGuard guard;
    quantizer.inv = static_cast<T>(1) / quantizer.eb2;
  }
  quantizer.bound = user_bound;
  quantizer.has_fill = config.has_fill;
  quantizer.fill = static_cast<U>(config.fill_bits);

  const size_t blocks = block_count_elems(n);
  std::unique_ptr<U[]> p(new U[n]);
  std::vector<std::vector<Special>> specials(blocks);
  exec.parallel_for(blocks, [&](size_t b) {
    FloatStateGuard guard;
    const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
    auto& list = specials[b];
    for (size_t i = begin; i < end; ++i) {
      const U bits = load_le<U>(in.data + i * W);
      I q;
      const uint8_t kind = quantizer.classify(bits, q);
      p[i] = static_cast<U>(q);
      if (kind != kValueQuantized) list.push_back({i, kind, bits});
    }
  });

  const U code_limit = static_cast<U>(2 * config.radius);  // zigzag(delta) < 2R -> code (2R <= 65536)
  std::vector<std::vector<Record>> records(blocks);
  uint8_t* codes = out.codes.data();
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
    std::unique_ptr<U[]> deltas(new U[end - begin]);
    deltas_of_range<U>(p.get(), s, begin, end, deltas.get());
    const auto& list = specials[b];
    size_t next = 0;
    size_t next_special = list.empty() ? n : list[0].index;
    auto& recs = records[b];
    for (size_t i = begin; i < end; ++i) {
      const U d = deltas[i - begin];
      const U z = zigzag(d);
      const bool fits = z < code_limit;
      // An outlier's code is 0: with bit-shuffle + zero elimination after this
      // stage, a zero delta and an outlier then both cost no set bits.
      store_le<uint16_t>(codes + 2 * i, fits ? static_cast<uint16_t>(z) : uint16_t{0});
      if (!fits || i == next_special) {
        Record r{i, static_cast<uint8_t>(fits ? 0 : kHasDelta), d, 0};
        if (i == next_special) {
          r.kind |= list[next].kind;
          r.bits = list[next].bits;
          ++next;
          next_special = next < list.size() ? list[next].index : n;
        }
        recs.push_back(r);
      }
    }
  });

  // Gather: exclusive prefix sums of the per-block counts give every block its
  // place in each array, so records stay in index order for any schedule.
  std::vector<size_t> rec_off(blocks + 1, 0), delta_off(blocks + 1, 0), raw_off(blocks + 1, 0);
  for (size_t b = 0; b < blocks; ++b) {
    size_t a = 0, r = 0;
    for (const Record& rec : records[b]) {
      a += (rec.kind & kHasDelta) != 0;
      r += (rec.kind & kValueMask) == kValueRaw;
    }
    rec_off[b + 1] = rec_off[b] + records[b].size();
    delta_off[b + 1] = delta_off[b] + a;
    raw_off[b + 1] = raw_off[b] + r;
  }
  const size_t count = rec_off[blocks], deltas = delta_off[blocks], raws = raw_off[blocks];
  const size_t index_width = n <= (uint64_t{1} << 32) ? 4 : 8;
  const size_t index_at = kHeaderBytes;
  const size_t kind_at = index_at + count * index_width;
  const size_t delta_at = kind_at + count;
  const size_t raw_at = delta_at + deltas * W;
  out.outliers.assign(raw_at + raws * W, 0);
  uint8_t* o = out.outliers.data();
  store_le<uint64_t>(o, count);
  store_le<uint64_t>(o + 8, deltas);
  store_le<uint64_t>(o + 16, raws);
  exec.parallel_for(blocks, [&](size_t b) {
    size_t r = rec_off[b], a = delta_off[b], w = raw_off[b];
    for (const Record& rec : records[b]) {
      if (index_width == 4) store_le<uint32_t>(o + index_at + 4 * r, static_cast<uint32_t>(rec.index));
      else store_le<uint64_t>(o + index_at + 8 * r, rec.index);
      o[kind_at + r] = rec.kind;
      if (rec.kind & kHasDelta) store_le<U>(o + delta_at + W * a++, static_cast<U>(rec.delta));
      if ((rec.kind & kValueMask) == kValueRaw) store_le<U>(o + raw_at + W * w++, static_cast<U>(rec.bits));
      ++r;
    }
  });
}

// Inclusive prefix sums along x of every row. Long rows (1-D data) are cut into
// segments scanned in parallel, then offset by the totals of the earlier segments.
template <typename U>
void scan_x(U* p, const Shape& s, const Executor& exec) {
  const size_t nx = s.nx, rows = s.n / nx;
  auto scan = [](U* r, size_t len) {
    U acc = 0;
    for (size_t k = 0; k < len; ++k) {
      acc = static_cast<U>(acc + r[k]);
      r[k] = acc;
    }
    return acc;
  };
  if (nx <= kBlockElems) {
    const size_t group = kBlockElems / nx;
    exec.parallel_for((rows + group - 1) / group, [&](size_t g) {
      const size_t end = std::min(rows, (g + 1) * group);
      for (size_t row = g * group; row < end; ++row) scan(p + row * nx, nx);
    });
    return;
  }
  const size_t segs = (nx + kBlockElems - 1) / kBlockElems;
  std::vector<U> totals(rows * segs);
  exec.parallel_for(rows * segs, [&](size_t item) {
    const size_t row = item / segs, seg = item % segs;
    const size_t begin = seg * kBlockElems;
    totals[item] = scan(p + row * nx + begin, std::min(nx - begin, kBlockElems));
  });
  for (size_t row = 0; row < rows; ++row) {  // totals -> exclusive offsets, per row
    U acc = 0;
    for (size_t seg = 0; seg < segs; ++seg) {
      const U t = totals[row * segs + seg];
      totals[row * segs + seg] = acc;
      acc = static_cast<U>(acc + t);
    }
  }
  exec.parallel_for(rows * segs, [&](size_t item) {
    const size_t row = item / segs, seg = item % segs;
    if (seg == 0) return;
    const size_t begin = seg * kBlockElems, len = std::min(nx - begin, kBlockElems);
    U* r = p + row * nx + begin;
    const U offset = totals[item];
    for (size_t k = 0; k < len; ++k) r[k] = static_cast<U>(r[k] + offset);
  });
}

// Inclusive prefix sums along a strided axis: element (o, a, c) sits at
// (o * axis + a) * inner + c; work items are (o, column range).
template <typename U>
void scan_rows(U* p, size_t outer, size_t axis, size_t inner, const Executor& exec) {
  if (axis < 2) return;
  const size_t chunks = (inner + kScanColumns - 1) / kScanColumns;
  exec.parallel_for(outer * chunks, [&](size_t item) {
    const size_t o = item / chunks, c0 = (item % chunks) * kScanColumns;
    const size_t len = std::min(inner - c0, kScanColumns);
    U* base = p + o * axis * inner + c0;
    for (size_t a = 1; a < axis; ++a) {
      U* row = base + a * inner;
      const U* previous = row - inner;
      for (size_t k = 0; k < len; ++k) row[k] = static_cast<U>(row[k] + previous[k]);
    }
  });
}

template <typename T>
void decode_typed(ByteSpan codes, ByteSpan outliers, const Shape& s, const Config& config, Bytes& out,
                  const Executor& exec) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  const size_t n = s.n;
  require_format(codes.size / 2 == n && codes.size % 2 == 0, "lorenzo: code stream size does not match dims");
  require_format(outliers.size >= kHeaderBytes, "lorenzo: outlier stream truncated");
  const uint64_t count = load_le<uint64_t>(outliers.data);
  const uint64_t deltas = load_le<uint64_t>(outliers.data + 8);
  const uint64_t raws = load_le<uint64_t>(outliers.data + 16);
  require_format(count <= n && deltas <= count && raws <= count, "lorenzo: outlier counts out of range");
  const size_t index_width = n <= (uint64_t{1} << 32) ? 4 : 8;
  // count <= n <= SIZE_MAX / 32, so none of these sums can overflow.
  const size_t kind_at = kHeaderBytes + count * index_width;
  const size_t delta_at = kind_at + count;
  const size_t raw_at = delta_at + deltas * W;
  require_format(outliers.size == raw_at + raws * W, "lorenzo: outlier stream size does not match its counts");
  const uint8_t* o = outliers.data;
  auto index_of = [&](size_t r) -> uint64_t {
    return index_width == 4 ? load_le<uint32_t>(o + kHeaderBytes + 4 * r) : load_le<uint64_t>(o + kHeaderBytes + 8 * r);
  };
  {
    uint64_t previous = 0, a = 0, w = 0;
    for (size_t r = 0; r < count; ++r) {
      const uint64_t index = index_of(r);
      require_format(index < n && (r == 0 || index > previous), "lorenzo: outlier indices not increasing");
      previous = index;
      const uint8_t kind = o[kind_at + r];
      require_format(kind != 0 && kind <= 7, "lorenzo: bad outlier kind");
      require_format((kind & kValueMask) != kValueFill || config.has_fill, "lorenzo: fill outlier without fill value");
      a += (kind & kHasDelta) != 0;
      w += (kind & kValueMask) == kValueRaw;
    }
    require_format(a == deltas && w == raws, "lorenzo: outlier kinds do not match the counts");
  }
  out.clear();
  if (n == 0) return;

  const size_t blocks = block_count_elems(n);
  const U code_limit = static_cast<U>(2 * config.radius);  // valid codes: 0 .. 2R-1
  std::unique_ptr<U[]> p(new U[n]);
  exec.parallel_for(blocks, [&](size_t b) {
    const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
    bool bad = false;
    for (size_t i = begin; i < end; ++i) {
      const uint16_t code = load_le<uint16_t>(codes.data + 2 * i);
      bad |= !(static_cast<U>(code) < code_limit);
      p[i] = unzigzag(static_cast<U>(code));
    }
    require_format(!bad, "lorenzo: code out of radius");
  });
  // Outliers are known only from the records: each stored delta replaces the
  // code-derived delta at its index, where the code must be 0 (canonical); the
  // indices are distinct, so no position is written twice.
  for (size_t r = 0, a = 0; r < count; ++r) {
    if (!(o[kind_at + r] & kHasDelta)) continue;
    const uint64_t index = index_of(r);
    require_format(load_le<uint16_t>(codes.data + 2 * index) == 0, "lorenzo: nonzero code at an outlier position");
    const U d = load_le<U>(o + delta_at + W * a++);
    require_format(!(zigzag(d) < code_limit), "lorenzo: stored delta that fits a code");
    p[index] = d;
  }

  scan_x<U>(p.get(), s, exec);
  scan_rows<U>(p.get(), s.nz, s.ny, s.nx, exec);
  scan_rows<U>(p.get(), 1, s.nz, s.nx * s.ny, exec);

  const T eb2 = static_cast<T>(config.eb) * 2;
  out.resize(n * W);
  uint8_t* dst = out.data();
  exec.parallel_for(blocks, [&](size_t b) {
    FloatStateGuard guard;
    const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
    bool bad = false;
    for (size_t i = begin; i < end; ++i) {
      const U u = p[i];
      bad |= static_cast<U>(u + static_cast<U>(Traits<T>::kPMax)) > static_cast<U>(2 * static_cast<U>(Traits<T>::kPMax));
      const T x = static_cast<T>(static_cast<I>(u)) * eb2;
      std::memcpy(dst + i * W, &x, W);
    }
    require_format(!bad, "lorenzo: prequantized value out of range");
  });
  const U sign_bit = U{1} << (8 * W - 1);
  for (size_t r = 0, w = 0; r < count; ++r) {
    const uint8_t value = o[kind_at + r] & kValueMask;
    if (value == kValueQuantized) continue;
    const uint64_t index = index_of(r);
    require_format(p[index] == 0, "lorenzo: special element with a nonzero prequantized value");
    U bits = value == kValueRaw ? load_le<U>(o + raw_at + W * w++)
             : value == kValueFill ? static_cast<U>(config.fill_bits)
                                   : sign_bit;
    store_le<U>(dst + index * W, bits);
  }
}

void check_width(unsigned width) {
  if (width != 4 && width != 8) throw UsageError("lorenzo: element width must be 4 or 8, got " + std::to_string(width));
}

}  // namespace

void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double user_bound, Streams& out,
            const Executor& exec) {
  check_width(config.width);
  const Shape s = make_shape(dims);
  if (config.width == 4) check_config<float>(config);
  else check_config<double>(config);
  if (!(user_bound > 0) || !std::isfinite(user_bound)) throw UsageError("lorenzo: user bound must be > 0 and finite");
  if (in.size / config.width != s.n || in.size % config.width != 0)
    throw UsageError("lorenzo: input size does not match dims");
  if (config.width == 4) encode_typed<float>(in, s, config, user_bound, out, exec);
  else encode_typed<double>(in, s, config, user_bound, out, exec);
}

void decode(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config, Bytes& out,
            const Executor& exec) {
  check_width(config.width);
  const Shape s = make_shape(dims);
  if (config.width == 4) {
    check_config<float>(config);
    decode_typed<float>(codes, outliers, s, config, out, exec);
  } else {
    check_config<double>(config);
    decode_typed<double>(codes, outliers, s, config, out, exec);
  }
}

}  // namespace fz::lorenzo
