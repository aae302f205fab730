// cuszhi-cr's predictor choice for a chunk in device memory
// (device_pipeline.hpp: device_chunk_facts). The choice is the CPU's
// function over the same sample blocks (so every backend chooses alike);
// the blocks come to the host in one synchronisation. On a large chunk the
// device meanwhile runs the spline pipeline up to its spline, the choice's
// usual answer, so that the host's choosing (2.1-2.6 ms on the H200 machine,
// whatever the chunk's size) hides behind the device's spline (2.7 ms at
// 512 MiB) instead of coming before it.
#include <algorithm>
#include <cstring>
#include <future>
#include <system_error>

#include "cuda/device_pipeline.hpp"
#include "device_forward.hpp"
#include "pipeline_cache.hpp"
#include "presets/predictor_choice.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine::cuda {
namespace {

// The sample's boxes in host memory: gathered on the device (a strided copy
// of 32^3 floats straight into pageable host memory took ~0.1 ms a box),
// then one copy back.
std::vector<Bytes> read_sample(const uint8_t* chunk, const std::vector<size_t>& shape, unsigned width,
                               const std::vector<SampleBox>& boxes, ChunkWork& work, Lane& lane) {
  std::vector<size_t> at(boxes.size() + 1, 0);
  for (size_t k = 0; k < boxes.size(); ++k) {
    size_t elements = 1;
    for (size_t e : boxes[k].extent) elements *= e;
    at[k + 1] = at[k] + elements * width;
  }
  uint8_t* gathered = work.allocate(at.back());
  for (size_t k = 0; k < boxes.size(); ++k) {
    const Box3 b = three_axes(shape, boxes[k]);
    const size_t *d = b.dims, *s = b.start, *e = b.extent;
    cudaMemcpy3DParms copy = {};
    copy.srcPtr = make_cudaPitchedPtr(const_cast<uint8_t*>(chunk), d[2] * width, d[2] * width, d[1]);
    copy.srcPos = make_cudaPos(s[2] * width, s[1], s[0]);
    copy.dstPtr = make_cudaPitchedPtr(gathered + at[k], e[2] * width, e[2] * width, e[1]);
    copy.extent = make_cudaExtent(e[2] * width, e[1], e[0]);
    copy.kind = cudaMemcpyDeviceToDevice;
    work.check(cudaMemcpy3DAsync(&copy, lane.stream), "predictor sample (GPU)");
  }
  Bytes all(at.back());
  work.read_back(gathered, all.size(), all.data());
  std::vector<Bytes> samples(boxes.size());
  for (size_t k = 0; k < boxes.size(); ++k) samples[k].assign(all.begin() + at[k], all.begin() + at[k + 1]);
  return samples;
}

// The spline pipeline's nodes up to and including its spline, run on the
// device into *prefix (left empty when the pipeline has no spline or does
// not run on the device).
void run_spline_prefix(const uint8_t* chunk, size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims,
                       const Options& options, FiniteRange values, ChunkWork& work, DevicePrefix& prefix) {
  values.lorenzo = false;
  values.fold = false;
  const std::shared_ptr<const Pipeline> pipeline = cached_forward_pipeline(dtype, dims, options, values);
  if (!runs_on_device(*pipeline)) return;
  const std::vector<StageNode>& nodes = pipeline->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].stage->type() != StageType::Spline) continue;
    std::vector<DeviceBuffer> buffers{{const_cast<uint8_t*>(chunk), bytes}};
    forward_nodes(*pipeline, 0, i + 1, buffers, work, nullptr);
    prefix = {pipeline, i + 1, std::move(buffers)};
    return;
  }
}

}  // namespace

FiniteRange device_chunk_facts(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                               const std::vector<uint64_t>& dims, const Options& options, ChunkWork& work,
                               Lane& lane, DevicePrefix* prefix) {
  FiniteRange values = device_chunk_values(chunk, bytes, dtype, options, work, lane);
  if (!chooses_predictor(dtype, options)) return values;
  const std::vector<size_t> shape = predictor_dims(dims);
  const std::vector<SampleBox> boxes = sample_boxes(shape);
  const std::vector<Bytes> samples = read_sample(chunk, shape, dtype.size, boxes, work, lane);
  const BoxReader read_box = [&](const SampleBox& box, uint8_t* dst) {
    for (size_t k = 0; k < boxes.size(); ++k)
      if (boxes[k].start == box.start && boxes[k].extent == box.extent) {
        std::memcpy(dst, samples[k].data(), samples[k].size());
        return;
      }
    throw std::logic_error("predictor choice: a sample box that sample_boxes did not give");
  };
  // The candidates run on the host's cores (the choice does not depend on
  // how many): on one thread they took ~10 ms of a 216 MiB chunk's ~11.
  // While the device runs the prefix, one core is left to the thread that
  // drives it.
  const bool speculate = prefix && bytes >= kSpeculativePrefixMinBytes;
  const std::unique_ptr<Executor> sample_exec =
      make_pool_executor(speculate ? std::max(1u, default_thread_count() - 1) : 0);
  const auto choose = [&] { return choose_predictor(dtype, dims, options, values, read_box, *sample_exec); };
  std::future<PredictorChoice> chosen;
  if (speculate) {
    try {
      chosen = std::async(std::launch::async, choose);
    } catch (const std::system_error&) {
      // No thread to spare: choose first, as a small chunk does.
    }
  }
  PredictorChoice choice;
  if (chosen.valid()) {
    try {
      run_spline_prefix(chunk, bytes, dtype, dims, options, values, work, *prefix);
    } catch (...) {
      chosen.wait();  // (the choice's own failure, if any, goes with it: this one is reported)
      throw;
    }
    choice = chosen.get();
  } else {
    choice = choose();
  }
  values.lorenzo = choice.lorenzo;
  values.fold = choice.fold;
  return values;
}

}  // namespace fz::engine::cuda
