// fz_spline_device_bench: the spline stage's CUDA kernels alone (issue 14, work
// in progress), in GPU memory: a float32 field of side^3 (wmag91 mirrored,
// as fz_device_bench builds it) encoded and decoded at NOA-like bounds
// (a share of the value range), best of --reps, GB/s of the field. No
// back end (Huffman and the lossless stages come after the codes): this is the
// predictor's share of a preset's time.
//   fz_spline_device_bench [--data DIR] [--side N] [--reps N]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "spline/spline.hpp"
#include "spline/spline_cuda.hpp"

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "fz_spline_device_bench: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// Mirrored tiling keeps the field smooth across the copies' seams.
size_t mirrored(size_t i, size_t n) {
  const size_t period = 2 * n - 2;
  const size_t r = i % period;
  return r < n ? r : period - r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = FZ_DEFAULT_DATA_DIR;
  if (const char* env = std::getenv("FZ_DATA")) data = env;
  size_t side = 512;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--data") data = argv[i + 1];
    else if (a == "--side") side = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
  }
  const size_t n91 = 91;
  std::vector<float> cube(n91 * n91 * n91);
  std::ifstream in(data + "/wmag91.float", std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(cube.data()), cube.size() * 4)) {
    std::fprintf(stderr, "fz_spline_device_bench: cannot read %s/wmag91.float\n", data.c_str());
    return 1;
  }
  const size_t n = side * side * side;
  std::vector<float> field(n);
  for (size_t z = 0; z < side; ++z)
    for (size_t y = 0; y < side; ++y)
      for (size_t x = 0; x < side; ++x)
        field[(z * side + y) * side + x] =
            cube[(mirrored(z, n91) * n91 + mirrored(y, n91)) * n91 + mirrored(x, n91)];
  const auto [lo, hi] = std::minmax_element(field.begin(), field.end());
  const double range = double(*hi) - double(*lo);
  const std::vector<size_t> dims = {side, side, side};
  const size_t bytes = n * 4;

  uint8_t *d_in = nullptr, *d_codes = nullptr, *d_side = nullptr, *d_out = nullptr, *d_scratch = nullptr;
  uint64_t* d_side_size = nullptr;
  uint32_t* d_status = nullptr;
  const size_t side_capacity = fz::spline::cuda::max_side_bytes(dims, 4);
  const size_t scratch = std::max(fz::spline::cuda::encode_scratch_bytes(dims, 4),
                                  fz::spline::cuda::decode_scratch_bytes(dims, 4));
  if (!ok(cudaMalloc(&d_in, bytes), "cudaMalloc") || !ok(cudaMalloc(&d_codes, n * 2), "cudaMalloc") ||
      !ok(cudaMalloc(&d_side, side_capacity), "cudaMalloc") || !ok(cudaMalloc(&d_out, bytes), "cudaMalloc") ||
      !ok(cudaMalloc(&d_scratch, std::max<size_t>(scratch, 1)), "cudaMalloc") ||
      !ok(cudaMalloc(&d_side_size, 8), "cudaMalloc") || !ok(cudaMalloc(&d_status, 4), "cudaMalloc"))
    return 1;
  if (!ok(cudaMemcpy(d_in, field.data(), bytes, cudaMemcpyHostToDevice), "upload")) return 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf("fz_spline_device_bench: float32 %zu^3 (%.0f MiB, wmag91 mirrored), codes u16 radius 512, best of %d\n\n",
              side, bytes / 1048576.0, reps);
  std::printf("| bound / range | tuning | encode GB/s | decode GB/s | side stream MB | decoded == encoded input within bound |\n");
  std::printf("|---:|---|---:|---:|---:|---|\n");
  int failures = 0;
  for (double rel : {1e-2, 1e-3, 1e-4}) {
    for (fz::spline::Tuning tuning : {fz::spline::Tuning::kOff, fz::spline::Tuning::kRatioFirst}) {
      fz::spline::Config config;
      config.width = 4;
      config.code_bytes = 2;
      config.radius = 512;
      config.alpha = 1.5;
      config.beta = 4;
      config.tuning = tuning;
      const double eb = rel * range;
      float best_encode = 1e30f, best_decode = 1e30f;
      uint64_t side_size = 0;
      for (int r = 0; r < reps; ++r) {
        cudaEventRecord(start);
        if (!ok(fz::spline::cuda::encode(d_in, dims, config, eb, d_codes, d_side, d_side_size, d_scratch, 0), "encode"))
          return 1;
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        best_encode = std::min(best_encode, ms);
      }
      if (!ok(cudaMemcpy(&side_size, d_side_size, 8, cudaMemcpyDeviceToHost), "side size")) return 1;
      for (int r = 0; r < reps; ++r) {
        cudaMemset(d_status, 0, 4);
        cudaEventRecord(start);
        if (!ok(fz::spline::cuda::decode(d_codes, d_side, side_size, dims, 4, 2, d_out, d_status, d_scratch, 0),
                "decode"))
          return 1;
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        best_decode = std::min(best_decode, ms);
      }
      uint32_t status = 0;
      cudaMemcpy(&status, d_status, 4, cudaMemcpyDeviceToHost);
      std::vector<float> back(n);
      cudaMemcpy(back.data(), d_out, bytes, cudaMemcpyDeviceToHost);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += !(std::abs(double(field[i]) - double(back[i])) <= eb);
      failures += bad != 0 || status != 0;
      std::printf("| %g | %s | %.1f | %.1f | %.2f | %s |\n", rel,
                  tuning == fz::spline::Tuning::kOff ? "off" : "ratio-first", bytes / 1e6 / best_encode,
                  bytes / 1e6 / best_decode, side_size / 1e6,
                  bad == 0 && status == 0 ? "yes" : "NO");
    }
  }
  return failures ? 1 : 0;
}
