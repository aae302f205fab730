// fz_ans_device_bench: the two ANS stages' CUDA coders side by side on real
// codes, in GPU memory (issue 30 item 2): type 14 (ans, a thread per lane of
// 8192) and type 15 (ansi, a warp per lane of interleaved states). Input: the
// spline's u16 code groups of the real fields as `fz_code_entropy_bench
// --dump DIR` writes them (<field>.<NOA>.g<group>.codes); per bound, every
// group concatenated, repeated up to each --symbols count (default 54 and
// 128 million), coded and decoded on the device. Encode is timed as the
// stage runs it (histogram, read back, token counts, read back, host plan,
// coding: everything from the symbols on the device to the stream's length
// there); decode from the parsed plan on (tables, lane offsets, lanes).
// Best of --reps, GB/s of u16 codes; every decode checked against the input,
// and the ratio printed. Links only fz_kernels. Not a test.
//   fz_code_entropy_bench --dump DIR
//   fz_ans_device_bench --codes DIR [--symbols 54,128] [--reps N]
#include <cuda_runtime.h>
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ans/ans.hpp"
#include "ans/ans_cuda.hpp"
#include "ans/interleaved_cuda.hpp"
#include "ans/interleaved_format.hpp"

namespace {

constexpr uint32_t kAlphabet = 8192;  // cuszhi-cr's radius 4096, both ways
constexpr size_t kNoLimit = size_t{1} << 40;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Device memory that frees itself.
struct Device {
  uint8_t* p = nullptr;
  explicit Device(size_t bytes) { check(cudaMalloc(&p, std::max<size_t>(1, bytes)), "cudaMalloc"); }
  ~Device() { cudaFree(p); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
};

std::vector<std::string> files_of(const std::string& dir, const std::string& tag) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.find(tag) != std::string::npos && name.size() > 6 && name.compare(name.size() - 6, 6, ".codes") == 0) {
        names.push_back(dir + "/" + name);
      }
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Best milliseconds of `reps` runs of fn (events around it on the default stream).
float best_ms(int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    check(cudaDeviceSynchronize(), "sync");
    cudaEventRecord(a);
    fn();
    cudaEventRecord(b);
    check(cudaEventSynchronize(b), "run");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = std::min(best, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

std::vector<uint64_t> read_counts(const uint8_t* device, uint32_t alphabet) {
  std::vector<uint64_t> counts(alphabet);
  check(cudaMemcpy(counts.data(), device, 8 * size_t{alphabet}, cudaMemcpyDeviceToHost), "counts back");
  return counts;
}

struct Result {
  size_t coded = 0;
  float enc_ms = 0, dec_ms = 0;
};

// The encoded stream back from the device (its length at `size`).
fz::Bytes stream_back(const uint8_t* out, const uint8_t* size) {
  uint64_t used = 0;
  check(cudaMemcpy(&used, size, 8, cudaMemcpyDeviceToHost), "size back");
  fz::Bytes stream(used);
  check(cudaMemcpy(stream.data(), out, used, cudaMemcpyDeviceToHost), "stream back");
  return stream;
}

// Best decode time of `decode(out, status, scratch)` into 2n bytes, the
// output then checked against the input.
float timed_decode(uint64_t n, const fz::Bytes& host, int reps, size_t scratch_bytes, const char* what,
                   const std::function<void(uint8_t*, uint32_t*, void*)>& decode) {
  Device decoded(2 * n), status(4), scratch(scratch_bytes);
  check(cudaMemset(status.p, 0, 4), "status");
  const float ms = best_ms(reps, [&] { decode(decoded.p, reinterpret_cast<uint32_t*>(status.p), scratch.p); });
  fz::Bytes back(2 * n);
  check(cudaMemcpy(back.data(), decoded.p, 2 * n, cudaMemcpyDeviceToHost), "decoded back");
  uint32_t st = 0;
  check(cudaMemcpy(&st, status.p, 4, cudaMemcpyDeviceToHost), "status back");
  if (st != 0 || back != host) throw std::runtime_error(std::string(what) + ": the GPU decode differs from the input");
  return ms;
}

// Type 14: the whole device forward and inverse (ans_stage_cuda.cpp's calls).
Result bench_ans(const uint8_t* symbols, uint64_t n, const fz::Bytes& host, int reps) {
  namespace ac = fz::ans::cuda;
  const fz::ans::Config config{kAlphabet, 14, 8192};
  Device counts(8 * kAlphabet), bad(8), runs(8 * fz::ans::kRunTokens), mask(ac::mask_bytes(n, config)), size(8);
  std::vector<uint64_t> run_counts(fz::ans::kRunTokens);
  ac::EncodePlan plan;
  std::unique_ptr<Device> out, scratch;
  const auto encode = [&] {
    check(ac::symbol_histogram(symbols, n, kAlphabet, reinterpret_cast<uint64_t*>(counts.p),
                               reinterpret_cast<uint32_t*>(bad.p), nullptr), "ans histogram");
    const std::vector<uint64_t> c = read_counts(counts.p, kAlphabet);
    const ac::TokenPlan tokens = ac::plan_tokens(c.data(), n, config);
    check(ac::count_run_tokens(symbols, tokens, config, reinterpret_cast<uint32_t*>(mask.p),
                               reinterpret_cast<uint64_t*>(runs.p), nullptr), "ans run tokens");
    check(cudaMemcpy(run_counts.data(), runs.p, 8 * run_counts.size(), cudaMemcpyDeviceToHost), "runs back");
    plan = ac::plan_encode(tokens, run_counts.data(), config);
    if (!out) {  // allocated once, outside the later runs' work
      out = std::make_unique<Device>(plan.max_encoded_bytes);
      scratch = std::make_unique<Device>(ac::encode_scratch_bytes(plan));
    }
    check(ac::encode(symbols, reinterpret_cast<uint32_t*>(mask.p), plan, out->p, reinterpret_cast<uint64_t*>(size.p),
                     scratch->p, nullptr), "ans encode");
  };
  encode();  // warm-up, and the buffers
  Result r;
  r.enc_ms = best_ms(reps, encode);
  const fz::Bytes stream = stream_back(out->p, size.p);
  r.coded = stream.size();
  const ac::DecodePlan dplan = ac::plan_decode(stream.data(), stream.size(), stream.size(), config, kNoLimit);
  r.dec_ms = timed_decode(n, host, reps, ac::decode_scratch_bytes(dplan), "ans",
                          [&](uint8_t* decoded, uint32_t* status, void* scratch) {
                            check(ac::decode(out->p, dplan, decoded, status, scratch, nullptr), "ans decode");
                          });
  return r;
}

// Type 15: the whole device forward and inverse (interleaved_stage_cuda.cpp's calls).
Result bench_ansi(const uint8_t* symbols, uint64_t n, const fz::Bytes& host, int reps) {
  namespace ic = fz::ans::interleaved_cuda;
  const fz::ans::InterleavedConfig config{kAlphabet, 14};
  Device counts(8 * kAlphabet), bad(8), size(8);
  std::unique_ptr<Device> tile_counts, out, scratch;
  const auto encode = [&] {
    check(fz::ans::cuda::symbol_histogram(symbols, n, kAlphabet, reinterpret_cast<uint64_t*>(counts.p),
                                          reinterpret_cast<uint32_t*>(bad.p), nullptr), "ansi histogram");
    const std::vector<uint64_t> c = read_counts(counts.p, kAlphabet);
    const ic::TilePlan tiles = ic::plan_tiles(c.data(), n, config);
    if (!tile_counts) tile_counts = std::make_unique<Device>(ic::tile_counts_bytes(tiles));
    check(ic::count_tiles(symbols, tiles, tile_counts->p, nullptr), "ansi tiles");
    fz::ans::interleaved_format::TileHistograms h;
    check(cudaMemcpy(&h, tile_counts->p, ic::kHistogramBytes, cudaMemcpyDeviceToHost), "histograms back");
    const ic::EncodePlan plan = ic::plan_encode(tiles, h, config);
    if (!out) {
      out = std::make_unique<Device>(plan.max_encoded_bytes);
      scratch = std::make_unique<Device>(ic::encode_scratch_bytes(plan));
    }
    check(ic::encode(symbols, tile_counts->p, plan, out->p, reinterpret_cast<uint64_t*>(size.p), scratch->p, nullptr),
          "ansi encode");
  };
  encode();
  Result r;
  r.enc_ms = best_ms(reps, encode);
  const fz::Bytes stream = stream_back(out->p, size.p);
  const size_t used = stream.size();
  r.coded = used;
  const ic::DecodePlan dplan = ic::plan_decode(stream.data(), used, used, config, kNoLimit);
  r.dec_ms = timed_decode(n, host, reps, ic::decode_scratch_bytes(dplan), "ansi",
                          [&](uint8_t* decoded, uint32_t* status, void* scratch) {
                            check(ic::decode(out->p, dplan, decoded, status, scratch, nullptr), "ansi decode");
                          });
  const auto l = fz::ans::interleaved_format::parse(stream.data(), used, used, config, kNoLimit);
  std::fprintf(stderr, "ansi, %llu symbols: C %u, W %u, S %llu, %llu lanes\n", static_cast<unsigned long long>(n),
               l.cap, l.states, static_cast<unsigned long long>(l.lane_symbols),
               static_cast<unsigned long long>(l.lanes));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int reps = 5;
  std::vector<uint64_t> sizes = {54000000, 128000000};
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--codes") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--symbols") == 0) {
      sizes.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end = nullptr;
        const unsigned long long millions = std::strtoull(p, &end, 10);
        if (end == p) break;
        sizes.push_back(millions * 1000000ull);
        p = *end == ',' ? end + 1 : end;
      }
    }
  }
  if (dir.empty() || sizes.empty()) {
    std::fprintf(stderr,
                 "usage: fz_ans_device_bench --codes DIR [--symbols 54,128 (millions)] [--reps N]\n"
                 "       (DIR from fz_code_entropy_bench --dump)\n");
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device");
    std::printf("%s; best of %d; GB/s of u16 codes in GPU memory; encode with its two read backs, decode from the "
                "parsed plan\n\n"
                "| NOA | symbols | ans ratio | ans enc | ans dec | ansi ratio | ansi enc | ansi dec |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|\n",
                prop.name, reps);
    for (const char* noa : {"0.01", "0.001", "0.0001"}) {
      fz::Bytes codes;
      for (const std::string& name : files_of(dir, std::string(".") + noa + ".g")) {
        std::ifstream in(name, std::ios::binary);
        codes.insert(codes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      if (codes.size() < 2) continue;
      codes.resize(codes.size() / 2 * 2);
      for (const uint64_t n : sizes) {
        fz::Bytes host(2 * n);
        for (size_t at = 0; at < host.size(); at += codes.size())
          std::memcpy(host.data() + at, codes.data(), std::min(codes.size(), host.size() - at));
        Device symbols(host.size());
        check(cudaMemcpy(symbols.p, host.data(), host.size(), cudaMemcpyHostToDevice), "upload");
        const Result a = bench_ans(symbols.p, n, host, reps);
        const Result b = bench_ansi(symbols.p, n, host, reps);
        const double bytes = double(host.size());
        std::printf("| %s | %.0fM | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f |\n", noa, double(n) / 1e6,
                    bytes / double(a.coded), bytes / a.enc_ms / 1e6, bytes / a.dec_ms / 1e6, bytes / double(b.coded),
                    bytes / b.enc_ms / 1e6, bytes / b.dec_ms / 1e6);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fz_ans_device_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
