// The LORENZO CUDA decoder's inclusive sums along one axis for chunks of long
// rows: a thread per column, or a scan by key over the axis's order; and the
// conversion of the sums to values.
// Internal to the LORENZO CUDA sources: included by one translation unit
// (non-template kernels and device functions are static, as they were there).
#pragma once

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_scan.cuh>
#include <cstddef>
#include <cstdint>

#include "lorenzo/common_cuda.cuh"
#include "lorenzo/outliers_cuda.cuh"

namespace fz::lorenzo::cuda::detail {

using namespace rules;  // the per-element rules the CPU shares
using fz::cuda_detail::load_word;
using fz::cuda_detail::store_word;

// Inclusive sums along y (Axis 1) or z (Axis 2), one thread per column.
template <typename U, int Axis>
__global__ void __launch_bounds__(kThreads) column_sums(U* d, Shape s) {
  const size_t columns = Axis == 1 ? s.nz * s.nx : s.ny * s.nx;
  const size_t c = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= columns) return;
  size_t at, stride, len;
  if (Axis == 1) {
    at = (c / s.nx) * s.ny * s.nx + c % s.nx;
    stride = s.nx;
    len = s.ny;
  } else {
    at = c;
    stride = s.nx * s.ny;
    len = s.nz;
  }
  U acc = 0;
  for (size_t k = 0; k < len; ++k, at += stride) {
    acc += d[at];
    d[at] = acc;
  }
}

// Position j of the axis-major order (the axis fastest) -> element index, and
// j -> its line (the key of the scan).
struct AxisOrder {
  Shape s;
  int axis;  // 0 x, 1 y, 2 z
  __host__ __device__ size_t operator()(size_t j) const {
    if (axis == 0) return j;
    if (axis == 1) {  // j = (z * nx + x) * ny + y
      const size_t y = j % s.ny, zx = j / s.ny;
      return ((zx / s.nx) * s.ny + y) * s.nx + zx % s.nx;
    }
    const size_t z = j % s.nz, yx = j / s.nz;  // j = (y * nx + x) * nz + z
    return z * s.ny * s.nx + yx;
  }
};
struct LineOf {
  size_t length;
  __host__ __device__ size_t operator()(size_t j) const { return j / length; }
};

using Counting = thrust::counting_iterator<size_t>;
using KeyIterator = thrust::transform_iterator<LineOf, Counting>;
using PositionIterator = thrust::transform_iterator<AxisOrder, Counting>;

template <typename U>
using PermutedIterator = thrust::permutation_iterator<U*, PositionIterator>;

template <typename U>
cudaError_t scan_axis(void* temp, size_t& temp_bytes, const U* src, U* dst, const Shape& s, int axis,
                      cudaStream_t stream) {
  const size_t length = axis == 0 ? s.nx : axis == 1 ? s.ny : s.nz;
  const KeyIterator keys(Counting(0), LineOf{length});
  const PositionIterator positions(Counting(0), AxisOrder{s, axis});
  PermutedIterator<U> in(const_cast<U*>(src), positions);
  PermutedIterator<U> out(dst, positions);
  return cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys, in, out, static_cast<uint64_t>(s.n),
                                            ::cuda::std::equal_to<>(), stream);
}

template <typename U>
size_t scan_axis_bytes(const Shape& s) {
  size_t most = 0;
  for (int axis = 0; axis < 3; ++axis) {
    size_t bytes = 0;
    scan_axis<U>(nullptr, bytes, nullptr, nullptr, s, axis, nullptr);
    if (bytes > most) most = bytes;
  }
  return most;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    convert(const typename Traits<T>::U* p, size_t n, T eb2, uint8_t* out, uint32_t* status) {
  const size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  if (!store_value<T>(p[i], eb2, out, i)) atomicOr(status, kValueOutOfRange);
}

}  // namespace fz::lorenzo::cuda::detail
