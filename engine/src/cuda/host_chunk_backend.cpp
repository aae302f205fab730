// The CUDA backend for chunks and frames in host memory (the filter's path):
// the GPU encoder of the compress flow (execution.hpp) and the GPU decoder of
// the decompress flow. A CUDA failure gives the chunk back to the CPU; a
// sticky one also retires the device for the rest of the process.
#include <algorithm>
#include <cstring>

#include "common/error.hpp"
#include "crc32c.hpp"
#include "cuda/chunk_work.hpp"
#include "cuda/device_frames.hpp"
#include "cuda/device_pipeline.hpp"
#include "cuda/forward_graphs.hpp"
#include "cuda/transfers.hpp"
#include "device_forward.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

// Said as information (the chunk goes to the CPU), or as a warning when the
// error is sticky (every later chunk goes there too).
void give_up_on_gpu(cuda::DeviceContext* context, const cuda::CudaError& e, const char* verb, const Policy& policy) {
  if (e.sticky() && context) context->mark_broken();
  policy.say(e.sticky() ? LogLevel::kWarning : LogLevel::kInfo,
             std::string("the GPU could not ") + verb + " a chunk (" + e.what() + "); doing it on the CPU" +
                 (e.sticky() ? ", and every later chunk too" : ""));
}

// A host chunk compressed on the device from start to end: uploaded, the
// preset's facts (NOA range, fill test) found there (small chunks: on the
// host, see cuda::kHostFactsBytes), the pipeline run there (as a CUDA graph
// when it comes again), and its frame (the payload checksum computed there
// too). The target is written only after every CUDA call has succeeded.
class GpuEncoder final : public ChunkEncoder {
 public:
  GpuEncoder(ByteSpan chunk, const Policy& policy, cuda::DeviceContext& context)
      : chunk_(chunk),
        policy_(policy),
        context_(context),
        guard_(policy.device),
        lane_(context.lease()),
        work_(context, *lane_),
        exec_(make_pool_executor(policy.threads)) {}

  FiniteRange facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options) override {
    // The graph's key names the options and the facts (forward_graphs.hpp).
    options_ = &options;
    values_ = guarded([&] {
      if (chunk_.size <= cuda::kHostFactsBytes) return chunk_facts(dtype, dims, options, chunk_, *exec_);
      upload_chunk();
      return cuda::device_chunk_facts(device_chunk_, chunk_.size, dtype, dims, options, work_, *lane_, &prefix_);
    });
    return values_;
  }

  bool runs(const Pipeline& pipeline) const override { return runs_on_device(pipeline); }

  FrameOut encode(const Pipeline& pipeline, const FrameInfo& info, FrameTarget target) override {
    return guarded([&] {
      cuda::CapturedForward* graph =
          chunk_.size <= cuda::kGraphMaxChunkBytes
              ? cuda::forward_graph(pipeline, chunk_.size, *lane_,
                                    cuda::forward_key(chunk_.size, info.dtype, info.dims, *options_, values_))
              : nullptr;
      std::vector<DeviceBuffer> buffers;
      if (graph) {  // (its chunk's facts came from the host: the chunk is not uploaded yet)
        cuda::upload(*lane_, chunk_, graph->input, *exec_, policy_.gpu_copies);
        cuda::check(cudaGraphLaunch(graph->exec, lane_->stream), "cudaGraphLaunch");
        buffers = graph->buffers;
      } else {
        upload_chunk();
        buffers = cuda::run_forward(pipeline, {device_chunk_, chunk_.size}, work_,
                                    cuda::side_by_side_for(work_, chunk_.size), &prefix_);
      }
      return cuda::frame_from_device(pipeline, buffers, info, work_, *lane_, *exec_, target);
    });
  }

 private:
  void upload_chunk() {
    if (device_chunk_) return;
    device_chunk_ = work_.allocate(chunk_.size);
    cuda::upload(*lane_, chunk_, device_chunk_, *exec_, policy_.gpu_copies);
  }

  template <typename F>
  auto guarded(F&& body) -> decltype(body()) {
    try {
      return body();
    } catch (const cuda::CudaError& e) {
      give_up_on_gpu(&context_, e, "compress", policy_);
      throw BackendGaveUp(e.what());
    }
  }

  ByteSpan chunk_;
  Policy policy_;
  cuda::DeviceContext& context_;
  cuda::CurrentDeviceGuard guard_;
  cuda::LaneLease lane_;
  cuda::ChunkWork work_;  // device memory goes back to the pool when the encoder ends
  std::unique_ptr<Executor> exec_;
  uint8_t* device_chunk_ = nullptr;
  cuda::DevicePrefix prefix_;  // what facts() ran of the spline pipeline (device_chunk_facts)
  const Options* options_ = nullptr;  // facts() was given them
  FiniteRange values_;
};

}  // namespace

std::unique_ptr<ChunkEncoder> make_gpu_encoder(ByteSpan chunk, const Policy& policy) {
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(policy.device);
    if (context->broken()) return nullptr;
    return std::make_unique<GpuEncoder>(chunk, policy, *context);
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "compress", policy);
    return nullptr;
  }
}

std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device) {
  if (!runs_on_device(pipeline)) return std::nullopt;
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    cuda::ChunkWork work(*context, *lane);  // device memory goes back to the pool when it ends
    uint8_t* device_chunk = work.allocate(chunk.size);
    cuda::upload(*lane, chunk, device_chunk, *make_pool_executor(0), GpuCopies::kStaged);
    return cuda::download_stored(
        pipeline, cuda::run_forward(pipeline, {device_chunk, chunk.size}, work, cuda::side_by_side_for(work, chunk.size)),
        *lane);
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "compress", Policy{});
    return std::nullopt;
  } catch (const BackendGaveUp&) {
    return std::nullopt;  // a stream outgrew its room (cuda::outgrew_room): the CPU's streams then
  }
}

std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, const Policy& policy,
                                        std::optional<uint32_t> payload_crc) {
  const int device = policy.device;
  if (!inverse_runs_on_device(pipeline)) return std::nullopt;
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (stored.size() != ids.size()) return std::nullopt;  // the CPU path reports it
  size_t total = 0;
  for (const ByteSpan& s : stored) total += s.size;
  // A small payload's checksum costs less on the host than the GPU's launches.
  const bool crc_on_device = payload_crc && total >= cuda::kDeviceCrcMinBytes;
  if (payload_crc && !crc_on_device) {
    uint32_t crc = 0;
    for (const ByteSpan& s : stored) crc = crc32c(s.data, s.size, crc);
    if (crc != *payload_crc) return std::nullopt;  // the CPU path reports it
  }
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    cuda::ChunkWork work(*context, *lane);
    // The streams go up together, back to back (the frame's payload): in one
    // staged upload when they lie so in host memory, as parse_frame gives them.
    uint8_t* device_streams = work.allocate(total);
    const auto exec = make_pool_executor(policy.threads);
    std::vector<DeviceBuffer> view(256);
    bool contiguous = true;
    size_t at = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
      if (k && stored[k].size && stored[k].data != stored[k - 1].data + stored[k - 1].size) contiguous = false;
      view[ids[k]] = {device_streams + at, stored[k].size, nullptr, stored[k].data};
      at += stored[k].size;
    }
    if (contiguous && !stored.empty()) {
      cuda::upload(*lane, ByteSpan(stored[0].data, total), device_streams, *exec, policy.gpu_copies);
    } else {
      uint8_t* staging = lane->staging.reserve(std::max<size_t>(total, 1));
      at = 0;
      for (const ByteSpan& s : stored) {
        cuda::parallel_copy(staging + at, s.data, s.size, *exec);
        at += s.size;
      }
      cuda::check(cudaMemcpyAsync(device_streams, staging, total, cudaMemcpyHostToDevice, lane->stream),
                  "frame upload");
    }
    const uint32_t* device_crc = crc_on_device ? cuda::enqueue_crc32c({{device_streams, total}}, total, work, *lane) : nullptr;
    // (The chunk is at most `capacity`: a hostile frame's claim never exceeds it.)
    const DeviceBuffer chunk =
        cuda::run_inverse(pipeline, view, work, max_stream_bytes, cuda::side_by_side_for(work, capacity));
    if (chunk.size > capacity) return std::nullopt;  // the CPU path reports it
    // The status words and the checksum come back with the chunk, in one
    // synchronisation; a set word or a wrong checksum means a malformed or
    // corrupted frame (dst then holds garbage, which the CPU decoder
    // overwrites or reports).
    const cuda::WordsOnHost words(work, *lane, device_crc);
    cuda::download(*lane, chunk.data, chunk.size, dst, *exec, policy.gpu_copies);
    if (words.any_status_set()) return std::nullopt;  // the CPU decoder names the problem
    if (crc_on_device && words.extra() != *payload_crc) return std::nullopt;
    return chunk.size;
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "decompress", policy);
    return std::nullopt;
  } catch (const FormatError&) {
    return std::nullopt;  // the CPU decoder reports it, with the same checks
  }
}

std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device,
                                        unsigned threads, std::optional<uint32_t> payload_crc) {
  Policy policy;
  policy.backend = Backend::Cuda;
  policy.device = device;
  policy.threads = threads;
  return inverse_on_device(pipeline, stored, dst, capacity, max_stream_bytes, policy, payload_crc);
}

}  // namespace fz::engine
