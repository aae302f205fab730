// The one decompress flow and the public calls that enter it: decompress()
// and decompress_into() for frames in host memory, and decompress_on_device()
// for frames in device memory. The backends are tried in order (execution.hpp):
// the GPU where the policy sends the chunk (Policy::gpu_for), then the CPU,
// which checks everything the GPU did not and names what is wrong.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "api_internal.hpp"
#include "common/error.hpp"
#include "device_forward.hpp"
#include "execution.hpp"
#include "frame.hpp"
#include "memory_budget.hpp"
#include "pipeline_cache.hpp"
#include "thread_pool.hpp"

namespace fz {
namespace {

// Decodes a frame in host memory: the chunk goes into *chunk when given, else
// into `dst` (capacity bytes; null when capacity is 0). Returns its length.
size_t decode_frame(const uint8_t* frame, size_t frame_bytes, uint64_t capacity, uint8_t* dst, Bytes* chunk,
                    FrameInfo* info_out, const engine::Policy& policy) {
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
  // Decoding takes at most about 3/4 of the chunk beyond the output on the
  // CPU (cusz's and cuszhi-cr's codes and Huffman stream, 0.50x cuszhi-tp's
  // codes), plus a few MiB per thread; the GPU path's pinned staging buffer
  // is one chunk (docs/PERFORMANCE.md, "Memory per chunk"). The chunk's size
  // covers both, so a read near the limit fails here, not by the OOM killer
  // (tests/engine/memory_limit_probe.cpp).
  engine::require_memory(info.original_bytes, info.original_bytes, "decompress");
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
    auto exec = engine::make_pool_executor(policy.threads);
    engine::StageContext ctx{*exec, static_cast<size_t>(engine::stream_limit(info.original_bytes))};
    // The GPU decodes into the caller's buffer (the filter's path); decoding
    // into a new Bytes stays on the CPU, which sizes nothing before the streams
    // are checked (a hostile frame cannot make it allocate its claimed size).
    // Under auto, chunks of 256 KiB or more go to the GPU, as for compression:
    // measured on the H100 against its 16-core host (docs/PERFORMANCE.md),
    // one chunk at a time (HDF5's way), the GPU decodes every preset faster
    // from 1 MiB up (1.3x lossless to 6x fzgpu at 1 MiB, 1.4x to 9x at 16 MiB).
    std::optional<size_t> on_device;
    if (into && policy.gpu_for(info.original_bytes))
      on_device = engine::inverse_on_device(*pipeline, parsed.stored, dst, static_cast<size_t>(capacity),
                                            ctx.max_stream_bytes, policy, info.payload_crc);
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

Decoded decompress(const void* frame, size_t frame_bytes, const Options& policy_options) {
  return translate_errors("decompress", [&]() -> Decoded {
    const engine::Policy policy = engine::resolve_policy(policy_options);
    const engine::CpuFeaturesScope features(policy.cpu_features);
    Decoded d;
    FrameInfo info;
    decode_frame(static_cast<const uint8_t*>(frame), frame_bytes, kMaxChunkBytes, nullptr, &d.data, &info, policy);
    d.dtype = info.dtype;
    d.dims = info.dims;
    d.preset = info.preset;
    return d;
  });
}

size_t decompress_into(const void* frame, size_t frame_bytes, void* out, size_t capacity,
                       const Options& policy_options) {
  return translate_errors("decompress", [&]() -> size_t {
    if (capacity > 0 && out == nullptr) throw Error("null output buffer");
    const engine::Policy policy = engine::resolve_policy(policy_options);
    const engine::CpuFeaturesScope features(policy.cpu_features);
    return decode_frame(static_cast<const uint8_t*>(frame), frame_bytes, capacity, static_cast<uint8_t*>(out),
                        nullptr, nullptr, policy);
  });
}

size_t decompress_into_on(const void* frame, size_t frame_bytes, void* out, size_t capacity, unsigned threads,
                          BackendUse use) {
  Options o;
  o.threads = threads;
  if (use == BackendUse::kCpu) o.device = "cpu";
  if (use == BackendUse::kGpu) o.device = "cuda";
  return decompress_into(frame, frame_bytes, out, capacity, o);
}

size_t decompress_on_device(const void* device_frame, size_t frame_bytes, void* device_out, size_t capacity,
                            const Options& policy_options) {
  return translate_errors("decompress_on_device", [&]() -> size_t {
    const int device = owning_device(device_frame, "the frame");
    if (capacity > 0 && owning_device(device_out, "the output buffer") != device)
      throw Error("the frame and the output buffer are on different devices");
    const auto* frame = static_cast<const uint8_t*>(device_frame);
    const Bytes header = engine::read_device_frame_header(frame, frame_bytes, device);
    const FrameInfo info = engine::parse_frame_header(header.data(), header.size(), frame_bytes);
    const auto pipeline = info.raw ? std::make_shared<const engine::Pipeline>()
                                   : engine::cached_pipeline_of_stages(info.stages);
    if (auto n = engine::decompress_device_resident(*pipeline, info, frame, static_cast<uint8_t*>(device_out),
                                                    capacity,
                                                    static_cast<size_t>(engine::stream_limit(info.original_bytes)),
                                                    device))
      return *n;
    // Through the host: a stage without a GPU version, or a stream the GPU
    // refused (the CPU decoder then names what is wrong).
    Bytes host_frame(frame_bytes);
    engine::copy_device_to_host(frame, frame_bytes, host_frame.data(), device);
    Bytes chunk(static_cast<size_t>(std::min<uint64_t>(info.original_bytes, capacity)));
    Options on_host = policy_options;
    on_host.device = "cpu";
    const size_t n = decompress_into(host_frame.data(), host_frame.size(), chunk.data(), chunk.size(), on_host);
    engine::copy_host_to_device(chunk.data(), n, static_cast<uint8_t*>(device_out), device);
    return n;
  });
}

}  // namespace fz
