#include "cuda/device_pipeline.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <utility>

#include "common/stage/stage_device.hpp"
#include "cuda/value_range_cuda.hpp"
#include "device_forward.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace cuda {

namespace {

// A step of a device forward or inverse: one node, or two or three adjacent
// nodes that run as one device pass (FusedDevicePair, FusedDeviceTriple,
// common/stage/stage_device.hpp: a bit-shuffle and the RZE after it, DIFFNB
// before them), whose streams are the first node's inputs and the last's
// outputs: the streams between them are never made.
struct Step {
  size_t node = 0;                               // the first node
  const stage::FusedDevicePair* pair = nullptr;  // with the node after it, or alone
  const stage::FusedDeviceTriple* triple = nullptr;  // or with the two after it
  std::vector<uint8_t> inputs;
  uint8_t first_output = 0;
  uint8_t output_count = 0;
};

// Whether `stream` is the input of no node but `reader`, and not among the
// pipeline's `stored` buffers.
bool read_only_by(const std::vector<StageNode>& nodes, const std::vector<uint8_t>& stored, uint8_t stream,
                  size_t reader) {
  for (size_t k = 0; k < nodes.size(); ++k)
    if (k != reader && std::find(nodes[k].inputs.begin(), nodes[k].inputs.end(), stream) != nodes[k].inputs.end())
      return false;
  return std::find(stored.begin(), stored.end(), stream) == stored.end();
}

// Nodes [first, last) as steps, in order.
std::vector<Step> steps_of(const Pipeline& pipeline, size_t first, size_t last) {
  const std::vector<StageNode>& nodes = pipeline.nodes();
  const std::vector<uint8_t> stored = pipeline.stored_buffers();
  std::vector<Step> steps;
  for (size_t i = first; i < last;) {
    const StageNode& a = nodes[i];
    Step step{i, nullptr, nullptr, a.inputs, a.first_output, a.output_count};
    // Whether node k + 1 reads node k's one output, which nothing else reads or stores.
    auto chained = [&](size_t k) {
      const StageNode &x = nodes[k], &y = nodes[k + 1];
      return x.inputs.size() == 1 && x.output_count == 1 && y.inputs.size() == 1 && y.output_count == 1 &&
             y.inputs[0] == x.first_output && read_only_by(nodes, stored, x.first_output, k + 1);
    };
    if (i + 2 < last && chained(i) && chained(i + 1))
      step.triple = stage::find_fused_device_triple(*a.stage, *nodes[i + 1].stage, *nodes[i + 2].stage);
    if (step.triple) {
      step.first_output = nodes[i + 2].first_output;
      step.output_count = nodes[i + 2].output_count;
      i += 3;
      steps.push_back(std::move(step));
      continue;
    }
    if (i + 1 < last && chained(i)) step.pair = stage::find_fused_device_pair(*a.stage, *nodes[i + 1].stage);
    if (step.pair) {
      step.first_output = nodes[i + 1].first_output;
      step.output_count = nodes[i + 1].output_count;
    }
    i += step.pair ? 2 : 1;
    steps.push_back(std::move(step));
  }
  return steps;
}

bool reads_output_of(const Step& reader, const Step& writer) {
  for (uint8_t id : reader.inputs)
    if (id >= writer.first_output && id < writer.first_output + writer.output_count) return true;
  return false;
}

bool share_an_input(const Step& a, const Step& b) {
  for (uint8_t id : a.inputs)
    if (std::find(b.inputs.begin(), b.inputs.end(), id) != b.inputs.end()) return true;
  return false;
}

// The end of the run of steps from `first` on that are independent of one
// another: none reads a stream another writes, and no two read the same
// stream (whose inverse both would rebuild). Such a run may go side by side
// both ways: forward in any order, then the next run; inverse the same runs
// from the last.
size_t independent_run_end(const std::vector<Step>& steps, size_t first) {
  size_t end = first + 1;
  for (; end < steps.size(); ++end)
    for (size_t k = first; k < end; ++k)
      if (reads_output_of(steps[end], steps[k]) || share_an_input(steps[end], steps[k])) return end;
  return end;
}

// Runs of independent steps (one step each without side_by_side), in order.
std::vector<std::pair<size_t, size_t>> runs_of(const std::vector<Step>& steps, bool side_by_side) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t first = 0; first < steps.size();) {
    const size_t end = side_by_side ? independent_run_end(steps, first) : first + 1;
    runs.emplace_back(first, end);
    first = end;
  }
  return runs;
}

void forward_step(const Pipeline& pipeline, const Step& step, const std::vector<DeviceBuffer>& buffers,
                  std::vector<DeviceBuffer>& out, DeviceWork& work) {
  const std::vector<StageNode>& nodes = pipeline.nodes();
  std::vector<DeviceBuffer> in;
  for (uint8_t id : step.inputs) in.push_back(buffers.at(id));
  if (step.triple) {
    out.resize(1);
    step.triple->forward(*nodes[step.node].stage, *nodes[step.node + 1].stage, *nodes[step.node + 2].stage, in.at(0),
                         out[0], work);
    return;
  }
  if (step.pair) {
    out.resize(1);
    step.pair->forward(*nodes[step.node].stage, *nodes[step.node + 1].stage, in.at(0), out[0], work);
    return;
  }
  nodes[step.node].stage->forward_device(in, out, work);
  if (out.size() != step.output_count) throw std::logic_error("GPU stage produced the wrong number of streams");
}

void inverse_step(const Pipeline& pipeline, const Step& step, const std::vector<DeviceBuffer>& view,
                  std::vector<DeviceBuffer>& ins, DeviceWork& work, size_t max_stream_bytes) {
  const std::vector<StageNode>& nodes = pipeline.nodes();
  std::vector<DeviceBuffer> outs;
  for (size_t i = 0; i < step.output_count; ++i) outs.push_back(view[step.first_output + i]);
  if (step.triple) {
    ins.resize(1);
    step.triple->inverse(*nodes[step.node].stage, *nodes[step.node + 1].stage, *nodes[step.node + 2].stage,
                         outs.at(0), ins[0], work, max_stream_bytes);
    return;
  }
  if (step.pair) {
    ins.resize(1);
    step.pair->inverse(*nodes[step.node].stage, *nodes[step.node + 1].stage, outs.at(0), ins[0], work,
                       max_stream_bytes);
    return;
  }
  nodes[step.node].stage->inverse_device(outs, ins, work, max_stream_bytes);
  if (ins.size() != step.inputs.size()) throw std::logic_error("GPU inverse produced the wrong number of streams");
}

// Whether stream `id` is the input of a step from `from` on.
bool read_from(const std::vector<Step>& steps, size_t from, uint8_t id) {
  for (size_t k = from; k < steps.size(); ++k)
    if (std::find(steps[k].inputs.begin(), steps[k].inputs.end(), id) != steps[k].inputs.end()) return true;
  return false;
}

// Whether an entry of `buffers` other than `id` points into stream `id`'s
// bytes: a view a stage made of it (a merge's parts are views of the merged
// stream), which releasing it would leave dangling.
bool viewed_by_another(const std::vector<DeviceBuffer>& buffers, size_t id) {
  const uint8_t* begin = buffers[id].data;
  const uint8_t* end = begin + std::max(buffers[id].size, buffers[id].capacity);
  for (size_t j = 0; j < buffers.size(); ++j)
    if (j != id && buffers[j].data && std::less_equal<const uint8_t*>()(begin, buffers[j].data) &&
        std::less<const uint8_t*>()(buffers[j].data, end))
      return true;
  return false;
}

}  // namespace

ChunkWork* side_by_side_for(ChunkWork& work, size_t chunk_bytes) {
  return chunk_bytes >= kSideBySideMinBytes ? &work : nullptr;
}

void forward_nodes(const Pipeline& pipeline, size_t first, size_t last, std::vector<DeviceBuffer>& buffers,
                   DeviceWork& work, ChunkWork* side_by_side, bool release_consumed) {
  const std::vector<Step> steps = steps_of(pipeline, first, last);
  const std::vector<uint8_t> stored = pipeline.stored_buffers();
  // Streams these steps make, by id, and those a prefix made before them
  // (run_forward hands them over): those no later step reads go back as soon
  // as their last reader is enqueued, so a chunk holds its live streams
  // rather than all it ever made (issue 31 item 5).
  std::vector<bool> made_here(256, false);
  for (size_t id = Pipeline::kChunk + 1; id < buffers.size() && id < made_here.size(); ++id) made_here[id] = true;
  for (const auto& [begin, end] : runs_of(steps, side_by_side != nullptr)) {
    std::vector<std::vector<DeviceBuffer>> outs(end - begin);
    if (end - begin > 1) {
      side_by_side->side_by_side(end - begin, [&](size_t k, DeviceWork& branch) {
        forward_step(pipeline, steps[begin + k], buffers, outs[k], branch);
      });
    } else {
      forward_step(pipeline, steps[begin], buffers, outs[0], work);
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const Step& step = steps[begin + k];
      buffers.resize(std::max<size_t>(buffers.size(), step.first_output + step.output_count));
      for (size_t i = 0; i < outs[k].size(); ++i) {
        buffers[step.first_output + i] = outs[k][i];
        made_here[step.first_output + i] = true;
      }
    }
    if (!release_consumed) continue;
    for (size_t k = begin; k < end; ++k)
      for (uint8_t id : steps[k].inputs)
        if (made_here[id] && buffers[id].data && !read_from(steps, end, id) &&
            std::find(stored.begin(), stored.end(), id) == stored.end() && !viewed_by_another(buffers, id)) {
          work.release(buffers[id].data);
          buffers[id].data = nullptr;  // gone: nothing reads it again
          made_here[id] = false;
        }
  }
}

size_t shared_prefix_nodes(const DevicePrefix& prefix, const Pipeline& pipeline) {
  if (!prefix.pipeline || prefix.nodes > pipeline.nodes().size()) return 0;
  if (prefix.pipeline.get() == &pipeline) return prefix.nodes;
  const std::vector<StageNode>& ran = prefix.pipeline->nodes();
  const std::vector<StageNode>& wanted = pipeline.nodes();
  for (size_t i = 0; i < prefix.nodes; ++i) {
    const StageNode &a = ran[i], &b = wanted[i];
    if (a.inputs != b.inputs || a.first_output != b.first_output || a.output_count != b.output_count ||
        a.stage->type() != b.stage->type() || a.stage->config() != b.stage->config())
      return 0;
  }
  return prefix.nodes;
}

std::vector<DeviceBuffer> run_forward(const Pipeline& pipeline, DeviceBuffer chunk, DeviceWork& work,
                                      ChunkWork* side_by_side, DevicePrefix* prefix) {
  std::vector<DeviceBuffer> buffers{chunk};
  size_t first = 0;
  if (prefix && !prefix->buffers.empty()) {
    if (prefix->buffers[0].data == chunk.data && prefix->buffers[0].size == chunk.size &&
        (first = shared_prefix_nodes(*prefix, pipeline)) > 0) {
      buffers = prefix->buffers;
    } else {
      // Not continued (the chunk chose another predictor): its streams go now.
      for (size_t id = 1; id < prefix->buffers.size(); ++id)
        if (prefix->buffers[id].data) work.release(prefix->buffers[id].data);
    }
    *prefix = {};  // used once: its streams are this run's now, or gone
  }
  forward_nodes(pipeline, first, pipeline.nodes().size(), buffers, work, side_by_side, true);
  return buffers;
}

DeviceBuffer run_inverse(const Pipeline& pipeline, std::vector<DeviceBuffer> view, ChunkWork& work,
                         size_t max_stream_bytes, ChunkWork* side_by_side, DeviceBuffer destination) {
  const std::vector<Step> steps = steps_of(pipeline, 0, pipeline.nodes().size());
  const std::vector<std::pair<size_t, size_t>> runs = runs_of(steps, side_by_side != nullptr);
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    const size_t begin = run->first, count = run->second - run->first;
    std::vector<std::vector<DeviceBuffer>> ins(count);
    if (count > 1) {
      side_by_side->side_by_side(count, [&](size_t k, DeviceWork& branch) {
        inverse_step(pipeline, steps[begin + k], view, ins[k], branch, max_stream_bytes);
      });
    } else {
      const Step& step = steps[begin];
      const bool rebuilds_chunk = !step.inputs.empty() && step.inputs[0] == Pipeline::kChunk;
      work.offer_rebuilt(rebuilds_chunk ? destination.data : nullptr, destination.size);
      try {
        inverse_step(pipeline, step, view, ins[0], work, max_stream_bytes);
      } catch (...) {
        work.offer_rebuilt(nullptr, 0);
        throw;
      }
      work.offer_rebuilt(nullptr, 0);
    }
    for (size_t k = 0; k < count; ++k) {
      const Step& step = steps[begin + k];
      for (size_t i = 0; i < ins[k].size(); ++i) view[step.inputs[i]] = ins[k][i];
    }
    // The streams these steps read are consumed: those this chunk's work made
    // go back (a frame's stored streams are not its to release), unless an
    // inverse handed back a view into one.
    for (size_t k = 0; k < count; ++k) {
      const Step& step = steps[begin + k];
      for (size_t i = 0; i < step.output_count; ++i) {
        const size_t id = step.first_output + i;
        if (view[id].data && !viewed_by_another(view, id)) {
          work.release(view[id].data);
          view[id].data = nullptr;
        }
      }
    }
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
  work.release(scratch);
  DeviceRange host_range;
  work.read_back(reinterpret_cast<const uint8_t*>(range), sizeof host_range, reinterpret_cast<uint8_t*>(&host_range));
  return to_finite_range(host_range, dtype.size);
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
