#include "device_forward.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.hpp"
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
  uint32_t* status_word() override {
    auto* word = reinterpret_cast<uint32_t*>(allocate(sizeof(uint32_t)));
    cuda::check(cudaMemsetAsync(word, 0, sizeof(uint32_t), stream_), "status word");
    status_words_.push_back(word);
    return word;
  }
  const std::vector<uint32_t*>& status_words() const { return status_words_; }

 private:
  cuda::DeviceContext& context_;
  cudaStream_t stream_;
  std::vector<void*> allocations_;
  std::vector<uint32_t*> status_words_;
};

bool verbose() { return std::getenv("H5Z_FZ_VERBOSE") != nullptr; }

// A CUDA failure sends the chunk back to the CPU; a sticky one retires the
// device for the rest of the process, and is said even without H5Z_FZ_VERBOSE.
void give_up_on_gpu(cuda::DeviceContext* context, const cuda::CudaError& e, const char* verb) {
  if (e.sticky() && context) context->mark_broken();
  if (verbose() || e.sticky())
    std::fprintf(stderr, "H5Z-FZ: the GPU could not %s a chunk (%s); doing it on the CPU%s\n", verb, e.what(),
                 e.sticky() ? ", and every later chunk too" : "");
}

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
      size_on_device[node.first_output + i] = !node.stage->device_output_size_on_host(i);
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
      if (8 * ids.size() > lane->staging.capacity()) cuda::check(cudaStreamSynchronize(stream), "upload");
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
    give_up_on_gpu(context, e, "compress");
    return std::nullopt;
  }
}

bool inverse_runs_on_device(const Pipeline& pipeline) {
  const std::vector<uint8_t> stored = pipeline.stored_buffers();
  for (const StageNode& node : pipeline.nodes()) {
    if (!node.stage->has_device_inverse()) return false;
    if (node.stage->device_inverse_reads_host_bytes())
      for (size_t i = 0; i < node.output_count; ++i)
        if (std::find(stored.begin(), stored.end(), node.first_output + i) == stored.end()) return false;
  }
  return !pipeline.nodes().empty();
}

std::optional<size_t> inverse_on_device(const Pipeline& pipeline, const std::vector<ByteSpan>& stored,
                                        uint8_t* dst, size_t capacity, size_t max_stream_bytes, int device) {
  if (!inverse_runs_on_device(pipeline)) return std::nullopt;
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (stored.size() != ids.size()) return std::nullopt;  // the CPU path reports it
  cuda::DeviceContext* context = nullptr;
  try {
    context = &cuda::DeviceContext::of(device);
    if (context->broken()) return std::nullopt;
    cuda::CurrentDeviceGuard guard(device);
    cuda::LaneLease lane = context->lease();
    const cudaStream_t stream = lane->stream;
    ChunkWork work(*context, stream);
    // The frame's streams go up together through the pinned staging buffer.
    size_t total = 0;
    for (const ByteSpan& s : stored) total += s.size;
    uint8_t* staging = lane->staging.reserve(std::max<size_t>(total, 1));
    uint8_t* device_streams = work.allocate(total);
    size_t at = 0;
    std::vector<DeviceBuffer> view(256);
    for (size_t k = 0; k < ids.size(); ++k) {
      if (stored[k].size) std::memcpy(staging + at, stored[k].data, stored[k].size);
      view[ids[k]] = {device_streams + at, stored[k].size, nullptr, stored[k].data};
      at += stored[k].size;
    }
    cuda::check(cudaMemcpyAsync(device_streams, staging, total, cudaMemcpyHostToDevice, stream), "frame upload");
    const auto& nodes = pipeline.nodes();
    for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
      std::vector<DeviceBuffer> outs;
      for (size_t i = 0; i < node->output_count; ++i) outs.push_back(view[node->first_output + i]);
      std::vector<DeviceBuffer> ins;
      node->stage->inverse_device(outs, ins, work, max_stream_bytes);
      if (ins.size() != node->inputs.size()) throw std::logic_error("GPU inverse produced the wrong number of streams");
      for (size_t i = 0; i < ins.size(); ++i) view[node->inputs[i]] = ins[i];
    }
    const DeviceBuffer& chunk = view[Pipeline::kChunk];
    if (chunk.size > capacity) return std::nullopt;  // the CPU path reports it
    // The statuses, then the chunk, through the staging buffer (the upload
    // above has left it: one stream orders them).
    const size_t statuses = work.status_words().size();
    // Growing the staging buffer frees the old one, which the upload may still
    // be reading: let the stream drain first.
    if (chunk.size + 4 * statuses > lane->staging.capacity()) cuda::check(cudaStreamSynchronize(stream), "upload");
    uint8_t* down = lane->staging.reserve(chunk.size + 4 * statuses);
    for (size_t k = 0; k < statuses; ++k)
      cuda::check(cudaMemcpyAsync(down + chunk.size + 4 * k, work.status_words()[k], 4, cudaMemcpyDeviceToHost, stream),
                  "status download");
    if (chunk.size)
      cuda::check(cudaMemcpyAsync(down, chunk.data, chunk.size, cudaMemcpyDeviceToHost, stream), "chunk download");
    cuda::check(cudaStreamSynchronize(stream), "GPU pipeline inverse");
    for (size_t k = 0; k < statuses; ++k) {
      uint32_t status;
      std::memcpy(&status, down + chunk.size + 4 * k, 4);
      if (status != 0) return std::nullopt;  // malformed: the CPU decoder names the problem
    }
    if (chunk.size) std::memcpy(dst, down, chunk.size);
    return chunk.size;
  } catch (const cuda::CudaError& e) {
    give_up_on_gpu(context, e, "decompress");
    return std::nullopt;
  } catch (const FormatError&) {
    return std::nullopt;  // the CPU decoder reports it, with the same checks
  }
}

}  // namespace fz::engine
