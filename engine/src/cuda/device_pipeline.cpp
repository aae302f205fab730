#include "cuda/device_pipeline.hpp"

#include <algorithm>
#include <stdexcept>

#include "cuda/value_range_cuda.hpp"
#include "device_forward.hpp"
#include "presets/predictor_choice.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace cuda {

std::vector<DeviceBuffer> run_forward(const Pipeline& pipeline, DeviceBuffer chunk, DeviceWork& work) {
  std::vector<DeviceBuffer> buffers{chunk};
  for (const StageNode& node : pipeline.nodes()) {
    std::vector<DeviceBuffer> in;
    for (uint8_t id : node.inputs) in.push_back(buffers.at(id));
    std::vector<DeviceBuffer> out;
    node.stage->forward_device(in, out, work);
    if (out.size() != node.output_count) throw std::logic_error("GPU stage produced the wrong number of streams");
    buffers.resize(std::max<size_t>(buffers.size(), node.first_output + node.output_count));
    for (size_t i = 0; i < out.size(); ++i) buffers[node.first_output + i] = out[i];
  }
  return buffers;
}

DeviceBuffer run_inverse(const Pipeline& pipeline, std::vector<DeviceBuffer> view, ChunkWork& work,
                         size_t max_stream_bytes) {
  const auto& nodes = pipeline.nodes();
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node) {
    std::vector<DeviceBuffer> outs;
    for (size_t i = 0; i < node->output_count; ++i) outs.push_back(view[node->first_output + i]);
    std::vector<DeviceBuffer> ins;
    node->stage->inverse_device(outs, ins, work, max_stream_bytes);
    if (ins.size() != node->inputs.size()) throw std::logic_error("GPU inverse produced the wrong number of streams");
    for (size_t i = 0; i < ins.size(); ++i) view[node->inputs[i]] = ins[i];
  }
  return view[Pipeline::kChunk];
}

FiniteRange device_chunk_values(const uint8_t* chunk, size_t bytes, const DataType& dtype, const Options& options,
                                ChunkWork& work, Lane& lane) {
  FiniteRange values;
  const FactsNeeded needed = facts_needed(dtype, options);
  if (needed == FactsNeeded::kNone) return values;
  const auto fill = fill_bits(dtype, options);
  const auto missing = special_missing_bits(dtype, options);
  const bool big_endian = dtype.order == ByteOrder::Big;
  if (needed == FactsNeeded::kFillOnly) {
    // One word per special value, both read back in one copy.
    auto* found = reinterpret_cast<uint32_t*>(work.allocate(2 * sizeof(uint32_t)));
    uint32_t host_found[2] = {0, 0};
    if (fill) {
      work.check(contains_element(chunk, bytes, dtype.size, big_endian, *fill, found, lane.stream),
                 "fill test (GPU)");
    } else {
      work.check(cudaMemsetAsync(found, 0, sizeof(uint32_t), lane.stream), "fill test (GPU)");
    }
    if (missing) {
      work.check(contains_element(chunk, bytes, dtype.size, big_endian, *missing, found + 1, lane.stream),
                 "missing value test (GPU)");
    } else {
      work.check(cudaMemsetAsync(found + 1, 0, sizeof(uint32_t), lane.stream), "missing value test (GPU)");
    }
    work.read_back(reinterpret_cast<const uint8_t*>(found), sizeof host_found, reinterpret_cast<uint8_t*>(host_found));
    values.has_fill = host_found[0] != 0;
    values.has_missing = host_found[1] != 0;
    return values;
  }
  auto* range = reinterpret_cast<DeviceRange*>(work.allocate(sizeof(DeviceRange)));
  void* scratch = work.allocate(finite_range_scratch_bytes(bytes, dtype.size));
  work.check(finite_range(chunk, bytes, dtype.size, big_endian, fill, missing, range, scratch, lane.stream),
             "NOA range (GPU)");
  DeviceRange host_range;
  work.read_back(reinterpret_cast<const uint8_t*>(range), sizeof host_range, reinterpret_cast<uint8_t*>(&host_range));
  return to_finite_range(host_range, dtype.size);
}

FiniteRange device_chunk_facts(const uint8_t* chunk, size_t bytes, const DataType& dtype,
                               const std::vector<uint64_t>& dims, const Options& options, ChunkWork& work,
                               Lane& lane) {
  FiniteRange values = device_chunk_values(chunk, bytes, dtype, options, work, lane);
  if (!chooses_predictor(dtype, options)) return values;
  const std::vector<size_t> shape = predictor_dims(dims);
  // The candidates run on the host's cores (the choice does not depend on
  // how many): on one thread they took ~10 ms of a 216 MiB chunk's ~11.
  const std::unique_ptr<Executor> sample_exec = make_pool_executor(0);
  const PredictorChoice choice = choose_predictor(dtype, dims, options, values, [&](const SampleBox& box, uint8_t* dst) {
    const Box3 b = three_axes(shape, box);
    const size_t *d = b.dims, *s = b.start, *e = b.extent;
    cudaMemcpy3DParms copy = {};
    copy.srcPtr = make_cudaPitchedPtr(const_cast<uint8_t*>(chunk), d[2] * dtype.size, d[2] * dtype.size, d[1]);
    copy.srcPos = make_cudaPos(s[2] * dtype.size, s[1], s[0]);
    copy.dstPtr = make_cudaPitchedPtr(dst, e[2] * dtype.size, e[2] * dtype.size, e[1]);
    copy.extent = make_cudaExtent(e[2] * dtype.size, e[1], e[0]);
    copy.kind = cudaMemcpyDeviceToHost;
    work.check(cudaMemcpy3DAsync(&copy, lane.stream), "predictor sample (GPU)");
    work.check(cudaStreamSynchronize(lane.stream), "predictor sample (GPU)");
  }, *sample_exec);
  values.lorenzo = choice.lorenzo;
  values.fold = choice.fold;
  return values;
}

}  // namespace cuda

bool runs_on_device(const Pipeline& pipeline) {
  // Buffers whose size only the device knows may be stored, or fed to a
  // stage that takes such sizes; no other stage.
  std::vector<bool> size_on_device(1, false);
  for (const StageNode& node : pipeline.nodes()) {
    if (!node.stage->has_device_forward()) return false;
    for (uint8_t id : node.inputs)
      if (id < size_on_device.size() && size_on_device[id] && !node.stage->device_forward_takes_device_sizes())
        return false;
    size_on_device.resize(std::max<size_t>(size_on_device.size(), node.first_output + node.output_count), false);
    for (size_t i = 0; i < node.output_count; ++i)
      size_on_device[node.first_output + i] = !node.stage->device_output_size_on_host(i);
  }
  return true;
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

}  // namespace fz::engine
