// The quantize stage's format constants and code mapping, shared by the CPU
// (quantize_cpu.cpp) and the GPU (quantize_cuda.cu): IEEE field layout, the
// code limits of quantize.hpp, zigzag. Host and device code.
#pragma once

#include <cstdint>

#include "common/host_device.hpp"

namespace fz::quantize::rules {

template <typename T>
struct Traits;
template <>
struct Traits<float> {
  using U = uint32_t;
  static constexpr int kMantissaBits = 23;
  static constexpr int kBias = 127;
  static constexpr int kMaxBiased = 254;  // largest biased exponent of a finite value
};
template <>
struct Traits<double> {
  using U = uint64_t;
  static constexpr int kMantissaBits = 52;
  static constexpr int kBias = 1023;
  static constexpr int kMaxBiased = 2046;
};

template <typename T>
using UintOf = typename Traits<T>::U;

template <typename T>
constexpr UintOf<T> kSignBit = UintOf<T>{1} << (8 * sizeof(T) - 1);
template <typename T>
constexpr UintOf<T> kMantissaMask = (UintOf<T>{1} << Traits<T>::kMantissaBits) - 1;
template <typename T>
constexpr UintOf<T> kExponentMask = static_cast<UintOf<T>>(~kSignBit<T> & ~kMantissaMask<T>);

// Code limits (leave headroom so that code + 1 never wraps, see quantize.hpp).
// |s| below kAbsLimit makes the integer conversion defined and |b| <= 2^(8W-3).
template <typename T>
constexpr uint64_t kAbsMaxZigzag = (uint64_t{1} << (8 * sizeof(T) - 2)) - 1;
template <typename T>
constexpr uint64_t kRelMaxZigzag = (uint64_t{1} << (8 * sizeof(T) - 3)) - 1;
template <typename T>
constexpr T kAbsLimit = static_cast<T>(uint64_t{1} << (8 * sizeof(T) - 3));
template <typename T>
constexpr T kRelLimit = static_cast<T>(uint64_t{1} << (8 * sizeof(T) - 4));

FZ_HOST_DEVICE inline uint64_t zigzag(int64_t b) {
  return (static_cast<uint64_t>(b) << 1) ^ static_cast<uint64_t>(b >> 63);
}
FZ_HOST_DEVICE inline int64_t unzigzag(uint64_t z) {
  return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
}

}  // namespace fz::quantize::rules
