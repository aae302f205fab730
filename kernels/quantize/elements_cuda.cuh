// The quantize stage's element rules on the GPU: the encoder's code of one
// element, operation for operation the CPU's (encode_cpu.cpp), on the shared
// rules of quantize_rules.hpp (exact tests, Lg / Pw, field layout).
// Internal to quantize_cuda.cu.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/blocks.hpp"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize::cuda::device {

constexpr unsigned kThreads = 256;

template <typename T>
struct DTraits;

// The shared field layout (quantize_rules.hpp) plus single-rounding device arithmetic.
template <>
struct DTraits<float> : rules::Traits<float> {
  __device__ static float from_bits(uint32_t u) { return __uint_as_float(u); }
  __device__ static uint32_t to_bits(float v) { return __float_as_uint(v); }
  __device__ static float mul(float a, float b) { return __fmul_rn(a, b); }
  __device__ static float add(float a, float b) { return __fadd_rn(a, b); }
  __device__ static float sub(float a, float b) { return __fsub_rn(a, b); }
  __device__ static float round_half_away(float s) { return roundf(s); }
};

template <>
struct DTraits<double> : rules::Traits<double> {
  __device__ static double from_bits(uint64_t u) { return __longlong_as_double(static_cast<long long>(u)); }
  __device__ static uint64_t to_bits(double v) { return static_cast<uint64_t>(__double_as_longlong(v)); }
  __device__ static double mul(double a, double b) { return __dmul_rn(a, b); }
  __device__ static double add(double a, double b) { return __dadd_rn(a, b); }
  __device__ static double sub(double a, double b) { return __dsub_rn(a, b); }
  __device__ static double round_half_away(double s) { return round(s); }
};

template <typename T>
using UintOf = typename DTraits<T>::U;
using rules::kAbsLimit;
using rules::kAbsMaxZigzag;
using rules::kExponentMask;
using rules::kMantissaMask;
using rules::kRelLimit;
using rules::kRelMaxZigzag;
using rules::kSignBit;
using rules::unzigzag;
using rules::zigzag;

template <typename T>
constexpr unsigned kBlockElements = static_cast<unsigned>(kBlockBytes / sizeof(T));
template <typename T>
constexpr unsigned kPerThread = kBlockElements<T> / kThreads;


using rules::abs_code;
using rules::is_nan_or_inf;
using rules::lg;
using rules::pw;
using rules::within_abs;
using rules::within_rel;

template <typename T>
struct DevicePlan {
  T step;
  T inverse;
  double check;
  UintOf<T> fill;
  bool has_fill;
};

// encode_abs_element of the CPU, operation for operation.
template <typename T>
__device__ __forceinline__ UintOf<T> encode_abs_element(UintOf<T> bits, const DevicePlan<T>& plan) {
  using D = DTraits<T>;
  if (is_nan_or_inf<T>(bits) || ((bits & kExponentMask<T>) == 0 && bits != 0) || (plan.has_fill && bits == plan.fill))
    return 0;
  const T x = D::from_bits(bits);
  const T s = D::mul(x, plan.inverse);
  if (!(fabs(s) < kAbsLimit<T>)) return 0;
  const int64_t b = static_cast<int64_t>(D::round_half_away(s));
  const T xr = D::mul(static_cast<T>(b), plan.step);
  if (within_abs(static_cast<double>(x), static_cast<double>(xr), plan.check)) return abs_code<T>(b);
  if (xr == xr) {
    const int64_t b2 = x > xr ? b + 1 : b - 1;
    const T xr2 = D::mul(static_cast<T>(b2), plan.step);
    if (within_abs(static_cast<double>(x), static_cast<double>(xr2), plan.check)) return abs_code<T>(b2);
  }
  return 0;
}

// The element rule of the CPU's encode_rel_block.
template <typename T>
__device__ __forceinline__ UintOf<T> encode_rel_element(UintOf<T> bits, const DevicePlan<T>& plan) {
  using D = DTraits<T>;
  using U = UintOf<T>;
  const U magnitude = bits & static_cast<U>(~kSignBit<T>);
  if (plan.has_fill && bits == plan.fill) return 0;
  if (magnitude == 0) return bits == 0 ? 1 : 2;
  if (is_nan_or_inf<T>(bits) || (bits & kExponentMask<T>) == 0) return 0;
  const T a = D::from_bits(magnitude);
  const T s = D::mul(lg(a), plan.inverse);
  if (!(fabs(s) < kRelLimit<T>)) return 0;
  const int64_t b = static_cast<int64_t>(D::round_half_away(s));
  const uint64_t z = zigzag(b);
  T r;
  if (z <= kRelMaxZigzag<T> && pw(D::mul(static_cast<T>(b), plan.step), r) &&
      within_rel(static_cast<double>(a), static_cast<double>(r), plan.check))
    return static_cast<U>(3 + ((z << 1) | static_cast<uint64_t>(bits >> (8 * sizeof(T) - 1))));
  return 0;
}

__device__ __forceinline__ unsigned block_elements(uint64_t n, unsigned per_block, uint64_t block = blockIdx.x) {
  const uint64_t rest = n - block * per_block;
  return static_cast<unsigned>(rest < per_block ? rest : per_block);
}


}  // namespace fz::quantize::cuda::device
