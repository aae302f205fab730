// NOA's value range on the GPU: the same answers as value_range.hpp's
// finite_range and contains_element, for a chunk already in device memory, so
// that a chunk compressed on the GPU needs no pass over it on the host.
//
// finite_range enqueues two kernels on `stream` and writes a DeviceRange (32
// bytes of device memory) that the caller downloads with its other small
// values, in the same copy, and turns into the CPU's FiniteRange with
// to_finite_range(). The range is found on the elements' bits: each kept
// element maps to an integer key whose order is the order of the values, and
// integer min/max do not depend on the order the threads meet the elements,
// so the result is the same for every launch (and equals the CPU's, which is
// a min/max over the same set: +0.0 is left out, so no two kept elements
// compare equal with different bits, and -0.0 stays -0.0).
//
// All pointers are device pointers; `data` may have any alignment (element-
// aligned data is read 16 bytes at a time, other data byte by byte); bytes
// beyond the last whole element are ignored, as on the CPU. Nothing is
// allocated: finite_range's temporary memory is `scratch`, 256-byte aligned
// (as cudaMalloc returns), finite_range_scratch_bytes() long. The return
// value reports bad arguments (cudaErrorInvalidValue: width other than 4 or
// 8) and launch errors only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "value_range.hpp"

namespace fz::engine::cuda {

// What the device writes. Bits are the elements' own, in native order (low
// `width` bytes); min_bits/max_bits are 0 when `any` is 0.
struct DeviceRange {
  uint64_t min_bits = 0;
  uint64_t max_bits = 0;
  uint32_t any = 0;          // some element is finite, not +0.0 and neither special value
  uint32_t has_fill = 0;     // some element is the fill value
  uint32_t has_missing = 0;  // some element is the missing value (0 when it equals the fill value)
};

size_t finite_range_scratch_bytes(size_t bytes, unsigned width);

// As fz::engine::finite_range over data[0, bytes): width 4 (float32) or 8
// (float64); big_endian: elements stored big-endian; fill, missing: the
// special values' bits in native order (for width 4 their low 32 bits count,
// as on the CPU); both are left out of the range.
cudaError_t finite_range(const uint8_t* data, size_t bytes, unsigned width, bool big_endian,
                         std::optional<uint64_t> fill, std::optional<uint64_t> missing, DeviceRange* result,
                         void* scratch, cudaStream_t stream);
inline cudaError_t finite_range(const uint8_t* data, size_t bytes, unsigned width, bool big_endian,
                                std::optional<uint64_t> fill, DeviceRange* result, void* scratch,
                                cudaStream_t stream) {
  return finite_range(data, bytes, width, big_endian, fill, std::nullopt, result, scratch, stream);
}

// The CPU's FiniteRange from a downloaded DeviceRange (exact: float to double).
FiniteRange to_finite_range(const DeviceRange& range, unsigned width);

// As fz::engine::contains_element: *found (device) receives 1 when some
// element's bits equal `bits` (native order), else 0. Needs no scratch.
cudaError_t contains_element(const uint8_t* data, size_t bytes, unsigned width, bool big_endian, uint64_t bits,
                             uint32_t* found, cudaStream_t stream);

}  // namespace fz::engine::cuda
