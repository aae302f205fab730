#include "backend.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fz/fz.hpp"

namespace fz::engine {

#ifndef FZ_HAVE_CUDA
int cuda_device_count() { return 0; }
#endif

namespace {

BackendChoice decide() {
  const char* env = std::getenv("H5Z_FZ_DEVICE");
  const std::string wanted = env && *env ? env : "auto";
  if (wanted != "auto" && wanted != "cpu" && wanted != "cuda" && wanted.rfind("cuda:", 0) != 0)
    throw Error("H5Z_FZ_DEVICE='" + wanted + "' is not one of auto, cpu, cuda, cuda:N");
  BackendChoice c;
  if (wanted == "cpu") {
    c.reason = "H5Z_FZ_DEVICE=cpu";
  } else {
    const int devices = cuda_device_count();
    c.reason = "CPU backend (" + std::to_string(devices) +
               " CUDA device(s) seen; this build has no CUDA stages yet)";
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
