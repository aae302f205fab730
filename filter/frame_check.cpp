#include "frame_check.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cd_values.hpp"

namespace fz::filter {
namespace {

// Stage type ids (docs/FORMAT.md section 2) whose configs carry a bound or a
// value kept exact.
constexpr uint16_t kQuantize = 9;
constexpr uint16_t kLorenzo = 10;
constexpr uint16_t kFillmask = 12;
constexpr uint16_t kSpline = 13;

// A bound printed so that it reads back exactly.
std::string exact_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

uint64_t load_le(const Bytes& bytes, size_t at, unsigned width) {
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i) value |= uint64_t(bytes[at + i]) << (8 * i);
  return value;
}

double load_double(const Bytes& bytes, size_t at) {
  const uint64_t bits = load_le(bytes, at, 8);
  double value;
  std::memcpy(&value, &bits, 8);
  return value;
}

// The error bound a frame's lossy stage was configured with.
struct FrameBound {
  enum class Kind { kNone, kAbsolute, kRelative, kRangeRelative } kind = Kind::kNone;
  double value = 0;  // kAbsolute: the absolute bound enforced; otherwise the user's bound
};

FrameBound bound_of(const FrameInfo& info) {
  FrameBound found;
  for (const StageInfo& stage : info.stages) {
    const Bytes& c = stage.config;
    if (stage.type_id == kQuantize && c.size() == 19) {
      found.value = load_double(c, 2);
      found.kind = c[1] == 2   ? FrameBound::Kind::kRelative
                   : c[1] == 1 ? FrameBound::Kind::kRangeRelative
                               : FrameBound::Kind::kAbsolute;
    } else if (stage.type_id == kLorenzo && c.size() >= 21) {
      found = {FrameBound::Kind::kAbsolute, load_double(c, 13)};
    } else if (stage.type_id == kSpline && c.size() >= 14) {
      found = {FrameBound::Kind::kAbsolute, load_double(c, 6)};
    }
  }
  return found;
}

Preset normal(Preset p) { return p == Preset::Default ? Preset::Lossless : p; }

const char* kWhy =
    ": the chunk was written with other parameters than the dataset stores (in a parallel write, ranks that "
    "passed different filter parameters: every rank must pass the same)";

std::string stored_bound_text(const StoredParams& params) {
  return std::string(mode_name(params.user.mode)) + " " + exact_text(params.user.bound);
}

// Parameters the checks can use, or nothing for a layout this version does
// not know (the frame alone then says how to decode).
std::optional<StoredParams> stored(const unsigned cd[], size_t cd_count) {
  if (!is_stored_layout(cd, cd_count)) {
    // set_local rewrites every dataset's values into the stored layout
    // before any chunk is written; values in the user layout mean it never
    // ran (the filter was unavailable or refused the type), so no chunk of
    // this dataset can hold an H5Z-FZ frame.
    throw Error("cd_values are not in the stored layout, so H5Z-FZ never compressed a chunk of this dataset; "
                "the chunk is not an H5Z-FZ frame it wrote");
  }
  try {
    return decode_stored(cd, cd_count);
  } catch (const Error&) {
    return std::nullopt;  // a layout from a later version
  }
}

std::optional<uint64_t> chunk_size(const DatasetInfo& dataset) {
  if (dataset.chunk_dims.empty()) return std::nullopt;
  uint64_t bytes = dataset.dtype.size;
  for (uint32_t d : dataset.chunk_dims) {
    if (__builtin_mul_overflow(bytes, uint64_t{d}, &bytes)) return std::nullopt;
  }
  return bytes;
}

// A frame of plain bytes with another filter before ours holds that filter's
// output (the filter's byte fallback), whose length is not the chunk's.
// Layouts written before the first-filter flag existed cannot say which
// filter comes first; they get the same allowance.
bool byte_fallback(const StoredParams& params, const FrameInfo& info) {
  return !params.dataset.first_filter && info.dtype == bytes_type();
}

bool float_lossy(const StoredParams& params) {
  return preset_is_lossy(params.user.preset) && params.dataset.dtype.element_class == ElementClass::Float &&
         (params.dataset.dtype.size == 4 || params.dataset.dtype.size == 8);
}

// The element bit patterns kept exact, left out of NOA's range: the
// dataset's fill value and each fillmask stage's value.
std::vector<uint64_t> exact_values(const StoredParams& params, const FrameInfo& info) {
  std::vector<uint64_t> values;
  const Bytes& fill = params.dataset.fill_value;
  if (fill.size() == params.dataset.dtype.size && fill.size() <= 8) {
    uint64_t bits = 0;
    for (size_t i = 0; i < fill.size(); ++i) {
      const size_t byte = params.dataset.dtype.order == ByteOrder::Big ? fill.size() - 1 - i : i;
      bits |= uint64_t(fill[byte]) << (8 * i);
    }
    values.push_back(bits);
  }
  for (const StageInfo& stage : info.stages) {
    if (stage.type_id == kFillmask && stage.config.size() == 9) values.push_back(load_le(stage.config, 1, 8));
  }
  return values;
}

// Hulls of the decoded finite values, as check_decoded needs them.
struct Hulls {
  // Every value that may stand for an element of the original range: the
  // values not kept exact, +0.0 when one was decoded (NOA leaves +0.0 out of
  // the range, and a small element may decode to it), and an exact value
  // when one was decoded (an element within the bound of it may decode to
  // its bits). Its range plus twice the bound is at least the original range.
  double low = INFINITY, high = -INFINITY;
  // Values farther than the bound from 0, not kept exact: each decodes an
  // element of the original range, so the original range is at least this
  // range minus twice the bound.
  double far_low = INFINITY, far_high = -INFINITY;
};

// What one pass over the values finds (before the widening in hulls_of).
struct Pass {
  Hulls h;
  bool saw_zero = false;
  std::vector<bool> saw_exact;
};

template <typename T, typename U>
void scalar_pass(const uint8_t* data, size_t n, bool big_endian, const std::vector<uint64_t>& exact, T far, Pass& pass) {
  for (size_t i = 0; i < n; ++i) {
    U bits;
    std::memcpy(&bits, data + i * sizeof(U), sizeof(U));
    if (big_endian) bits = sizeof(U) == 4 ? U(__builtin_bswap32(uint32_t(bits))) : U(__builtin_bswap64(uint64_t(bits)));
    T x;
    std::memcpy(&x, &bits, sizeof(U));
    if (!std::isfinite(x)) continue;
    bool kept_exact = false;
    for (size_t k = 0; k < exact.size(); ++k) {
      if (bits == static_cast<U>(exact[k])) pass.saw_exact[k] = kept_exact = true;
    }
    if (kept_exact) continue;
    if (bits == 0) {
      pass.saw_zero = true;
      continue;
    }
    const double v = static_cast<double>(x);
    pass.h.low = std::fmin(pass.h.low, v);
    pass.h.high = std::fmax(pass.h.high, v);
    if (std::fabs(x) > far) {
      pass.h.far_low = std::fmin(pass.h.far_low, v);
      pass.h.far_high = std::fmax(pass.h.far_high, v);
    }
  }
}

#if defined(__SSE2__)
constexpr size_t kVectorExact = 4;  // more exact values than this: the scalar pass

// float32, little-endian, four at a time (GCC does not vectorise the loop
// above: a 16 MiB chunk took 50 ms scalar, as long as decoding it).
template <bool kFar>
size_t vector_pass_f32(const uint8_t* p, size_t n, const std::vector<uint64_t>& exact, float far, Pass& pass) {
  const __m128i exponent = _mm_set1_epi32(0x7F800000);
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128 none_low = _mm_set1_ps(INFINITY), none_high = _mm_set1_ps(-INFINITY);
  const __m128 far4 = _mm_set1_ps(far);
  __m128i values[kVectorExact], seen[kVectorExact];
  for (size_t k = 0; k < exact.size(); ++k) {
    values[k] = _mm_set1_epi32(static_cast<int>(static_cast<uint32_t>(exact[k])));
    seen[k] = _mm_setzero_si128();
  }
  __m128 low = none_low, high = none_high, far_low = none_low, far_high = none_high;
  __m128i zeros = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * i));
    const __m128i infinite = _mm_cmpeq_epi32(_mm_and_si128(bits, exponent), exponent);
    const __m128i zero = _mm_andnot_si128(infinite, _mm_cmpeq_epi32(bits, _mm_setzero_si128()));
    zeros = _mm_or_si128(zeros, zero);
    __m128i skip = _mm_or_si128(infinite, zero);
    for (size_t k = 0; k < exact.size(); ++k) {
      const __m128i is = _mm_andnot_si128(infinite, _mm_cmpeq_epi32(bits, values[k]));
      seen[k] = _mm_or_si128(seen[k], is);
      skip = _mm_or_si128(skip, is);
    }
    const __m128 x = _mm_castsi128_ps(bits);
    const __m128 drop = _mm_castsi128_ps(skip);
    low = _mm_min_ps(low, _mm_or_ps(_mm_and_ps(drop, none_low), _mm_andnot_ps(drop, x)));
    high = _mm_max_ps(high, _mm_or_ps(_mm_and_ps(drop, none_high), _mm_andnot_ps(drop, x)));
    if (kFar) {
      const __m128 near = _mm_or_ps(drop, _mm_cmple_ps(_mm_and_ps(x, magnitude), far4));
      far_low = _mm_min_ps(far_low, _mm_or_ps(_mm_and_ps(near, none_low), _mm_andnot_ps(near, x)));
      far_high = _mm_max_ps(far_high, _mm_or_ps(_mm_and_ps(near, none_high), _mm_andnot_ps(near, x)));
    }
  }
  alignas(16) float lanes[4][4];
  _mm_store_ps(lanes[0], low);
  _mm_store_ps(lanes[1], high);
  _mm_store_ps(lanes[2], far_low);
  _mm_store_ps(lanes[3], far_high);
  for (int k = 0; k < 4; ++k) {
    pass.h.low = std::fmin(pass.h.low, lanes[0][k]);
    pass.h.high = std::fmax(pass.h.high, lanes[1][k]);
    pass.h.far_low = std::fmin(pass.h.far_low, lanes[2][k]);
    pass.h.far_high = std::fmax(pass.h.far_high, lanes[3][k]);
  }
  pass.saw_zero |= _mm_movemask_epi8(zeros) != 0;
  for (size_t k = 0; k < exact.size(); ++k) {
    if (_mm_movemask_epi8(seen[k]) != 0) pass.saw_exact[k] = true;
  }
  return i;
}

// float64, little-endian, two at a time. SSE2 has no 64-bit integer compare:
// equality from 32-bit compares of both halves, finiteness from |x| <= DBL_MAX.
template <bool kFar>
size_t vector_pass_f64(const uint8_t* p, size_t n, const std::vector<uint64_t>& exact, double far, Pass& pass) {
  auto equal64 = [](__m128i a, __m128i b) {
    const __m128i halves = _mm_cmpeq_epi32(a, b);
    return _mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xB1));
  };
  const __m128d magnitude = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d largest = _mm_set1_pd(DBL_MAX);
  const __m128d none_low = _mm_set1_pd(INFINITY), none_high = _mm_set1_pd(-INFINITY);
  const __m128d far2 = _mm_set1_pd(far);
  __m128i values[kVectorExact], seen[kVectorExact];
  for (size_t k = 0; k < exact.size(); ++k) {
    values[k] = _mm_set1_epi64x(static_cast<long long>(exact[k]));
    seen[k] = _mm_setzero_si128();
  }
  __m128d low = none_low, high = none_high, far_low = none_low, far_high = none_high;
  __m128i zeros = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * i));
    const __m128d x = _mm_castsi128_pd(bits);
    const __m128i infinite = _mm_castpd_si128(_mm_cmpnle_pd(_mm_and_pd(x, magnitude), largest));
    const __m128i zero = _mm_andnot_si128(infinite, equal64(bits, _mm_setzero_si128()));
    zeros = _mm_or_si128(zeros, zero);
    __m128i skip = _mm_or_si128(infinite, zero);
    for (size_t k = 0; k < exact.size(); ++k) {
      const __m128i is = _mm_andnot_si128(infinite, equal64(bits, values[k]));
      seen[k] = _mm_or_si128(seen[k], is);
      skip = _mm_or_si128(skip, is);
    }
    const __m128d drop = _mm_castsi128_pd(skip);
    low = _mm_min_pd(low, _mm_or_pd(_mm_and_pd(drop, none_low), _mm_andnot_pd(drop, x)));
    high = _mm_max_pd(high, _mm_or_pd(_mm_and_pd(drop, none_high), _mm_andnot_pd(drop, x)));
    if (kFar) {
      const __m128d near = _mm_or_pd(drop, _mm_cmple_pd(_mm_and_pd(x, magnitude), far2));
      far_low = _mm_min_pd(far_low, _mm_or_pd(_mm_and_pd(near, none_low), _mm_andnot_pd(near, x)));
      far_high = _mm_max_pd(far_high, _mm_or_pd(_mm_and_pd(near, none_high), _mm_andnot_pd(near, x)));
    }
  }
  alignas(16) double lanes[4][2];
  _mm_store_pd(lanes[0], low);
  _mm_store_pd(lanes[1], high);
  _mm_store_pd(lanes[2], far_low);
  _mm_store_pd(lanes[3], far_high);
  for (int k = 0; k < 2; ++k) {
    pass.h.low = std::fmin(pass.h.low, lanes[0][k]);
    pass.h.high = std::fmax(pass.h.high, lanes[1][k]);
    pass.h.far_low = std::fmin(pass.h.far_low, lanes[2][k]);
    pass.h.far_high = std::fmax(pass.h.far_high, lanes[3][k]);
  }
  pass.saw_zero |= _mm_movemask_epi8(zeros) != 0;
  for (size_t k = 0; k < exact.size(); ++k) {
    if (_mm_movemask_epi8(seen[k]) != 0) pass.saw_exact[k] = true;
  }
  return i;
}
#endif

// `bound`: the frame's enforced bound; a value counts as far from 0 when
// its magnitude exceeds it (compared in T against the bound rounded up to T,
// so that a value within the bound of 0 never counts).
template <typename T, typename U>
Pass one_pass(const uint8_t* data, size_t n, bool big_endian, const std::vector<uint64_t>& exact, T far,
              bool far_hulls) {
  Pass pass;
  pass.saw_exact.assign(exact.size(), false);
  size_t done = 0;
#if defined(__SSE2__)
  if (!big_endian && exact.size() <= kVectorExact) {
    if (sizeof(U) == 4) {
      done = far_hulls ? vector_pass_f32<true>(data, n, exact, static_cast<float>(far), pass)
                       : vector_pass_f32<false>(data, n, exact, static_cast<float>(far), pass);
    } else {
      done = far_hulls ? vector_pass_f64<true>(data, n, exact, static_cast<double>(far), pass)
                       : vector_pass_f64<false>(data, n, exact, static_cast<double>(far), pass);
    }
  }
#endif
  scalar_pass<T, U>(data + done * sizeof(U), n - done, big_endian, exact, far, pass);
  return pass;
}

template <typename T, typename U>
Hulls hulls_of(const uint8_t* data, size_t n, bool big_endian, const std::vector<uint64_t>& exact, double bound) {
  T far = static_cast<T>(bound);
  if (static_cast<double>(far) < bound) far = std::nextafter(far, std::numeric_limits<T>::infinity());
  // The far hulls are the main ones whenever both extremes lie farther than
  // the bound from 0 (the usual case); only otherwise does a second pass
  // find them (one pass with them cost 2 ms per 16 MiB float32 chunk, 40% of
  // a one-thread decode; without, about half).
  Pass pass = one_pass<T, U>(data, n, big_endian, exact, far, false);
  if (pass.h.high >= pass.h.low && std::fabs(pass.h.low) > far && std::fabs(pass.h.high) > far) {
    pass.h.far_low = pass.h.low;
    pass.h.far_high = pass.h.high;
  } else if (pass.h.high >= pass.h.low) {
    pass = one_pass<T, U>(data, n, big_endian, exact, far, true);
  }
  Hulls& h = pass.h;
  auto widen = [&](double v) {
    if (!std::isfinite(v)) return;
    h.low = std::fmin(h.low, v);
    h.high = std::fmax(h.high, v);
  };
  if (pass.saw_zero) widen(0.0);
  for (size_t k = 0; k < exact.size(); ++k) {
    if (!pass.saw_exact[k]) continue;
    T x;
    const U bits = static_cast<U>(exact[k]);
    std::memcpy(&x, &bits, sizeof(U));
    widen(static_cast<double>(x));
  }
  return h;
}

}  // namespace

FrameExpectation check_frame(const unsigned cd[], size_t cd_count, const FrameInfo& info) {
  const std::optional<StoredParams> params = stored(cd, cd_count);
  if (!params) return {};
  FrameExpectation target;
  target.chunk = chunk_size(params->dataset);
  if (byte_fallback(*params, info)) return target;
  const DataType& want = params->dataset.dtype;
  if (info.dtype.size != want.size) {
    throw Error("frame holds " + std::to_string(info.dtype.size) + "-byte elements but the dataset's are " +
                std::to_string(want.size) + " bytes (the frame's " + describe(info.dtype) + ", the dataset's " +
                describe(want) + ")");
  }
  if (!target.chunk || info.original_bytes != *target.chunk) {
    throw Error("frame decodes to " + std::to_string(info.original_bytes) + " bytes but a chunk of this dataset is " +
                (target.chunk ? std::to_string(*target.chunk) : std::string("over 2^64")) + " bytes");
  }
  target.exact = true;
  if (!(info.dtype == want)) {
    throw Error("frame holds " + describe(info.dtype) + " elements but the dataset's are " + describe(want));
  }
  if (normal(info.preset) != normal(params->user.preset)) {
    throw Error(std::string("frame was written with preset ") + preset_name(normal(info.preset)) +
                ", the dataset's cd_values say preset " + preset_name(normal(params->user.preset)) + kWhy);
  }
  if (!float_lossy(*params)) return target;
  const FrameBound frame = bound_of(info);
  const double bound = params->user.bound;
  using Kind = FrameBound::Kind;
  switch (frame.kind) {
    case Kind::kNone:
      return target;  // stored losslessly (no finite value, zero range, ...): nothing to compare
    case Kind::kRelative:
      if (params->user.mode != ErrorMode::Rel || frame.value != bound) {
        throw Error("frame was written with the point-wise relative bound REL " + exact_text(frame.value) +
                    ", the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
      }
      return target;
    case Kind::kRangeRelative:
      if (params->user.mode != ErrorMode::Noa || frame.value != bound) {
        throw Error("frame was written with NOA " + exact_text(frame.value) + ", the dataset's cd_values say " +
                    stored_bound_text(*params) + kWhy);
      }
      return target;
    case Kind::kAbsolute:
      if (params->user.mode == ErrorMode::Abs) {
        if (frame.value != bound) {
          throw Error("frame was written with the absolute bound ABS " + exact_text(frame.value) +
                      ", the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
        }
      } else if (params->user.mode != ErrorMode::Noa) {
        throw Error("frame was written with an absolute bound (" + exact_text(frame.value) +
                    "), the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
      }
      return target;  // NOA: after decoding (check_decoded)
  }
  return target;
}

bool needs_decoded_check(const unsigned cd[], size_t cd_count, const FrameInfo& info) {
  if (!is_stored_layout(cd, cd_count) || info.raw) return false;
  StoredParams params;
  try {
    params = decode_stored(cd, cd_count);
  } catch (const Error&) {
    return false;
  }
  return !byte_fallback(params, info) && float_lossy(params) && params.user.mode == ErrorMode::Noa &&
         bound_of(info).kind == FrameBound::Kind::kAbsolute;
}

void check_decoded(const unsigned cd[], size_t cd_count, const FrameInfo& info, const void* decoded, size_t bytes) {
  if (!needs_decoded_check(cd, cd_count, info)) return;
  const StoredParams params = decode_stored(cd, cd_count);
  const double enforced = bound_of(info).value;
  const double bound = params.user.bound;
  const DataType& dtype = params.dataset.dtype;
  const std::vector<uint64_t> exact = exact_values(params, info);
  const auto* data = static_cast<const uint8_t*>(decoded);
  const bool big = dtype.order == ByteOrder::Big;
  const Hulls h = dtype.size == 4 ? hulls_of<float, uint32_t>(data, bytes / 4, big, exact, enforced)
                                  : hulls_of<double, uint64_t>(data, bytes / 8, big, exact, enforced);
  // The engine's bound is the largest double <= bound x range: a relative
  // slack of 1e-9 covers the roundings here, far below any disagreement
  // worth naming (it stops nothing the coding error could explain).
  constexpr double kSlack = 1e-9;
  const double most = h.high >= h.low ? (h.high - h.low) + 2 * enforced : 2 * enforced;
  const bool too_loose = enforced > bound * most * (1 + kSlack);
  // The engine takes a range past the largest double as the largest double.
  const double far = h.far_high >= h.far_low ? std::fmin(h.far_high - h.far_low, DBL_MAX) : 0.0;
  const double least = far - 2 * enforced;
  const bool too_tight = least > 0 && enforced < bound * least * (1 - kSlack);
  if (!too_loose && !too_tight) return;
  // The bound the frame's enforced bound corresponds to, from the decoded range.
  const double range = h.high >= h.low ? h.high - h.low : 0.0;
  throw Error("frame was written with an absolute bound of " + exact_text(enforced) + " over a value range of about " +
              exact_text(range) + " (NOA about " + exact_text(range > 0 ? enforced / range : 0.0) +
              "), the dataset's cd_values say " + stored_bound_text(params) + kWhy);
}

}  // namespace fz::filter
