#include "backend.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "device_forward.hpp"
#include "fz/fz.hpp"

namespace fz::engine {

#ifndef FZ_HAVE_CUDA
int cuda_device_count() { return 0; }
std::optional<std::vector<Bytes>> forward_on_device(const Pipeline&, ByteSpan, int) { return std::nullopt; }
bool runs_on_device(const Pipeline&) { return false; }
std::optional<size_t> inverse_on_device(const Pipeline&, const std::vector<ByteSpan>&, uint8_t*, size_t, size_t, int,
                                        unsigned, std::optional<uint32_t>) {
  return std::nullopt;
}
bool inverse_runs_on_device(const Pipeline&) { return false; }
std::optional<FrameOut> compress_on_device(ByteSpan, const DataType&, const std::vector<uint64_t>&,
                                                   const Options&, int, unsigned, FrameTarget) {
  return std::nullopt;
}
std::optional<int> device_of_pointer(const void*) { return std::nullopt; }
// The device-resident entry points check device_of_pointer first: never reached.
std::optional<size_t> compress_device_resident(const uint8_t*, size_t, const DataType&, const std::vector<uint64_t>&,
                                               const Options&, uint8_t*, size_t, int) {
  throw Error("this build has no CUDA backend");
}
Bytes read_device_frame_header(const uint8_t*, size_t, int) { throw Error("this build has no CUDA backend"); }
std::optional<size_t> decompress_device_resident(const Pipeline&, const FrameInfo&, const uint8_t*, uint8_t*, size_t,
                                                 size_t, int) {
  throw Error("this build has no CUDA backend");
}
void copy_device_to_host(const uint8_t*, size_t, uint8_t*, int) { throw Error("this build has no CUDA backend"); }
void copy_host_to_device(const uint8_t*, size_t, uint8_t*, int) { throw Error("this build has no CUDA backend"); }
#endif

namespace {

BackendChoice decide() {
  const char* env = std::getenv("H5Z_FZ_DEVICE");
  const std::string wanted = env && *env ? env : "auto";
  int asked = -1;  // cuda:N
  if (wanted.rfind("cuda:", 0) == 0) {
    char* end = nullptr;
    const long n = std::strtol(wanted.c_str() + 5, &end, 10);
    if (end == wanted.c_str() + 5 || *end != '\0' || n < 0 || n > 1024)
      throw Error("H5Z_FZ_DEVICE='" + wanted + "': N in cuda:N must be a device number");
    asked = static_cast<int>(n);
  } else if (wanted != "auto" && wanted != "cpu" && wanted != "cuda") {
    throw Error("H5Z_FZ_DEVICE='" + wanted + "' is not one of auto, cpu, cuda, cuda:N");
  }
  BackendChoice c;
  if (wanted == "cpu") {
    c.reason = "CPU backend (H5Z_FZ_DEVICE=cpu)";
    return c;
  }
  const int devices = cuda_device_count();
  const int device = asked >= 0 ? asked : 0;
  if (device < devices) {
    c.backend = Backend::Cuda;
    c.device = device;
    c.explicit_cuda = wanted != "auto";
    c.reason = "CUDA device " + std::to_string(device) + " of " + std::to_string(devices) +
               " (stages without a GPU version, and chunks the GPU fails on, run on the CPU" +
               (c.explicit_cuda ? std::string(")")
                                : "; under auto, chunks under 256 KiB run on the CPU, faster for them)");
  } else if (wanted == "auto") {
    c.reason = "CPU backend (" + std::to_string(devices) + " CUDA device(s) usable)";
  } else {  // asked for explicitly: said even without H5Z_FZ_VERBOSE
    throw Error("H5Z_FZ_DEVICE=" + wanted + " cannot be honoured: " + std::to_string(devices) +
                " CUDA device(s) usable");
  }
  return c;
}

}  // namespace

const BackendChoice& chosen_backend() {
  static std::once_flag once;
  static BackendChoice choice;
  static std::string error;
  std::call_once(once, [] {
    try {
      choice = decide();
    } catch (const Error& e) {
      error = e.what();
      choice.reason = "CPU backend (" + error + ")";
    }
    // A malformed setting is said even without H5Z_FZ_VERBOSE: the user asked for something we ignore.
    if (!error.empty() || std::getenv("H5Z_FZ_VERBOSE")) std::fprintf(stderr, "H5Z-FZ: %s\n", choice.reason.c_str());
  });
  return choice;
}

}  // namespace fz::engine
