// The one compress flow (execution.hpp) and the public calls that enter it:
// compress() and compress_into() for chunks in host memory, and
// compress_on_device() for chunks in device memory.
#include <cstring>
#include <string>

#include "api_internal.hpp"
#include "buffer_pool.hpp"
#include "common/error.hpp"
#include "device_forward.hpp"
#include "execution.hpp"
#include "fault_injection.hpp"
#include "frame.hpp"
#include "memory_budget.hpp"
#include "pipeline_cache.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz {
namespace engine {
namespace {

// The frame straight into the target when it fits there (the filter's:
// HDF5's chunk buffer), so it is never held twice; else in its own memory.
FrameOut frame_out(const Bytes& header, const std::vector<ByteSpan>& stored, size_t frame_bytes,
                   const FrameTarget& target) {
  FrameOut out;
  if (fits(target, frame_bytes)) {
    place_frame(header, stored, target.data);
    out.written = frame_bytes;
  } else {
    out.frame = assemble_frame(header, stored);
  }
  return out;
}

class CpuEncoder final : public ChunkEncoder {
 public:
  CpuEncoder(ByteSpan chunk, const Policy& policy) : chunk_(chunk), exec_(make_pool_executor(policy.threads)) {}

  FiniteRange facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options) override {
    return chunk_facts(dtype, dims, options, chunk_, *exec_);
  }
  bool runs(const Pipeline&) const override { return true; }

  FrameOut encode(const Pipeline& pipeline, const FrameInfo& description, FrameTarget target) override {
    StageContext ctx{*exec_, static_cast<size_t>(stream_limit(chunk_.size))};
    ctx.frame_limit = chunk_.size;
    std::vector<Bytes> stored = pipeline.forward(chunk_, ctx);
    FrameInfo info = description;
    const std::vector<ByteSpan> streams(stored.begin(), stored.end());
    const Bytes header = frame_header(info, streams);
    // Only a frame smaller than the chunk is kept: a larger one gives way to
    // the raw frame, which still needs the chunk, so the target (maybe the
    // chunk's own memory, whose chunk the pipeline has finished reading) is
    // written only then.
    FrameOut out;
    if (info.frame_bytes < chunk_.size)
      out = frame_out(header, streams, info.frame_bytes, target);
    else
      out.not_smaller = true;
    for (Bytes& b : stored) release_buffer(std::move(b));
    return out;
  }

 private:
  ByteSpan chunk_;
  std::unique_ptr<Executor> exec_;
};

bool kept(const FrameOut& out, uint64_t chunk_bytes) {
  return !out.not_smaller && (out.written || out.frame.size() < chunk_bytes);
}

}  // namespace

std::unique_ptr<ChunkEncoder> make_cpu_encoder(ByteSpan chunk, const Policy& policy) {
  return std::make_unique<CpuEncoder>(chunk, policy);
}

FrameOut store_raw_on_host(ByteSpan chunk, const FrameInfo& description, FrameTarget target) {
  FrameInfo info = description;
  const std::vector<ByteSpan> raw = {chunk};
  const Bytes header = frame_header(info, raw);
  if (!fits(target, info.frame_bytes)) require_memory(chunk.size, chunk.size, "store");
  return frame_out(header, raw, info.frame_bytes, target);
}

FrameOut compress_through(const std::vector<EncoderFactory>& backends, const RawWriter& store_raw, FrameInfo info,
                          const Options& options, const Policy& policy, FrameTarget target, ChunkPlace place) {
  const uint64_t bytes = info.original_bytes;
  try {
    if (place == ChunkPlace::kHost) {
      fault_injection::maybe_fail(fault_injection::pipeline_failures);
      // Compressing takes at most about the chunk's size beyond it, but cusz
      // on data it hardly compresses: 1.72x at NOA 1e-3 on noise, its codes
      // and outlier records beside its Huffman stream (docs/PERFORMANCE.md,
      // "Memory per chunk"); without that much, the raw frame below needs none.
      const uint64_t needed = options.preset == Preset::Cusz ? bytes / 4 * 7 : bytes;
      require_memory(bytes, needed, "compress");
    }
    bool ran = false;
    for (const EncoderFactory& make : backends) {
      std::unique_ptr<ChunkEncoder> encoder = make();
      if (!encoder) continue;
      try {
        const FiniteRange values = encoder->facts(info.dtype, info.dims, options);
        // A chunk holding fill or missing elements goes through FILLMASK
        // first, whose values stream is a second chunk beside the codes:
        // 1.7-2.0x the chunk on the CPU (docs/PERFORMANCE.md, "Memory per
        // chunk"; the check above reserved less).
        const bool lossy = options.preset != Preset::Lossless && options.preset != Preset::Default;
        if (place == ChunkPlace::kHost && lossy && (values.has_fill || values.has_missing))
          require_memory(bytes, bytes * 2 + bytes / 4, "compress");
        const auto pipeline = cached_forward_pipeline(info.dtype, info.dims, options, values);
        if (!encoder->runs(*pipeline)) continue;
        FrameInfo described = info;
        described.stages = pipeline->stage_infos();
        ran = true;
        FrameOut out = encoder->encode(*pipeline, described, target);
        if (kept(out, bytes)) return out;
      } catch (const BackendGaveUp&) {
        continue;  // said by the backend; the next one takes the chunk
      } catch (const NotSmallerError&) {
        // A stage found the frame could not be smaller than the chunk.
      }
      break;  // not smaller: the raw frame below
    }
    if (!ran) throw std::logic_error("no backend ran the chunk's pipeline");
  } catch (const std::exception& e) {
    if (place == ChunkPlace::kDevice) throw;
    // The write path must not fail once the options were accepted (an HDF5
    // optional filter that fails stores the chunk uncompressed, silently):
    // keep the chunk in a raw frame and say why, always.
    policy.say(LogLevel::kWarning, "compressing a " + std::to_string(bytes) + "-byte chunk failed (" + e.what() +
                                       "); stored it uncompressed in its frame");
  }
  // Incompressible: the chunk itself, so a frame is never more than a small
  // fixed header larger than its chunk.
  info.flags = kFlagRaw;
  info.stages.clear();
  return store_raw(info, target);
}

}  // namespace engine

namespace {

// Where a test asks a chunk to run (api_internal.hpp), as a device string.
Options with_backend(const Options& options, BackendUse use) {
  Options o = options;
  if (use == BackendUse::kCpu) o.device = "cpu";
  if (use == BackendUse::kGpu) o.device = "cuda";
  return o;
}

FrameInfo describe(const DataType& dtype, const std::vector<uint64_t>& dims, size_t bytes, Preset preset) {
  FrameInfo info;
  info.preset = preset == Preset::Default ? Preset::Lossless : preset;
  info.dtype = dtype;
  info.dims = dims;
  info.original_bytes = bytes;
  return info;
}

engine::FrameOut compress_to(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
                             const Options& options, engine::FrameTarget target) {
  return translate_errors("compress", [&]() -> engine::FrameOut {
    validate(options, dtype);
    const std::vector<uint64_t> dims = checked_chunk_dims(data, bytes, dtype, dims_in);
    const engine::Policy policy = engine::resolve_policy(options);
    const engine::CpuFeaturesScope features(policy.cpu_features);
    const FrameInfo info = describe(dtype, dims, bytes, options.preset);
    Options effective = options;
    effective.preset = info.preset;
    const ByteSpan chunk(static_cast<const uint8_t*>(data), bytes);
    std::vector<engine::EncoderFactory> backends;
    if (policy.gpu_for(bytes)) backends.push_back([&] { return engine::make_gpu_encoder(chunk, policy); });
    backends.push_back([&] { return engine::make_cpu_encoder(chunk, policy); });
    return engine::compress_through(
        backends, [&](const FrameInfo& raw, engine::FrameTarget t) { return engine::store_raw_on_host(chunk, raw, t); },
        info, effective, policy, target, engine::ChunkPlace::kHost);
  });
}

}  // namespace

Bytes compress(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
               const Options& options) {
  return compress_to(data, bytes, dtype, dims_in, options, {}).frame;
}

Bytes compress_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims_in,
                    const Options& options, BackendUse use) {
  return compress(data, bytes, dtype, dims_in, with_backend(options, use));
}

size_t compress_into(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                     const Options& options, void* frame, size_t capacity, Bytes* spill) {
  if (frame == nullptr && capacity > 0) throw Error("compress_into: null frame buffer");
  engine::FrameOut c = compress_to(data, bytes, dtype, dims, options, {static_cast<uint8_t*>(frame), capacity});
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

size_t compress_into_with(const void* data, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                          const Options& options, void* frame, size_t capacity, Bytes* spill, BackendUse use) {
  return compress_into(data, bytes, dtype, dims, with_backend(options, use), frame, capacity, spill);
}

size_t compress_on_device(const void* device_data, size_t bytes, const DataType& dtype,
                          const std::vector<uint64_t>& dims_in, const Options& options, void* device_frame,
                          size_t frame_capacity) {
  return translate_errors("compress_on_device", [&]() -> size_t {
    validate(options, dtype);
    if (bytes > 0 && device_data == nullptr) throw Error("null data pointer");
    const std::vector<uint64_t> dims = checked_chunk_dims(device_data, bytes, dtype, dims_in);
    const int device = owning_device(device_frame, "the frame buffer");
    if (bytes && owning_device(device_data, "the chunk") != device)
      throw Error("the chunk and the frame buffer are on different devices");
    const engine::Policy policy = engine::resolve_policy(options);
    const engine::CpuFeaturesScope features(policy.cpu_features);
    const FrameInfo info = describe(dtype, dims, bytes, options.preset);
    Options effective = options;
    effective.preset = info.preset;
    const auto* chunk = static_cast<const uint8_t*>(device_data);
    const std::vector<engine::EncoderFactory> backends = {
        [&] { return engine::make_resident_encoder(chunk, bytes, device, policy); },
        // A stage without a GPU version: through the host, the same frame.
        [&] { return engine::make_through_host_encoder(chunk, bytes, device, policy); }};
    const engine::FrameOut out = engine::compress_through(
        backends,
        [&](const FrameInfo& raw, engine::FrameTarget t) { return engine::store_raw_on_device(chunk, raw, t, device); },
        info, effective, policy, {static_cast<uint8_t*>(device_frame), frame_capacity}, engine::ChunkPlace::kDevice);
    return out.written;
  });
}

}  // namespace fz
