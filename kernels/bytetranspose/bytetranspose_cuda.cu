// CUDA byte transposition (stream format: bytetranspose.hpp).
//
// Both directions are one matrix transpose of bytes: the n whole elements are
// an n x s matrix (row i = element i) whose transpose is the s planes, and
// decoding transposes the s x n plane matrix back. Small elements (the common
// compound sizes) take one thread per element: a thread reads its element's s
// bytes and writes one byte to each plane, so consecutive threads write
// consecutive bytes of every plane. Wide elements would leave that thread
// loop long and the reads scattered, so they go through 32 x 32 shared-memory
// tiles instead, read and written along rows. The trailing bytes (past the
// last whole element) are copied unchanged.
#include "bytetranspose/bytetranspose_cuda.hpp"

namespace fz::bytetranspose::cuda {
namespace {

constexpr uint32_t kMaxElementSize = 1u << 24;
constexpr unsigned kThreads = 256;
// Up to this element size one thread moves one element.
constexpr uint32_t kPerThreadElementSize = 32;
constexpr unsigned kTile = 32;
constexpr unsigned kTileRowsPerPass = 8;  // the tile kernel's blocks are kTile x kTileRowsPerPass threads

// to_planes: out[k*n + i] = in[i*s + k]; otherwise out[i*s + k] = in[k*n + i].
template <bool to_planes>
__global__ void transpose_elements(const uint8_t* in, size_t n, uint32_t s, uint8_t* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    for (uint32_t k = 0; k < s; ++k) {
      if (to_planes) {
        out[static_cast<size_t>(k) * n + i] = in[i * s + k];
      } else {
        out[i * s + k] = in[static_cast<size_t>(k) * n + i];
      }
    }
  }
}

// out[c*rows + r] = in[r*cols + c]: a rows x cols byte matrix transposed, one
// kTile x kTile tile at a time (the extra column keeps the column reads of the
// tile free of shared-memory bank conflicts).
__global__ void __launch_bounds__(kTile * kTileRowsPerPass)
    transpose_tiles(const uint8_t* in, size_t rows, size_t cols, uint8_t* out) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const size_t tile_cols = (cols + kTile - 1) / kTile;
  const size_t tiles = (rows + kTile - 1) / kTile * tile_cols;
  for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const size_t r0 = t / tile_cols * kTile, c0 = t % tile_cols * kTile;
    for (unsigned y = threadIdx.y; y < kTile; y += kTileRowsPerPass) {
      const size_t r = r0 + y, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[y][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();
    for (unsigned y = threadIdx.y; y < kTile; y += kTileRowsPerPass) {
      const size_t c = c0 + y, r = r0 + threadIdx.x;
      if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][y];
    }
    __syncthreads();  // the tile is rewritten by the next iteration
  }
}

unsigned grid_for(size_t items, size_t per_block) {
  size_t blocks = (items + per_block - 1) / per_block;
  if (blocks == 0) blocks = 1;
  if (blocks > 65536) blocks = 65536;  // grid-stride beyond this
  return static_cast<unsigned>(blocks);
}

template <bool to_planes>
cudaError_t transpose(const uint8_t* in, size_t size, uint32_t s, uint8_t* out, cudaStream_t stream) {
  if (s < 1 || s > kMaxElementSize) return cudaErrorInvalidValue;
  if (size == 0) return cudaSuccess;
  const size_t n = size / s;
  if (s == 1 || n == 0) return cudaMemcpyAsync(out, in, size, cudaMemcpyDeviceToDevice, stream);
  if (s <= kPerThreadElementSize) {
    transpose_elements<to_planes><<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, n, s, out);
  } else {
    const size_t rows = to_planes ? n : s, cols = to_planes ? s : n;
    const size_t tiles = (rows + kTile - 1) / kTile * ((cols + kTile - 1) / kTile);
    transpose_tiles<<<grid_for(tiles, 1), dim3(kTile, kTileRowsPerPass), 0, stream>>>(in, rows, cols, out);
  }
  cudaError_t err = cudaGetLastError();
  const size_t whole = n * s;
  if (err == cudaSuccess && size > whole)
    err = cudaMemcpyAsync(out + whole, in + whole, size - whole, cudaMemcpyDeviceToDevice, stream);
  return err;
}

}  // namespace

cudaError_t encode(const uint8_t* in, size_t size, uint32_t s, uint8_t* out, cudaStream_t stream) {
  return transpose<true>(in, size, s, out, stream);
}

cudaError_t decode(const uint8_t* in, size_t size, uint32_t s, uint8_t* out, cudaStream_t stream) {
  return transpose<false>(in, size, s, out, stream);
}

}  // namespace fz::bytetranspose::cuda
