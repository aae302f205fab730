// fz_staging_bench: the host's side of a decoded chunk's way back from the GPU
// (docs/PERFORMANCE.md, h5py reads). An HDF5 filter must return the decoded
// chunk in memory from malloc, which HDF5 then copies into the caller's array
// and frees; so the chunk crosses PCIe into pinned memory and is copied out of
// it, or goes straight into the malloc'd buffer (registered, or pageable
// through the driver). This times each of those ways for one chunk, and the
// copy HDF5 makes afterwards, on this machine. A benchmark program, not a
// test: it prints a markdown table (median, 10th and 90th percentile of
// --reps runs after a warm-up) and checks every copied chunk's bytes.
//
// The copies out of pinned memory run on --threads threads of the engine's
// own CPU pool, in 16 KiB parts with 1 MiB DMAs, as the engine's download
// does (engine/src/cuda/device_forward.cpp): this measures the engine's copy
// mechanism on the host it runs on, so it reaches that internal pool, as the
// engine's tests do.
//
//   fz_staging_bench [--mib 16] [--threads 16] [--reps 40]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "thread_pool.hpp"

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "fz_staging_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Row {
  std::string what;
  double median, p10, p90;
};

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 16;
  unsigned threads = 16;
  int reps = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--threads" && i + 1 < argc) threads = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: fz_staging_bench [--mib 16] [--threads 16] [--reps 40]\n");
      return 2;
    }
  }
  if (mib < 1 || threads < 1 || reps < 3) {
    std::fprintf(stderr, "fz_staging_bench: --mib and --threads must be >= 1, --reps >= 3\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "fz_staging_bench: no CUDA device\n");
    return 1;
  }
  constexpr size_t kPiece = size_t{1} << 20, kPart = size_t{16} << 10;
  const size_t bytes = mib << 20, pieces = bytes / kPiece, parts = bytes / kPart;
  constexpr uint8_t kByte = 0x5A;

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  uint8_t *device = nullptr, *pinned = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&device), bytes), "cudaMalloc");
  check(cudaMemset(device, kByte, bytes), "cudaMemset");
  check(cudaHostAlloc(reinterpret_cast<void**>(&pinned), bytes, cudaHostAllocDefault), "cudaHostAlloc");
  std::memset(pinned, 0, bytes);
  // The filter's output (malloc'd, reused: warm) and the caller's array.
  auto* out = static_cast<uint8_t*>(std::malloc(bytes));
  auto* array = static_cast<uint8_t*>(std::malloc(bytes));
  if (!out || !array) return 1;
  std::memset(out, 0, bytes);
  std::memset(array, 0, bytes);
  std::vector<cudaEvent_t> events(pieces);
  for (auto& e : events) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
  const auto pool = fz::engine::make_pool_executor(threads);

  auto copy_out = [&](uint8_t* dst, const uint8_t* src) {
    pool->parallel_for(parts, [&](size_t i) { std::memcpy(dst + i * kPart, src + i * kPart, kPart); });
  };
  auto dma = [&](uint8_t* dst, size_t at, size_t n) {
    check(cudaMemcpyAsync(dst + at, device + at, n, cudaMemcpyDeviceToHost, stream), "download");
  };
  // The engine's download: every 1 MiB DMA enqueued at once, each 16 KiB
  // part copied out as soon as its piece has arrived.
  auto pipelined = [&] {
    for (size_t k = 0; k < pieces; ++k) {
      dma(pinned, k * kPiece, kPiece);
      check(cudaEventRecord(events[k], stream), "record");
    }
    std::vector<std::atomic<bool>> arrived(pieces);
    pool->parallel_for(parts, [&](size_t i) {
      const size_t k = i * kPart / kPiece;
      if (!arrived[k].load(std::memory_order_acquire)) {
        check(cudaEventSynchronize(events[k]), "event wait");
        arrived[k].store(true, std::memory_order_release);
      }
      std::memcpy(out + i * kPart, pinned + i * kPart, kPart);
    });
  };
  // A ring of `slots` 1 MiB pieces: the part that finishes a piece's copy
  // enqueues the DMA of the piece `slots` later into the same place.
  auto ring = [&](size_t slots) {
    std::vector<std::atomic<int>> enqueued(pieces), left(pieces);
    std::vector<std::atomic<bool>> arrived(pieces);
    for (size_t k = 0; k < pieces; ++k) {
      enqueued[k] = 0;
      left[k] = static_cast<int>(kPiece / kPart);
      arrived[k] = false;
    }
    auto enqueue = [&](size_t k) {
      check(cudaMemcpyAsync(pinned + (k % slots) * kPiece, device + k * kPiece, kPiece, cudaMemcpyDeviceToHost,
                            stream),
            "download");
      check(cudaEventRecord(events[k], stream), "record");
      enqueued[k].store(1, std::memory_order_release);
    };
    for (size_t k = 0; k < std::min(slots, pieces); ++k) enqueue(k);
    pool->parallel_for(parts, [&](size_t i) {
      const size_t at = i * kPart, k = at / kPiece;
      if (!arrived[k].load(std::memory_order_acquire)) {
        while (!enqueued[k].load(std::memory_order_acquire)) std::this_thread::yield();
        check(cudaEventSynchronize(events[k]), "event wait");
        arrived[k].store(true, std::memory_order_release);
      }
      std::memcpy(out + at, pinned + (k % slots) * kPiece + at % kPiece, kPart);
      if (left[k].fetch_sub(1, std::memory_order_acq_rel) == 1 && k + slots < pieces) enqueue(k + slots);
    });
  };
  auto verify = [&](const uint8_t* p, const char* what) {
    for (size_t i = 0; i < bytes; i += 4093)
      if (p[i] != kByte) {
        std::fprintf(stderr, "fz_staging_bench: %s: wrong byte at %zu\n", what, i);
        std::exit(1);
      }
  };
  std::vector<Row> rows;
  auto time = [&](const std::string& what, const std::function<void()>& body, uint8_t* result) {
    body();  // warm-up
    if (result) {
      check(cudaStreamSynchronize(stream), "sync");
      verify(result, what.c_str());
    }
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) {
      if (result) std::memset(result, 0, 4096);  // (the check reads a byte of every page)
      const auto start = Clock::now();
      body();
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    if (result) verify(result, what.c_str());
    std::sort(us.begin(), us.end());
    rows.push_back({what, us[us.size() / 2], us[us.size() / 10], us[us.size() * 9 / 10]});
  };

  time("DMA into pinned memory", [&] { dma(pinned, 0, bytes); check(cudaStreamSynchronize(stream), "sync"); },
       pinned);
  time("copy out of pinned memory (cached there), " + std::to_string(threads) + " threads",
       [&] { copy_out(out, pinned); }, out);
  time("DMA, then the copy out", [&] {
    dma(pinned, 0, bytes);
    check(cudaStreamSynchronize(stream), "sync");
    copy_out(out, pinned);
  }, out);
  time("DMA in 1 MiB pieces, each copied out on arrival (the engine's way)", pipelined, out);
  for (size_t slots : {4, 8}) time("the same through a ring of " + std::to_string(slots) + " x 1 MiB", [&] { ring(slots); }, out);
  time("DMA into the malloc'd buffer, registered and unregistered each time", [&] {
    check(cudaHostRegister(out, bytes, cudaHostRegisterDefault), "cudaHostRegister");
    dma(out, 0, bytes);
    check(cudaStreamSynchronize(stream), "sync");
    check(cudaHostUnregister(out), "cudaHostUnregister");
  }, out);
  time("DMA into the malloc'd buffer, pageable (the driver stages it)", [&] {
    dma(out, 0, bytes);
    check(cudaStreamSynchronize(stream), "sync");
  }, out);
  time("HDF5's copy into the caller's array: one thread, warm buffers", [&] { std::memcpy(array, out, bytes); },
       array);

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("fz_staging_bench: %zu MiB chunk, GPU %s, %u copy threads, %u hardware threads, %d reps\n\n", mib,
              prop.name, threads, std::thread::hardware_concurrency(), reps);
  std::printf("| way back for one decoded chunk | median us | p10 | p90 | GB/s (median) |\n|---|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", r.what.c_str(), r.median, r.p10, r.p90,
                static_cast<double>(bytes) / r.median / 1e3);
  return 0;
}
