// fz_spline_device_bench: the spline stage's CUDA kernels alone (issue 14, work
// in progress), in GPU memory: a float32 field of side^3 (wmag91 mirrored,
// as fz_device_bench builds it) encoded and decoded at NOA-like bounds
// (a share of the value range), best of --reps, GB/s of the field. No
// back end (Huffman and the lossless stages come after the codes): this is the
// predictor's share of a preset's time. The codes leave in their three level
// groups (spline.hpp); the config's options (code bytes, radius, code form,
// alpha, beta) come from the command line, the defaults as before.
//   fz_spline_device_bench [--data DIR] [--side N] [--reps N] [--code-bytes 1|2]
//                          [--radius R] [--form offset|signed] [--alpha A] [--beta B]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <array>
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
  fz::spline::Config base;  // the options every row shares; tuning varies per row
  base.width = 4;
  base.code_bytes = 2;
  base.radius = 512;
  base.alpha = 1.5;
  base.beta = 4;
  base.code_form = fz::spline::CodeForm::kOffset;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--data") data = argv[i + 1];
    else if (a == "--side") side = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--code-bytes") base.code_bytes = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (a == "--radius") base.radius = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    else if (a == "--alpha") base.alpha = std::strtod(argv[i + 1], nullptr);
    else if (a == "--beta") base.beta = std::strtod(argv[i + 1], nullptr);
    else if (a == "--form") {
      const std::string form = argv[i + 1];
      if (form == "offset") base.code_form = fz::spline::CodeForm::kOffset;
      else if (form == "signed") base.code_form = fz::spline::CodeForm::kSigned;
      else {
        std::fprintf(stderr, "fz_spline_device_bench: --form offset or signed\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "fz_spline_device_bench: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (base.code_bytes != 1 && base.code_bytes != 2) {
    std::fprintf(stderr, "fz_spline_device_bench: --code-bytes 1 or 2\n");
    return 2;
  }
  if (reps < 1) reps = 1;
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

  const fz::spline::CodeFormat format = fz::spline::format_of(base);
  const std::array<size_t, fz::spline::kCodeGroups> group_bytes =
      fz::spline::cuda::code_group_bytes(dims, base.code_bytes);
  const size_t code_bytes_total = group_bytes[0] + group_bytes[1] + group_bytes[2];
  uint8_t *d_in = nullptr, *d_side = nullptr, *d_out = nullptr, *d_scratch = nullptr;
  uint8_t* d_codes[fz::spline::kCodeGroups] = {nullptr, nullptr, nullptr};
  uint64_t* d_side_size = nullptr;
  uint32_t* d_status = nullptr;
  const size_t side_capacity = fz::spline::cuda::max_side_bytes(dims, 4);
  const size_t scratch = std::max(fz::spline::cuda::encode_scratch_bytes(dims, base),
                                  fz::spline::cuda::decode_scratch_bytes(dims, format));
  if (!ok(cudaMalloc(&d_in, bytes), "cudaMalloc") || !ok(cudaMalloc(&d_side, side_capacity), "cudaMalloc") ||
      !ok(cudaMalloc(&d_out, bytes), "cudaMalloc") ||
      !ok(cudaMalloc(&d_scratch, std::max<size_t>(scratch, 1)), "cudaMalloc") ||
      !ok(cudaMalloc(&d_side_size, 8), "cudaMalloc") || !ok(cudaMalloc(&d_status, 4), "cudaMalloc"))
    return 1;
  for (unsigned g = 0; g < fz::spline::kCodeGroups; ++g)
    if (!ok(cudaMalloc(&d_codes[g], std::max<size_t>(group_bytes[g], 1)), "cudaMalloc")) return 1;
  const fz::spline::cuda::CodeStreams codes = {{d_codes[0], d_codes[1], d_codes[2]}};
  const fz::spline::cuda::ConstCodeStreams const_codes = {{d_codes[0], d_codes[1], d_codes[2]}};
  if (!ok(cudaMemcpy(d_in, field.data(), bytes, cudaMemcpyHostToDevice), "upload")) return 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf("fz_spline_device_bench: float32 %zu^3 (%.0f MiB, wmag91 mirrored), codes u%u radius %u %s form "
              "(alpha %g, beta %g), best of %d\n",
              side, bytes / 1048576.0, 8 * base.code_bytes, base.radius,
              base.code_form == fz::spline::CodeForm::kSigned ? "signed" : "offset", base.alpha, base.beta, reps);
  std::printf("code streams: %.2f + %.2f + %.2f = %.2f MB (groups 0, 1, 2)\n\n", group_bytes[0] / 1e6,
              group_bytes[1] / 1e6, group_bytes[2] / 1e6, code_bytes_total / 1e6);
  std::printf("| bound / range | tuning | encode GB/s | decode GB/s | side stream MB | decoded == encoded input within bound |\n");
  std::printf("|---:|---|---:|---:|---:|---|\n");
  int failures = 0;
  for (double rel : {1e-2, 1e-3, 1e-4}) {
    for (fz::spline::Tuning tuning : {fz::spline::Tuning::kOff, fz::spline::Tuning::kRatioFirst}) {
      fz::spline::Config config = base;
      config.tuning = tuning;
      const double eb = rel * range;
      float best_encode = 1e30f, best_decode = 1e30f;
      uint64_t side_size = 0;
      for (int r = 0; r < reps; ++r) {
        cudaEventRecord(start);
        if (!ok(fz::spline::cuda::encode(d_in, dims, config, eb, codes, d_side, d_side_size, d_scratch, 0), "encode"))
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
        if (!ok(fz::spline::cuda::decode(const_codes, group_bytes, d_side, side_size, dims, format, d_out, d_status,
                                         d_scratch, 0),
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
