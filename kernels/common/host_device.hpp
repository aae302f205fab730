// Marks functions that the CPU and the CUDA implementation of a stage share, so
// that both compute an element by the same code (nvcc: host and device; any
// other compiler: an ordinary inline function).
#pragma once

#if defined(__CUDACC__)
#define FZ_HOST_DEVICE __host__ __device__
#else
#define FZ_HOST_DEVICE
#endif

// Unrolls the loop that follows in device code, where a loop over a small
// array indexed by its counter must unroll for the array to stay in
// registers; host compilers do as they judge (and would warn of the pragma).
#if defined(__CUDACC__)
#define FZ_UNROLL _Pragma("unroll")
#else
#define FZ_UNROLL
#endif
