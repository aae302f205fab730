// The public API around the flows (compress_flow.cpp, decompress_flow.cpp,
// batch.cpp): validation, limits, memory, frame inspection.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "api_internal.hpp"
#include "device_forward.hpp"
#include "common/error.hpp"
#include "fault_injection.hpp"
#include "frame.hpp"
#include "memory_budget.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "pipeline_cache.hpp"
#include "presets/presets.hpp"
#include "stage_names.hpp"
#include "thread_pool.hpp"

#ifndef FZ_VERSION_STRING
#define FZ_VERSION_STRING "0.0.0"
#endif

namespace fz {
namespace {

uint64_t checked_elements(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) throw Error("chunk dimensions overflow 64 bits");
  return n;
}

}  // namespace

const char* version() { return FZ_VERSION_STRING; }

const char* mode_name(ErrorMode m) {
  switch (m) {
    case ErrorMode::Abs: return "abs";
    case ErrorMode::Noa: return "noa";
    case ErrorMode::Rel: return "rel";
  }
  return "unknown";
}

const char* spline_tuning_name(SplineTuning t) {
  switch (t) {
    case SplineTuning::kOff: return "off";
    case SplineTuning::kRatioFirst: return "ratio-first";
    case SplineTuning::kQualityFirst: return "quality-first";
    case SplineTuning::kManual: return "manual";
  }
  return "unknown";
}

void validate(const Options& options, const DataType& dtype) {
  engine::validate_preset(options);
  if (dtype.size == 0) throw Error("element size must be at least 1 byte");
  if (static_cast<uint8_t>(dtype.element_class) > static_cast<uint8_t>(ElementClass::Float))
    throw Error("unknown element class");
  if (dtype.element_class == ElementClass::Float && dtype.size != 2 && dtype.size != 4 && dtype.size != 8)
    throw Error("float elements must be 2, 4 or 8 bytes");
  if (!options.fill_value.empty() && options.fill_value.size() != dtype.size)
    throw Error("fill value size differs from the element size");
  if (!options.missing_value.empty() && options.missing_value.size() != dtype.size)
    throw Error("missing value size differs from the element size");
}

std::vector<uint64_t> checked_chunk_dims(const void* data, size_t bytes, const DataType& dtype,
                                         const std::vector<uint64_t>& dims_in) {
  if (bytes > 0 && data == nullptr) throw Error("null data pointer");
  std::vector<uint64_t> dims = dims_in;
  if (dims.empty()) {
    if (bytes % dtype.size) throw Error("chunk size is not a multiple of the element size");
    dims = {bytes / dtype.size};
  }
  if (dims.size() > engine::kMaxRank) throw Error("rank above 32");
  uint64_t expected = 0;
  if (__builtin_mul_overflow(checked_elements(dims), uint64_t(dtype.size), &expected) || expected != bytes)
    throw Error("chunk holds " + std::to_string(bytes) + " bytes but dims x element size = " +
                std::to_string(expected));
  if (bytes >= kMaxChunkBytes) throw Error("chunk larger than 4 GiB");
  return dims;
}

bool device_api_available() { return engine::cuda_device_count() > 0; }
int usable_cuda_devices() { return engine::cuda_device_count(); }

void require_memory(uint64_t chunk_bytes, uint64_t needed, const char* what) {
  engine::require_memory(chunk_bytes, needed, what);
}

uint64_t total_memory() { return engine::total_memory_bytes(); }

size_t max_frame_bytes(size_t bytes, size_t rank) {
  // A raw frame (the largest): 16 fixed bytes, the element size, original size
  // and dims as varints (at most 10 bytes each), two counts, one stored size
  // and two checksums.
  return bytes + 16 + 10 + 10 + 10 * rank + 2 + 10 + 8;
}

int owning_device(const void* pointer, const char* what) {
  if (!device_api_available()) throw Error("no usable CUDA device (or this build has no CUDA backend)");
  const std::optional<int> device = engine::device_of_pointer(pointer);
  if (!device) throw Error(std::string(what) + " is not device memory");
  return *device;
}


FrameInfo inspect(const void* frame, size_t frame_bytes) {
  return translate_errors("inspect", [&]() -> FrameInfo {
    return engine::parse_frame(static_cast<const uint8_t*>(frame), frame_bytes).info;
  });
}

FrameInfo inspect_header(const void* frame, size_t frame_bytes) {
  return translate_errors("inspect_header", [&]() -> FrameInfo {
    return engine::parse_frame(static_cast<const uint8_t*>(frame), frame_bytes, engine::PayloadCheck::kDeferred).info;
  });
}

}  // namespace fz
