#include "device_forward.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/device_context.hpp"

namespace fz::engine {
namespace {

// Device memory for one chunk, given back (stream-ordered) when the chunk is done.
class ChunkWork final : public DeviceWork {
 public:
  ChunkWork(cuda::DeviceContext& context, cudaStream_t stream) : context_(context), stream_(stream) {}
  ~ChunkWork() override {
    for (void* p : allocations_) context_.release(p, stream_);
  }
  uint8_t* allocate(size_t bytes) override {
    void* p = context_.allocate(bytes, stream_);
    allocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return stream_; }
  void check(int cuda_error, const char* what) override { cuda::check(static_cast<cudaError_t>(cuda_error), what); }

 private:
  cuda::DeviceContext& context_;
  cudaStream_t stream_;
  std::vector<void*> allocations_;
};

bool verbose() { return std::getenv("H5Z_FZ_VERBOSE") != nullptr; }

}  // namespace

bool runs_on_device(const Pipeline& pipeline) {
  // Buffers whose size only the device knows may be stored, not fed to a stage.
  std::vector<bool> size_on_device(1, false);
  for (const StageNode& node : pipeline.nodes()) {
    if (!node.stage->has_device_forward()) return false;
    for (uint8_t id : node.inputs)
      if (id < size_on_device.size() && size_on_device[id]) return false;
    size_on_device.resize(std::max<size_t>(size_on_device.size(), node.first_output + node.output_count), false);
    for (size_t i = 0; i < node.output_count; ++i)
      size_on_device[node.first_output + i] = !node.stage->device_output_sizes_on_host();
  }
  return true;
}

std::optional<std::vector<Bytes>> forward_on_device(const Pipeline& pipeline, ByteSpan chunk, int device) {
  if (!runs_on_device(pipeline)) return std::nullopt;
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    const cudaStream_t stream = lane->stream;
    std::vector<Bytes> stored;
    {
      ChunkWork work(*context, stream);
      std::vector<DeviceBuffer> buffers(1);
      uint8_t* staging = lane->staging.reserve(chunk.size);
      if (chunk.size) std::memcpy(staging, chunk.data, chunk.size);
      buffers[Pipeline::kChunk] = {work.allocate(chunk.size), chunk.size, nullptr};
      cuda::check(cudaMemcpyAsync(buffers[0].data, staging, chunk.size, cudaMemcpyHostToDevice, stream), "chunk upload");
      for (const StageNode& node : pipeline.nodes()) {
        std::vector<DeviceBuffer> in;
        for (uint8_t id : node.inputs) in.push_back(buffers.at(id));
        std::vector<DeviceBuffer> out;
        node.stage->forward_device(in, out, work);
        if (out.size() != node.output_count) throw std::logic_error("GPU stage produced the wrong number of streams");
        buffers.resize(std::max<size_t>(buffers.size(), node.first_output + node.output_count));
        for (size_t i = 0; i < out.size(); ++i) buffers[node.first_output + i] = out[i];
      }
      // Sizes only the device knows come back first; then the stored bytes,
      // through the pinned staging buffer, one synchronisation each.
      const std::vector<uint8_t> ids = pipeline.stored_buffers();
      std::vector<uint64_t> sizes(ids.size());
      uint64_t* size_staging = reinterpret_cast<uint64_t*>(lane->staging.reserve(std::max<size_t>(chunk.size, 8 * ids.size())));
      for (size_t k = 0; k < ids.size(); ++k)
        if (buffers[ids[k]].device_size)
          cuda::check(cudaMemcpyAsync(size_staging + k, buffers[ids[k]].device_size, sizeof(uint64_t),
                                      cudaMemcpyDeviceToHost, stream),
                      "size download");
      cuda::check(cudaStreamSynchronize(stream), "GPU pipeline");
      size_t total = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        sizes[k] = buffers[ids[k]].device_size ? size_staging[k] : buffers[ids[k]].size;
        total += sizes[k];
      }
      uint8_t* out = lane->staging.reserve(total);
      size_t at = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        if (sizes[k])
          cuda::check(cudaMemcpyAsync(out + at, buffers[ids[k]].data, sizes[k], cudaMemcpyDeviceToHost, stream),
                      "stream download");
        at += sizes[k];
      }
      cuda::check(cudaStreamSynchronize(stream), "stream download");
      at = 0;
      for (size_t k = 0; k < ids.size(); ++k) {
        stored.emplace_back(out + at, out + at + sizes[k]);
        at += sizes[k];
      }
    }  // device memory goes back to the pool here
    return stored;
  } catch (const cuda::CudaError& e) {
    if (e.sticky() && context) context->mark_broken();
    if (verbose() || e.sticky())
      std::fprintf(stderr, "H5Z-FZ: the GPU could not compress a %zu-byte chunk (%s); compressing it on the CPU%s\n",
                   chunk.size, e.what(), e.sticky() ? ", and every later chunk too" : "");
    return std::nullopt;
  }
}

}  // namespace fz::engine
