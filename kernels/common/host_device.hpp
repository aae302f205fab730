// Marks functions that the CPU and the CUDA implementation of a stage share, so
// that both compute an element by the same code (nvcc: host and device; any
// other compiler: an ordinary inline function).
#pragma once

#if defined(__CUDACC__)
#define FZ_HOST_DEVICE __host__ __device__
#else
#define FZ_HOST_DEVICE
#endif
