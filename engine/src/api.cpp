// The public API: validation, backend choice, frame assembly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "backend.hpp"
#include "device_forward.hpp"
#include "buffer_pool.hpp"
#include "api_internal.hpp"
#include "common/error.hpp"
#include "fault_injection.hpp"
#include "frame.hpp"
#include "memory_budget.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "pipeline_cache.hpp"
#include "presets.hpp"
#include "stage.hpp"
#include "thread_pool.hpp"

#ifndef FZ_VERSION_STRING
#define FZ_VERSION_STRING "0.0.0"
#endif

namespace fz {
namespace {

// Streams inside one frame never exceed this multiple of the chunk (plus slack
// for tiny chunks); a frame that claims more is hostile or corrupt.
uint64_t stream_limit(uint64_t original_bytes) { return 2 * original_bytes + 65536; }

// Under H5Z_FZ_DEVICE=auto, chunks smaller than this stay on the CPU both
// ways: the GPU chunk path costs 50-300 us per chunk (H100,
// docs/PERFORMANCE.md), which one core beats on chunks of tens of KB.
constexpr uint64_t kAutoGpuMinChunkBytes = uint64_t{256} << 10;

// HDF5 chunks are limited to 4 GiB; so are our frames' decoded sizes, so that a
// hostile frame cannot make us allocate more.
constexpr uint64_t kMaxChunkBytes = uint64_t(1) << 32;

uint64_t checked_elements(const std::vector<uint64_t>& dims) {
  uint64_t n = 1;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) throw Error("chunk dimensions overflow 64 bits");
  return n;
}

// Runs `body`, turning internal exceptions into fz::Error with context.
template <typename F>
auto translate_errors(const char* what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const FormatError& e) {
    throw Error(std::string(what) + ": " + e.what());
  } catch (const UsageError& e) {
    throw Error(std::string(what) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(std::string(what) + ": " + e.what());
  }
}

// Decodes a frame: the chunk goes into *chunk when given, else into `dst`
// (capacity bytes; null when capacity is 0). Returns the chunk's length.
size_t decode_frame(const uint8_t* frame, size_t frame_bytes, uint64_t capacity, uint8_t* dst, Bytes* chunk,
                    FrameInfo* info_out, unsigned threads = 0, BackendUse use = BackendUse::kChosen) {
  // The payload CRC waits until the backend is known: the GPU decoder checks
  // it on the device (the payload goes there anyway), where it costs
  // microseconds instead of the host's pass over the frame.
  engine::ParsedFrame parsed = engine::parse_frame(frame, frame_bytes, engine::PayloadCheck::kDeferred);
  const FrameInfo& info = parsed.info;
  if (info.original_bytes > capacity) {
    engine::check_payload_crc(parsed);  // a corrupted frame is reported as such first
    throw FormatError("frame decodes to " + std::to_string(info.original_bytes) + " bytes, more than the " +
                      std::to_string(capacity) + " allowed");
  }
  if (info_out) *info_out = info;
  // Decoding takes at most about 3/4 of the chunk beyond the output (cusz's
  // codes and Huffman stream; docs/PERFORMANCE.md).
  engine::require_memory(info.original_bytes, info.original_bytes / 4 * 3, "decompress");
  size_t length = 0;
  const bool into = chunk == nullptr;
  if (info.raw) {
    engine::check_payload_crc(parsed);
    const ByteSpan raw = parsed.stored[0];
    if (into && raw.size) std::memcpy(dst, raw.data, raw.size);
    if (!into) chunk->assign(raw.data, raw.data + raw.size);
    length = raw.size;
  } else {
    const auto pipeline = engine::cached_pipeline_of_stages(info.stages);
    auto exec = engine::make_pool_executor(threads);
    engine::StageContext ctx{*exec, static_cast<size_t>(stream_limit(info.original_bytes))};
    std::optional<size_t> on_device;
    const engine::BackendChoice& backend = engine::chosen_backend();
    // The GPU decodes into the caller's buffer (the filter's path); decoding
    // into a new Bytes stays on the CPU, which sizes nothing before the streams
    // are checked (a hostile frame cannot make it allocate its claimed size).
    // Under auto, chunks of 256 KiB or more go to the GPU, as for compression:
    // measured on the H100 against its 16-core host (docs/PERFORMANCE.md),
    // one chunk at a time (HDF5's way), the GPU decodes every preset faster
    // from 1 MiB up (1.3x lossless to 6x fzgpu at 1 MiB, 1.4x to 9x at 16 MiB).
    const bool gpu = use == BackendUse::kGpu ||
                     (use == BackendUse::kChosen &&
                      (backend.explicit_cuda || info.original_bytes >= kAutoGpuMinChunkBytes));
    if (into && backend.backend == engine::Backend::Cuda && gpu)
      on_device = engine::inverse_on_device(*pipeline, parsed.stored, dst, static_cast<size_t>(capacity),
                                            ctx.max_stream_bytes, backend.device, threads, info.payload_crc);
    if (on_device) {
      length = *on_device;
    } else {
      // The GPU did not decode it (or found the payload corrupted): the host
      // checks the CRC and decodes, and reports what is wrong.
      engine::check_payload_crc(parsed);
      if (into) {
        length = pipeline->inverse_into(parsed.stored, dst, static_cast<size_t>(capacity), ctx);
      } else {
        *chunk = pipeline->inverse(parsed.stored, ctx);
        length = chunk->size();
      }
    }
  }
  if (length != info.original_bytes)
    throw FormatError("frame decoded to " + std::to_string(length) + " bytes instead of " +
                      std::to_string(info.original_bytes));
  return length;
}

}  // namespace

const char* version() { return FZ_VERSION_STRING; }

const char* preset_name(Preset p) {
  switch (p) {
    case Preset::Default: return "default";
    case Preset::Lossless: return "lossless";
    case Preset::Pfpl: return "pfpl";
    case Preset::Fzgpu: return "fzgpu";
    case Preset::Cusz: return "cusz";
    case Preset::CuszHiTp: return "cuszhi-tp";
    case Preset::CuszHiCr: return "cuszhi-cr";
  }
  return "unknown";
}

bool preset_is_lossy(Preset p) { return p != Preset::Default && p != Preset::Lossless; }

bool preset_is_available(Preset p) {
  return p == Preset::Default || p == Preset::Lossless || p == Preset::Pfpl || p == Preset::Fzgpu || p == Preset::Cusz;
}

const char* mode_name(ErrorMode m) {
  switch (m) {
    case ErrorMode::Abs: return "abs";
    case ErrorMode::Noa: return "noa";
    case ErrorMode::Rel: return "rel";
  }
  return "unknown";
}

void validate(const Options& options, const DataType& dtype) {
  if (static_cast<uint8_t>(options.preset) > static_cast<uint8_t>(Preset::CuszHiCr))
    throw Error("unknown preset id " + std::to_string(static_cast<unsigned>(options.preset)) +
                " (known: 0 default, 1 lossless, 2 pfpl, 3 fzgpu, 4 cusz, 5 cuszhi-tp, 6 cuszhi-cr)");
  if (!preset_is_available(options.preset))
    throw Error(std::string("preset '") + preset_name(options.preset) +
                "' is not available in this build of H5Z-FZ (available: lossless, pfpl, fzgpu, cusz)");
  if (static_cast<uint8_t>(options.mode) > static_cast<uint8_t>(ErrorMode::Rel))
    throw Error("unknown error-bound mode " + std::to_string(static_cast<unsigned>(options.mode)) +
                " (known: 0 abs, 1 noa, 2 rel)");
  // Point-wise relative bounds need each element quantized on its own; a
  // predictor's error is absolute, so it cannot honour them strictly.
  if (options.mode == ErrorMode::Rel && preset_is_lossy(options.preset) && options.preset != Preset::Pfpl)
    throw Error(std::string("preset '") + preset_name(options.preset) +
                "' cannot guarantee point-wise relative (REL) bounds; use preset pfpl for REL, or mode abs/noa");
  if (preset_is_lossy(options.preset) && !(std::isfinite(options.bound) && options.bound > 0))
    throw Error(std::string("preset '") + preset_name(options.preset) + "' needs a positive, finite error bound");
  if (dtype.size == 0) throw Error("element size must be at least 1 byte");
  if (static_cast<uint8_t>(dtype.element_class) > static_cast<uint8_t>(ElementClass::Float))
    throw Error("unknown element class");
  if (dtype.element_class == ElementClass::Float && dtype.size != 2 && dtype.size != 4 && dtype.size != 8)
    throw Error("float elements must be 2, 4 or 8 bytes");
  if (!options.fill_value.empty() && options.fill_value.size() != dtype.size)
    throw Error("fill value size differs from the element size");
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

namespace {

bool fits(const engine::FrameTarget& target, size_t frame_bytes) {
  return target.data != nullptr && frame_bytes <= target.capacity;
}

// The frame straight into the target when it fits there (the filter's:
// HDF5's chunk buffer), so it is never held twice; else in its own memory.
engine::FrameOut frame_out(const Bytes& header, const std::vector<ByteSpan>& stored, size_t frame_bytes,
                           const engine::FrameTarget& target) {
  engine::FrameOut out;
  if (fits(target, frame_bytes)) {
    engine::place_frame(header, stored, target.data);
    out.written = frame_bytes;
  } else {
    out.frame = engine::assemble_frame(header, stored);
  }
  return out;
}

engine::FrameOut compress_to(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
                       const Options& options, BackendUse use, engine::FrameTarget target) {
  return translate_errors("compress", [&]() -> engine::FrameOut {
    validate(options, dtype);
    const std::vector<uint64_t> dims = checked_chunk_dims(data, bytes, dtype, dims_in);

    FrameInfo info;
    info.preset = options.preset == Preset::Default ? Preset::Lossless : options.preset;
    info.dtype = dtype;
    info.dims = dims;
    info.original_bytes = bytes;

    Options effective = options;
    effective.preset = info.preset;
    engine::chosen_backend();
    try {
      engine::fault_injection::maybe_fail(engine::fault_injection::pipeline_failures);
      // Compressing takes at most about the chunk's size beyond it
      // (docs/PERFORMANCE.md); without that much, the raw frame below needs none.
      engine::require_memory(bytes, bytes, "compress");
      const ByteSpan chunk(static_cast<const uint8_t*>(data), bytes);
      const engine::BackendChoice& backend = engine::chosen_backend();
      // Under auto, small chunks stay on the CPU (kAutoGpuMinChunkBytes).
      std::optional<engine::FrameOut> on_device;
      const bool gpu = use == BackendUse::kGpu ||
                       (use == BackendUse::kChosen && (backend.explicit_cuda || bytes >= kAutoGpuMinChunkBytes));
      if (backend.backend == engine::Backend::Cuda && gpu)
        on_device =
            engine::compress_on_device(chunk, dtype, dims, effective, backend.device, options.threads, target);
      if (on_device) {
        // The GPU wrote the frame itself (its payload CRC computed there),
        // into the target when it went there.
        if (on_device->written || (!on_device->not_smaller && on_device->frame.size() < bytes))
          return std::move(*on_device);
      } else {
        auto exec = engine::make_pool_executor(options.threads);
        const auto pipeline = engine::cached_forward_pipeline(dtype, dims, effective,
                                                              engine::chunk_values(dtype, effective, chunk, *exec));
        engine::StageContext ctx{*exec, static_cast<size_t>(stream_limit(bytes))};
        ctx.frame_limit = bytes;
        std::vector<Bytes> stored = pipeline->forward(chunk, ctx);
        info.stages = pipeline->stage_infos();
        const std::vector<ByteSpan> streams(stored.begin(), stored.end());
        const Bytes header = engine::frame_header(info, streams);
        // Only a frame smaller than the chunk is kept: a larger one gives way
        // to the raw frame below, which still needs the chunk, so the target
        // (maybe the chunk's own memory, whose chunk the pipeline has finished
        // reading) is written only then.
        std::optional<engine::FrameOut> out;
        if (info.frame_bytes < bytes) out = frame_out(header, streams, info.frame_bytes, target);
        for (Bytes& b : stored) engine::release_buffer(std::move(b));
        if (out) return std::move(*out);
      }
    } catch (const NotSmallerError&) {
      // A stage found the frame could not be smaller than the chunk: the raw
      // frame below, as for any such frame.
    } catch (const std::exception& e) {
      // The write path must not fail once the options were accepted (an HDF5
      // optional filter that fails stores the chunk uncompressed, silently):
      // keep the chunk in a raw frame and say why, always.
      std::fprintf(stderr, "H5Z-FZ: compressing a %zu-byte chunk failed (%s); stored it uncompressed in its frame\n",
                   bytes, e.what());
      info.stages.clear();
    }
    // Incompressible: store the chunk itself, so a frame is never more than a
    // small fixed header larger than its chunk; over the chunk itself when
    // the target is its memory and has room for the header (the filter grows
    // HDF5's buffer for large chunks), so no second copy of it is ever made.
    const std::vector<ByteSpan> raw = {ByteSpan(static_cast<const uint8_t*>(data), bytes)};
    info.flags = engine::kFlagRaw;
    info.stages.clear();
    const Bytes header = engine::frame_header(info, raw);
    if (!fits(target, info.frame_bytes)) engine::require_memory(bytes, bytes, "store");
    return frame_out(header, raw, info.frame_bytes, target);
  });
}

}  // namespace

Bytes compress(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
               const Options& options) {
  return compress_with(data, bytes, dtype, dims_in, options, BackendUse::kChosen);
}

Bytes compress_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
                    const Options& options, BackendUse use) {
  return compress_to(data, bytes, dtype, dims_in, options, use, {}).frame;
}

size_t compress_into(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                     const Options& options, void* frame, size_t capacity, Bytes* spill) {
  return compress_into_with(data, bytes, dtype, dims, options, frame, capacity, spill, BackendUse::kChosen);
}

size_t compress_into_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                          const Options& options, void* frame, size_t capacity, Bytes* spill, BackendUse use) {
  if (frame == nullptr && capacity > 0) throw Error("compress_into: null frame buffer");
  engine::FrameOut c = compress_to(data, bytes, dtype, dims, options, use, {static_cast<uint8_t*>(frame), capacity});
  if (c.written) return c.written;
  if (c.frame.size() <= capacity) {  // its own memory: safe over the chunk too
    std::memcpy(frame, c.frame.data(), c.frame.size());
    return c.frame.size();
  }
  if (spill == nullptr)
    throw Error("compress_into: the frame needs " + std::to_string(c.frame.size()) + " bytes, more than the " +
                std::to_string(capacity) + " given");
  *spill = std::move(c.frame);
  return 0;
}

Decoded decompress(const void* frame, size_t frame_bytes) {
  return translate_errors("decompress", [&]() -> Decoded {
    Decoded d;
    FrameInfo info;
    decode_frame(static_cast<const uint8_t*>(frame), frame_bytes, kMaxChunkBytes, nullptr, &d.data, &info);
    d.dtype = info.dtype;
    d.dims = info.dims;
    d.preset = info.preset;
    return d;
  });
}

size_t decompress_into_on(const void* frame, size_t frame_bytes, void* out, size_t capacity, unsigned threads,
                          BackendUse use) {
  return translate_errors("decompress", [&]() -> size_t {
    if (capacity > 0 && out == nullptr) throw Error("null output buffer");
    return decode_frame(static_cast<const uint8_t*>(frame), frame_bytes, capacity, static_cast<uint8_t*>(out),
                        nullptr, nullptr, threads, use);
  });
}

size_t decompress_into(const void* frame, size_t frame_bytes, void* out, size_t capacity) {
  return decompress_into_on(frame, frame_bytes, out, capacity, 0);
}

bool device_api_available() { return engine::cuda_device_count() > 0; }

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

namespace {

int owning_device(const void* pointer, const char* what) {
  if (!device_api_available()) throw Error("no usable CUDA device (or this build has no CUDA backend)");
  const std::optional<int> device = engine::device_of_pointer(pointer);
  if (!device) throw Error(std::string(what) + " is not device memory");
  return *device;
}

// CUDA failures inside the device-resident calls reach the caller as Error.
template <typename F>
auto device_call(const char* what, F&& body) -> decltype(body()) {
  return translate_errors(what, std::forward<F>(body));
}

}  // namespace

size_t compress_on_device(const void* device_data, size_t bytes, const DataType& dtype,
                          const std::vector<uint64_t>& dims_in, const Options& options, void* device_frame,
                          size_t frame_capacity) {
  return device_call("compress_on_device", [&]() -> size_t {
    validate(options, dtype);
    if (bytes > 0 && device_data == nullptr) throw Error("null data pointer");
    const std::vector<uint64_t> dims = checked_chunk_dims(device_data, bytes, dtype, dims_in);
    const int device = owning_device(device_frame, "the frame buffer");
    if (bytes && owning_device(device_data, "the chunk") != device)
      throw Error("the chunk and the frame buffer are on different devices");
    Options effective = options;
    if (effective.preset == Preset::Default) effective.preset = Preset::Lossless;
    if (auto n = engine::compress_device_resident(static_cast<const uint8_t*>(device_data), bytes, dtype, dims,
                                                  effective, static_cast<uint8_t*>(device_frame), frame_capacity,
                                                  device))
      return *n;
    // A stage without a GPU version: through the host, the same frame.
    Bytes host(bytes);
    engine::copy_device_to_host(static_cast<const uint8_t*>(device_data), bytes, host.data(), device);
    const Bytes frame = compress(host.data(), bytes, dtype, dims, options);
    if (frame.size() > frame_capacity)
      throw Error("the frame needs " + std::to_string(frame.size()) + " bytes of device memory, " +
                  std::to_string(frame_capacity) + " given (max_frame_bytes() always suffices)");
    engine::copy_host_to_device(frame.data(), frame.size(), static_cast<uint8_t*>(device_frame), device);
    return frame.size();
  });
}

size_t decompress_on_device(const void* device_frame, size_t frame_bytes, void* device_out, size_t capacity) {
  return device_call("decompress_on_device", [&]() -> size_t {
    const int device = owning_device(device_frame, "the frame");
    if (capacity > 0 && owning_device(device_out, "the output buffer") != device)
      throw Error("the frame and the output buffer are on different devices");
    const auto* frame = static_cast<const uint8_t*>(device_frame);
    const Bytes header = engine::read_device_frame_header(frame, frame_bytes, device);
    const FrameInfo info = engine::parse_frame_header(header.data(), header.size(), frame_bytes);
    const auto pipeline = info.raw ? std::make_shared<const engine::Pipeline>()
                                   : engine::cached_pipeline_of_stages(info.stages);
    if (auto n = engine::decompress_device_resident(*pipeline, info, frame, static_cast<uint8_t*>(device_out),
                                                    capacity, static_cast<size_t>(stream_limit(info.original_bytes)),
                                                    device))
      return *n;
    // Through the host: a stage without a GPU version, or a stream the GPU
    // refused (the CPU decoder then names what is wrong).
    Bytes host_frame(frame_bytes);
    engine::copy_device_to_host(frame, frame_bytes, host_frame.data(), device);
    Bytes chunk(static_cast<size_t>(std::min<uint64_t>(info.original_bytes, capacity)));
    const size_t n = decompress_into(host_frame.data(), host_frame.size(), chunk.data(), chunk.size());
    engine::copy_host_to_device(chunk.data(), n, static_cast<uint8_t*>(device_out), device);
    return n;
  });
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
