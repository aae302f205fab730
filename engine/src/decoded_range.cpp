// fz::decoded_hulls (fz/decoded_range.hpp): both hulls a NOA frame check
// needs, in one pass, on the engine's pool.
//
// The loop is lean on purpose: it runs after every NOA chunk a reader
// decodes. Values that must not count are turned into NaN (OR with an
// all-ones mask) rather than blended with +-inf, and MINPS/MAXPS return
// their second operand when either is NaN, so `min(x, acc)` skips them for
// one instruction. +0.0 and the values kept exact need no test for the full
// hull: the check counts them in it whenever they occur (a small element may
// decode to +0.0, an element near an exact value to its bits).
#include "fz/decoded_range.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/blocks.hpp"
#include "common/cpu_features.hpp"
#include "common/float_state.hpp"
#include "thread_pool.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace fz {
namespace {

// Exact values the vector loops take; more falls back to the scalar loop
// (a frame has at most the dataset's fill value and two fillmask values).
constexpr size_t kVectorExact = 4;

struct Partial {
  double low = INFINITY, high = -INFINITY, far_low = INFINITY, far_high = -INFINITY;
  void add(double v, bool far) {
    low = std::min(low, v);
    high = std::max(high, v);
    if (far) {
      far_low = std::min(far_low, v);
      far_high = std::max(far_high, v);
    }
  }
  void merge(const Partial& o) {
    low = std::min(low, o.low);
    high = std::max(high, o.high);
    far_low = std::min(far_low, o.far_low);
    far_high = std::max(far_high, o.far_high);
  }
};

template <typename T, typename U>
void scalar_hulls(const uint8_t* p, size_t n, bool big_endian, const U* exact, size_t n_exact, T far, Partial& out) {
  for (size_t i = 0; i < n; ++i) {
    U bits;
    std::memcpy(&bits, p + i * sizeof(U), sizeof(U));
    if (big_endian) bits = sizeof(U) == 4 ? U(__builtin_bswap32(uint32_t(bits))) : U(__builtin_bswap64(uint64_t(bits)));
    T x;
    std::memcpy(&x, &bits, sizeof(U));
    if (!std::isfinite(x)) continue;
    bool far_value = std::fabs(x) > far;
    for (size_t k = 0; k < n_exact && far_value; ++k) far_value = bits != exact[k];
    out.add(static_cast<double>(x), far_value);
  }
}

#if defined(__SSE2__)
template <typename T>
void add_lanes(Partial& out, const T* low, const T* high, const T* far_low, const T* far_high, int lanes) {
  for (int k = 0; k < lanes; ++k) {
    out.low = std::min<double>(out.low, low[k]);
    out.high = std::max<double>(out.high, high[k]);
    out.far_low = std::min<double>(out.far_low, far_low[k]);
    out.far_high = std::max<double>(out.far_high, far_high[k]);
  }
}

// float32, little-endian, four at a time. Returns the elements done.
template <size_t kExact>
size_t vector_hulls_f32(const uint8_t* p, size_t n, const uint32_t* exact, float far, Partial& out) {
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128 largest = _mm_set1_ps(FLT_MAX);
  const __m128 far4 = _mm_set1_ps(far);
  __m128i values[kExact > 0 ? kExact : 1];
  for (size_t k = 0; k < kExact; ++k) values[k] = _mm_set1_epi32(static_cast<int>(exact[k]));
  __m128 low = _mm_set1_ps(INFINITY), high = _mm_set1_ps(-INFINITY), far_low = low, far_high = high;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * i));
    const __m128 x = _mm_castsi128_ps(bits);
    const __m128 a = _mm_and_ps(x, magnitude);
    const __m128 v = _mm_or_ps(x, _mm_cmpnle_ps(a, largest));  // inf and NaN -> NaN
    low = _mm_min_ps(v, low);
    high = _mm_max_ps(v, high);
    __m128 near = _mm_cmple_ps(a, far4);
    for (size_t k = 0; k < kExact; ++k) near = _mm_or_ps(near, _mm_castsi128_ps(_mm_cmpeq_epi32(bits, values[k])));
    const __m128 f = _mm_or_ps(v, near);
    far_low = _mm_min_ps(f, far_low);
    far_high = _mm_max_ps(f, far_high);
  }
  alignas(16) float lanes[4][4];
  _mm_store_ps(lanes[0], low);
  _mm_store_ps(lanes[1], high);
  _mm_store_ps(lanes[2], far_low);
  _mm_store_ps(lanes[3], far_high);
  add_lanes(out, lanes[0], lanes[1], lanes[2], lanes[3], 4);
  return i;
}

// float64, little-endian, two at a time. SSE2 has no 64-bit integer compare:
// equality from 32-bit compares of both halves.
template <size_t kExact>
size_t vector_hulls_f64(const uint8_t* p, size_t n, const uint64_t* exact, double far, Partial& out) {
  const __m128d magnitude = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d largest = _mm_set1_pd(DBL_MAX);
  const __m128d far2 = _mm_set1_pd(far);
  __m128i values[kExact > 0 ? kExact : 1];
  for (size_t k = 0; k < kExact; ++k) values[k] = _mm_set1_epi64x(static_cast<long long>(exact[k]));
  __m128d low = _mm_set1_pd(INFINITY), high = _mm_set1_pd(-INFINITY), far_low = low, far_high = high;
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8 * i));
    const __m128d x = _mm_castsi128_pd(bits);
    const __m128d a = _mm_and_pd(x, magnitude);
    const __m128d v = _mm_or_pd(x, _mm_cmpnle_pd(a, largest));
    low = _mm_min_pd(v, low);
    high = _mm_max_pd(v, high);
    __m128d near = _mm_cmple_pd(a, far2);
    for (size_t k = 0; k < kExact; ++k) {
      const __m128i halves = _mm_cmpeq_epi32(bits, values[k]);
      near = _mm_or_pd(near, _mm_castsi128_pd(_mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xB1))));
    }
    const __m128d f = _mm_or_pd(v, near);
    far_low = _mm_min_pd(f, far_low);
    far_high = _mm_max_pd(f, far_high);
  }
  alignas(16) double lanes[4][2];
  _mm_store_pd(lanes[0], low);
  _mm_store_pd(lanes[1], high);
  _mm_store_pd(lanes[2], far_low);
  _mm_store_pd(lanes[3], far_high);
  add_lanes(out, lanes[0], lanes[1], lanes[2], lanes[3], 2);
  return i;
}

// AVX2: the loops above, eight floats or four doubles per step (chosen at run
// time, cpu_features.hpp; the same set of values, so the same hulls).
// _CMP_NLE_UQ and _CMP_LE_OS are SSE's cmpnle and cmple, NaN included.
template <size_t kExact>
__attribute__((target("avx2"))) size_t avx2_hulls_f32(const uint8_t* p, size_t n, const uint32_t* exact, float far,
                                                      Partial& out) {
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 largest = _mm256_set1_ps(FLT_MAX);
  const __m256 far8 = _mm256_set1_ps(far);
  __m256i values[kExact > 0 ? kExact : 1];
  for (size_t k = 0; k < kExact; ++k) values[k] = _mm256_set1_epi32(static_cast<int>(exact[k]));
  __m256 low = _mm256_set1_ps(INFINITY), high = _mm256_set1_ps(-INFINITY), far_low = low, far_high = high;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4 * i));
    const __m256 x = _mm256_castsi256_ps(bits);
    const __m256 a = _mm256_and_ps(x, magnitude);
    const __m256 v = _mm256_or_ps(x, _mm256_cmp_ps(a, largest, _CMP_NLE_UQ));
    low = _mm256_min_ps(v, low);
    high = _mm256_max_ps(v, high);
    __m256 near = _mm256_cmp_ps(a, far8, _CMP_LE_OS);
    for (size_t k = 0; k < kExact; ++k)
      near = _mm256_or_ps(near, _mm256_castsi256_ps(_mm256_cmpeq_epi32(bits, values[k])));
    const __m256 f = _mm256_or_ps(v, near);
    far_low = _mm256_min_ps(f, far_low);
    far_high = _mm256_max_ps(f, far_high);
  }
  alignas(32) float lanes[4][8];
  _mm256_store_ps(lanes[0], low);
  _mm256_store_ps(lanes[1], high);
  _mm256_store_ps(lanes[2], far_low);
  _mm256_store_ps(lanes[3], far_high);
  add_lanes(out, lanes[0], lanes[1], lanes[2], lanes[3], 8);
  return i;
}

template <size_t kExact>
__attribute__((target("avx2"))) size_t avx2_hulls_f64(const uint8_t* p, size_t n, const uint64_t* exact, double far,
                                                      Partial& out) {
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d largest = _mm256_set1_pd(DBL_MAX);
  const __m256d far4 = _mm256_set1_pd(far);
  __m256i values[kExact > 0 ? kExact : 1];
  for (size_t k = 0; k < kExact; ++k) values[k] = _mm256_set1_epi64x(static_cast<long long>(exact[k]));
  __m256d low = _mm256_set1_pd(INFINITY), high = _mm256_set1_pd(-INFINITY), far_low = low, far_high = high;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 8 * i));
    const __m256d x = _mm256_castsi256_pd(bits);
    const __m256d a = _mm256_and_pd(x, magnitude);
    const __m256d v = _mm256_or_pd(x, _mm256_cmp_pd(a, largest, _CMP_NLE_UQ));
    low = _mm256_min_pd(v, low);
    high = _mm256_max_pd(v, high);
    __m256d near = _mm256_cmp_pd(a, far4, _CMP_LE_OS);
    for (size_t k = 0; k < kExact; ++k)
      near = _mm256_or_pd(near, _mm256_castsi256_pd(_mm256_cmpeq_epi64(bits, values[k])));
    const __m256d f = _mm256_or_pd(v, near);
    far_low = _mm256_min_pd(f, far_low);
    far_high = _mm256_max_pd(f, far_high);
  }
  alignas(32) double lanes[4][4];
  _mm256_store_pd(lanes[0], low);
  _mm256_store_pd(lanes[1], high);
  _mm256_store_pd(lanes[2], far_low);
  _mm256_store_pd(lanes[3], far_high);
  add_lanes(out, lanes[0], lanes[1], lanes[2], lanes[3], 4);
  return i;
}

template <typename U>
size_t vector_hulls(const uint8_t* p, size_t n, const U* exact, size_t n_exact, double far, Partial& out) {
  // The AVX2 loop first (its tail, under eight floats, goes to the SSE2 one).
  size_t done = 0;
  const bool avx2 = cpu_has_avx2();
  if constexpr (sizeof(U) == 4) {
    const float f = static_cast<float>(far);
    switch (n_exact) {
#define FZ_HULLS_CASE(K)                                                                 \
  case K:                                                                                \
    if (avx2) done = avx2_hulls_f32<K>(p, n, exact, f, out);                             \
    return done + vector_hulls_f32<K>(p + 4 * done, n - done, exact, f, out);
      FZ_HULLS_CASE(0)
      FZ_HULLS_CASE(1)
      FZ_HULLS_CASE(2)
      FZ_HULLS_CASE(3)
      FZ_HULLS_CASE(4)
#undef FZ_HULLS_CASE
    }
  } else {
    switch (n_exact) {
#define FZ_HULLS_CASE(K)                                                                 \
  case K:                                                                                \
    if (avx2) done = avx2_hulls_f64<K>(p, n, exact, far, out);                           \
    return done + vector_hulls_f64<K>(p + 8 * done, n - done, exact, far, out);
      FZ_HULLS_CASE(0)
      FZ_HULLS_CASE(1)
      FZ_HULLS_CASE(2)
      FZ_HULLS_CASE(3)
      FZ_HULLS_CASE(4)
#undef FZ_HULLS_CASE
    }
  }
  return 0;
}
#endif

template <typename T, typename U>
DecodedHulls hulls(const uint8_t* data, size_t n, bool big_endian, const std::vector<uint64_t>& exact_bits,
                   double bound, unsigned threads) {
  // The bound rounded up to T: a value within it of 0 never counts as far.
  T far = static_cast<T>(bound);
  if (!(static_cast<double>(far) >= bound)) far = std::nextafter(far, std::numeric_limits<T>::infinity());
  // Distinct patterns only: the fill value is often also a fillmask value.
  std::vector<U> exact;
  for (uint64_t bits : exact_bits) {
    if (std::find(exact.begin(), exact.end(), static_cast<U>(bits)) == exact.end()) exact.push_back(static_cast<U>(bits));
  }
  // Work items of one block (16 KiB): a 4 MiB chunk gives 256, enough for
  // the pool to use 16 threads (thread_pool.cpp wants 16 items a thread).
  const size_t per_item = kBlockBytes / sizeof(U);
  const size_t items = (n + per_item - 1) / per_item;
  std::vector<Partial> partial(items);
  engine::make_pool_executor(threads)->parallel_for(items, [&](size_t b) {
    const size_t begin = b * per_item, count = std::min(per_item, n - begin);
    const uint8_t* p = data + begin * sizeof(U);
    FloatStateGuard guard;  // denormals-are-zero would compare denormals as 0
    size_t done = 0;
#if defined(__SSE2__)
    if (!big_endian && exact.size() <= kVectorExact)
      done = vector_hulls<U>(p, count, exact.data(), exact.size(), static_cast<double>(far), partial[b]);
#endif
    scalar_hulls<T, U>(p + done * sizeof(U), count - done, big_endian, exact.data(), exact.size(), far, partial[b]);
  });
  Partial total;
  for (const Partial& p : partial) total.merge(p);
  DecodedHulls h;
  if (total.low <= total.high) {
    h.any = true;
    h.min = total.low;
    h.max = total.high;
  }
  if (total.far_low <= total.far_high) {
    h.far_any = true;
    h.far_min = total.far_low;
    h.far_max = total.far_high;
  }
  return h;
}

}  // namespace

DecodedHulls decoded_hulls(const void* data, size_t bytes, const DataType& dtype,
                           const std::vector<uint64_t>& exact_bits, double far, unsigned threads) {
  if (dtype.element_class != ElementClass::Float || (dtype.size != 4 && dtype.size != 8))
    throw Error("decoded_hulls: elements must be float32 or float64");
  if (bytes > 0 && data == nullptr) throw Error("decoded_hulls: null data pointer");
  const auto* p = static_cast<const uint8_t*>(data);
  const bool big = dtype.order == ByteOrder::Big;
  return dtype.size == 4 ? hulls<float, uint32_t>(p, bytes / 4, big, exact_bits, far, threads)
                         : hulls<double, uint64_t>(p, bytes / 8, big, exact_bits, far, threads);
}

}  // namespace fz
