#include "pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "buffer_pool.hpp"
#include "common/blocks.hpp"
#include "common/error.hpp"
#include "node_memo.hpp"

namespace fz::engine {

Pipeline pipeline_of_stages(const std::vector<StageInfo>& stages) {
  Pipeline p;
  for (const StageInfo& s : stages) {
    auto stage = parse_stage(s.type_id, ByteSpan(s.config));
    if (stage->output_ports().size() != s.outputs)
      throw FormatError("stage " + stage->name() + " records a wrong output count");
    p.add(std::move(stage), s.inputs);
  }
  return p;
}

std::vector<uint8_t> Pipeline::add(std::unique_ptr<Stage> stage, std::vector<uint8_t> inputs) {
  require_format(stage != nullptr, "pipeline: null stage");
  if (inputs.size() != stage->input_ports().size())
    throw FormatError("stage " + stage->name() + " needs " + std::to_string(stage->input_ports().size()) +
                      " inputs, got " + std::to_string(inputs.size()));
  for (uint8_t id : inputs) {
    require_format(id < consumed_.size(), "pipeline: stage input refers to a buffer not produced yet");
    require_format(!consumed_[id], "pipeline: a buffer feeds two stages");
    consumed_[id] = true;
  }
  const size_t outputs = stage->output_ports().size();
  require_format(consumed_.size() + outputs <= kMaxBuffers, "pipeline: too many buffers");
  StageNode node;
  node.first_output = static_cast<uint8_t>(consumed_.size());
  node.output_count = static_cast<uint8_t>(outputs);
  node.inputs = std::move(inputs);
  node.stage = std::move(stage);
  consumed_.resize(consumed_.size() + outputs, false);
  std::vector<uint8_t> ids;
  for (size_t i = 0; i < outputs; ++i) ids.push_back(static_cast<uint8_t>(node.first_output + i));
  nodes_.push_back(std::move(node));
  return ids;
}

std::vector<StageInfo> Pipeline::stage_infos() const {
  std::vector<StageInfo> infos;
  for (const StageNode& node : nodes_) {
    StageInfo s;
    s.type_id = static_cast<uint16_t>(node.stage->type());
    s.name = node.stage->name();
    s.config = node.stage->config();
    s.inputs = node.inputs;
    s.outputs = node.output_count;
    infos.push_back(std::move(s));
  }
  return infos;
}

std::vector<uint8_t> Pipeline::stored_buffers() const {
  std::vector<uint8_t> ids;
  for (size_t i = 0; i < consumed_.size(); ++i)
    if (!consumed_[i]) ids.push_back(static_cast<uint8_t>(i));
  return ids;
}

// A forward chain that runs block by block (see Pipeline::forward): the nodes
// from the first up to `last`, which codes its input from blocks (an
// elimination coder); the nodes between are block coders, and the first is
// either a block coder too or a stage whose output 0 comes as a ForwardSource.
struct ForwardChain {
  size_t last = 0;
  bool starts_with_source = false;
  std::vector<BlockCoder> coders;
};

std::optional<ForwardChain> forward_chain_at(const std::vector<StageNode>& nodes, size_t first) {
  const auto one_to_one = [](const StageNode& n) { return n.inputs.size() == 1 && n.output_count == 1; };
  ForwardChain chain;
  size_t next = first;
  uint8_t stream = 0;  // the buffer the next node of the chain must consume
  if (one_to_one(nodes[first]) && nodes[first].stage->forward_block_coder()) {
    stream = nodes[first].inputs[0];
  } else if (nodes[first].inputs.size() == 1 && nodes[first].output_count >= 1) {
    chain.starts_with_source = true;  // tried when the chain runs (forward_source may decline)
    stream = nodes[first].first_output;
    next = first + 1;
  } else {
    return std::nullopt;
  }
  for (; next < nodes.size(); ++next) {
    const StageNode& n = nodes[next];
    if (!one_to_one(n) || n.inputs[0] != stream) return std::nullopt;
    if (const BlockCoder coder = n.stage->forward_block_coder()) {
      chain.coders.push_back(coder);
      stream = n.first_output;
      continue;
    }
    chain.last = next;  // must code from blocks; checked when it runs
    // Nothing to fuse in a source-less chain without coders: the stage alone.
    if (!chain.starts_with_source && chain.coders.empty()) return std::nullopt;
    return chain;
  }
  return std::nullopt;
}

std::vector<Bytes> Pipeline::forward(ByteSpan chunk, const StageContext& ctx) const {
  std::vector<Bytes> buffers(consumed_.size());
  auto span_of = [&](uint8_t id) { return id == kChunk ? chunk : ByteSpan(buffers[id]); };
  for (size_t i = 0; i < nodes_.size();) {
    const StageNode& node = nodes_[i];
    std::vector<ByteSpan> in;
    for (uint8_t id : node.inputs) in.push_back(span_of(id));

    // Outputs the predictor choice's sample already computed from these very
    // inputs with this pipeline (node_memo.hpp): the same bytes, not run again.
    std::optional<std::vector<Bytes>> ahead = take_node_outputs(this, i, in);
    if (ahead && ahead->size() == node.output_count) {
      for (size_t k = 0; k < node.output_count; ++k) buffers[node.first_output + k] = std::move((*ahead)[k]);
      for (uint8_t id : node.inputs) release_buffer(std::move(buffers[id]));  // consumed
      ++i;
      continue;
    }

    // A chain of block-local stages ending in an elimination coder (e.g.
    // quantize -> diffnb -> bit-shuffle -> RZE) runs block by block: each
    // 16 KiB block passes through every stage while it is in L1, and only the
    // coded stream is ever held whole, not one full-size stream per stage
    // (a 1 GiB float32 chunk took 3 GiB more memory than the chunk that way).
    // The bytes are the same.
    if (const std::optional<ForwardChain> chain = forward_chain_at(nodes_, i)) {
      std::unique_ptr<ForwardSource> source;
      if (chain->starts_with_source) source = node.stage->forward_source(in, ctx);
      if (source || !chain->starts_with_source) {
        const ByteSpan stream = source ? ByteSpan() : in[0];
        const size_t n = source ? source->size() : stream.size;
        const std::vector<BlockCoder>& coders = chain->coders;
        const auto produce = [&](size_t block, uint8_t* scratch) -> const uint8_t* {
          const size_t length = block_length(n, block);
          const uint8_t* current = scratch;
          if (source) {
            source->encode_block(block, scratch);
          } else {
            current = stream.data + block * kBlockBytes;
          }
          for (const BlockCoder& coder : coders) {
            uint8_t* to = current == scratch ? scratch + kBlockBytes : scratch;
            coder(current, length, to);
            current = to;
          }
          return current;
        };
        const StageNode& last = nodes_[chain->last];
        std::vector<Bytes> coded;
        coded.push_back(acquire_buffer());
        if (last.stage->forward_from_blocks(n, produce, coded, ctx)) {
          if (source) {
            std::vector<Bytes> outputs;
            for (size_t k = 0; k < node.output_count; ++k) outputs.push_back(acquire_buffer());
            source->finish(outputs);
            for (size_t k = 1; k < node.output_count; ++k) buffers[node.first_output + k] = std::move(outputs[k]);
            release_buffer(std::move(outputs[0]));
          }
          buffers[last.first_output] = std::move(coded[0]);
          for (uint8_t id : node.inputs) release_buffer(std::move(buffers[id]));  // consumed
          i = chain->last + 1;
          continue;
        }
        release_buffer(std::move(coded[0]));
      }
    }

    StageContext node_ctx = ctx;
    node_ctx.stored_outputs = 0;
    for (size_t k = 0; k < node.output_count && k < 32; ++k)
      if (!consumed_[node.first_output + k]) node_ctx.stored_outputs |= uint32_t{1} << k;
    std::vector<Bytes> out;
    for (size_t k = 0; k < node.output_count; ++k) out.push_back(acquire_buffer());
    node.stage->forward(in, out, node_ctx);
    for (size_t k = 0; k < out.size(); ++k) buffers[node.first_output + k] = std::move(out[k]);
    for (uint8_t id : node.inputs) release_buffer(std::move(buffers[id]));  // consumed
    ++i;
  }
  std::vector<Bytes> stored;
  for (uint8_t id : stored_buffers()) {
    if (id == kChunk) {
      stored.emplace_back(chunk.data, chunk.data + chunk.size);
    } else {
      stored.push_back(std::move(buffers[id]));
    }
  }
  return stored;
}

Bytes Pipeline::inverse(std::vector<ByteSpan> stored, const StageContext& ctx) const {
  Bytes chunk;
  run_inverse(std::move(stored), ctx, nullptr, 0, &chunk);
  return chunk;
}

size_t Pipeline::inverse_into(std::vector<ByteSpan> stored, uint8_t* dst, size_t capacity,
                              const StageContext& ctx) const {
  return run_inverse(std::move(stored), ctx, dst, capacity, nullptr);
}

size_t Pipeline::run_inverse(std::vector<ByteSpan> stored, const StageContext& ctx, uint8_t* dst, size_t capacity,
                             Bytes* chunk) const {
  const std::vector<uint8_t> stored_ids = stored_buffers();
  require_format(stored.size() == stored_ids.size(), "frame stores the wrong number of buffers");
  std::vector<std::optional<Bytes>> owned(consumed_.size());
  std::vector<std::optional<ByteSpan>> view(consumed_.size());
  for (size_t i = 0; i < stored_ids.size(); ++i) view[stored_ids[i]] = stored[i];
  // Buffers still owned when the call ends (those kept under views, or left
  // by an early return) go back to the pool for the next chunk.
  struct ReleaseLeft {
    std::vector<std::optional<Bytes>>& buffers;
    ~ReleaseLeft() {
      for (auto& b : buffers)
        if (b) release_buffer(std::move(*b));
    }
  } release_left{owned};
  // The buffers that may be built in dst: the chunk, and the output a stage
  // rebuilding its input in place works over (a fill mask's values), and so
  // on down such stages. at_dst: those built there so far.
  std::vector<bool> into_dst(consumed_.size(), false), at_dst(consumed_.size(), false);
  if (dst) {
    into_dst[kChunk] = true;
    for (uint8_t id = kChunk;;) {
      const auto n = std::find_if(nodes_.begin(), nodes_.end(), [&](const StageNode& x) {
        return x.inputs.size() == 1 && x.inputs[0] == id;
      });
      const std::optional<size_t> port = n == nodes_.end() ? std::nullopt : n->stage->inverse_in_place_port();
      if (!port || *port >= n->output_count) break;
      id = static_cast<uint8_t>(n->first_output + *port);
      into_dst[id] = true;
    }
  }
  auto release_outputs = [&](const StageNode& node) {  // no longer needed
    for (size_t i = 0; i < node.output_count; ++i) {
      if (owned[node.first_output + i]) release_buffer(std::move(*owned[node.first_output + i]));
      owned[node.first_output + i].reset();
      view[node.first_output + i].reset();
    }
  };

  for (size_t r = 0; r < nodes_.size();) {
    const StageNode* node = &nodes_[nodes_.size() - 1 - r];
    std::vector<ByteSpan> outs;
    for (size_t i = 0; i < node->output_count; ++i) {
      const auto& v = view[node->first_output + i];
      require_format(v.has_value(), "pipeline: a stage output is missing");
      outs.push_back(*v);
    }

    // A chain of block-local inverses (e.g. RZE -> bit-shuffle -> diffnb) runs
    // block by block, each 16 KiB block passing through every stage while it
    // is in L1, instead of one full-size stream per stage (each megabytes,
    // evicted from cache between stages). The bytes are the same either way.
    std::vector<BlockCoder> coders;
    uint8_t target = 0;  // the buffer the chain rebuilds
    if (node->inputs.size() == 1 && node->output_count == 1) {
      target = node->inputs[0];
      for (size_t q = r + 1; q < nodes_.size(); ++q) {
        const StageNode& next = nodes_[nodes_.size() - 1 - q];
        if (next.inputs.size() != 1 || next.output_count != 1 || next.first_output != target) break;
        const BlockCoder coder = next.stage->inverse_block_coder();
        if (!coder) break;
        coders.push_back(coder);
        target = next.inputs[0];
      }
    }
    // The chain may end in a stage that takes the rebuilt stream block by block
    // (the quantizer's codes): then that stream is never stored whole either.
    const StageNode* sink_node = nullptr;
    size_t sink_port = 0;
    if (node->inputs.size() == 1 && node->output_count == 1 && r + 1 + coders.size() < nodes_.size()) {
      const StageNode& next = nodes_[nodes_.size() - 2 - r - coders.size()];
      if (next.inputs.size() == 1 && target >= next.first_output && target < next.first_output + next.output_count) {
        sink_node = &next;
        sink_port = target - next.first_output;
      }
    }
    std::unique_ptr<BlockSource> source;
    if (!coders.empty() || sink_node) source = node->stage->inverse_source(outs[0], ctx);
    std::unique_ptr<BlockSink> sink;
    if (source && sink_node) {
      std::vector<ByteSpan> sink_outs(sink_node->output_count);
      bool complete = true;
      for (size_t i = 0; i < sink_node->output_count; ++i) {
        if (i == sink_port) continue;
        const auto& v = view[sink_node->first_output + i];
        complete &= v.has_value();
        if (v) sink_outs[i] = *v;
      }
      if (complete) sink = sink_node->stage->inverse_sink(sink_outs, sink_port, source->size(), ctx);
    }
    if (source && (sink || !coders.empty())) {
      const size_t n = source->size();
      const uint8_t rebuilt_id = sink ? sink_node->inputs[0] : target;
      const size_t rebuilt_bytes = sink ? sink->size() : n;
      const bool direct = dst && into_dst[rebuilt_id] && rebuilt_bytes <= capacity;
      Bytes rebuilt;
      uint8_t* out = dst;
      if (!direct) {
        require_format(rebuilt_bytes <= ctx.max_stream_bytes, "pipeline: stream larger than the frame allows");
        rebuilt = acquire_buffer();
        rebuilt.resize(rebuilt_bytes);  // every byte is written below
        out = rebuilt.data();
      }
      ctx.exec.parallel_for(block_count(n), [&](size_t b) {
        alignas(16) uint8_t scratch[2][kBlockBytes];
        const size_t length = block_length(n, b);
        source->decode_block(b, scratch[0]);
        for (size_t c = 0; c < coders.size(); ++c) {
          uint8_t* to = c + 1 == coders.size() && !sink ? out + b * kBlockBytes : scratch[(c + 1) % 2];
          coders[c](scratch[c % 2], length, to);
        }
        if (sink) sink->consume(b, scratch[coders.size() % 2], out);
      });
      if (sink) sink->finish(out);
      release_outputs(*node);
      if (sink) release_outputs(*sink_node);
      if (direct && rebuilt_id == kChunk) return rebuilt_bytes;  // the chunk's producer was the last stage
      if (direct) {
        at_dst[rebuilt_id] = true;
        view[rebuilt_id] = ByteSpan(dst, rebuilt_bytes);
      } else {
        owned[rebuilt_id] = std::move(rebuilt);
        view[rebuilt_id] = ByteSpan(*owned[rebuilt_id]);
      }
      r += 1 + coders.size() + (sink ? 1 : 0);
      continue;
    }

    // A stage that rebuilds its input over one of its outputs: over dst when
    // that output was built there, else over the output's own buffer.
    const std::optional<size_t> port = node->inputs.size() == 1 ? node->stage->inverse_in_place_port() : std::nullopt;
    if (port && *port < node->output_count) {
      const uint8_t from = static_cast<uint8_t>(node->first_output + *port), to = node->inputs[0];
      const size_t size = outs[*port].size;
      if (at_dst[from] && into_dst[to]) {
        node->stage->inverse_in_place(outs, dst, size, ctx);
        release_outputs(*node);
        if (to == kChunk) return size;
        at_dst[to] = true;
        view[to] = ByteSpan(dst, size);
        ++r;
        continue;
      }
      if (owned[from]) {
        Bytes buffer = std::move(*owned[from]);  // outs[*port] still points at its bytes
        owned[from].reset();
        node->stage->inverse_in_place(outs, buffer.data(), size, ctx);
        release_outputs(*node);
        owned[to] = std::move(buffer);
        view[to] = ByteSpan(*owned[to]);
        ++r;
        continue;
      }
    }
    // Input 0 straight into dst: the chunk (the last stage inverted), or an
    // output that the stages after rebuild the chunk from in place.
    if (dst && into_dst[node->inputs[0]]) {
      std::vector<Bytes> rest;
      const std::optional<size_t> length =
          node->inputs.size() == 1 ? node->stage->inverse_into(outs, dst, capacity, ctx)
                                   : node->stage->inverse_first_into(outs, dst, capacity, rest, ctx);
      if (length) {
        require_format(rest.size() + 1 == node->inputs.size(), "stage inverse produced the wrong number of streams");
        release_outputs(*node);
        if (node->inputs[0] == kChunk) return *length;
        at_dst[node->inputs[0]] = true;
        view[node->inputs[0]] = ByteSpan(dst, *length);
        for (size_t i = 1; i < node->inputs.size(); ++i) {
          owned[node->inputs[i]] = std::move(rest[i - 1]);
          view[node->inputs[i]] = ByteSpan(*owned[node->inputs[i]]);
        }
        ++r;
        continue;
      }
    }
    // Inputs that are pieces of the outputs: they stay where they are (the
    // outputs are kept, not released, until the end).
    std::vector<ByteSpan> pieces;
    if (node->stage->inverse_views(outs, pieces, ctx)) {
      require_format(pieces.size() == node->inputs.size(), "stage inverse produced the wrong number of streams");
      for (size_t i = 0; i < pieces.size(); ++i) view[node->inputs[i]] = pieces[i];
      ++r;
      continue;
    }
    std::vector<Bytes> ins;
    for (size_t i = 0; i < node->inputs.size(); ++i) ins.push_back(acquire_buffer());
    node->stage->inverse(outs, ins, ctx);
    require_format(ins.size() == node->inputs.size(), "stage inverse produced the wrong number of streams");
    release_outputs(*node);
    for (size_t i = 0; i < ins.size(); ++i) {
      const uint8_t id = node->inputs[i];
      owned[id] = std::move(ins[i]);
      view[id] = ByteSpan(*owned[id]);
    }
    ++r;
  }
  require_format(view[kChunk].has_value(), "pipeline does not rebuild the chunk");
  const ByteSpan result = *view[kChunk];
  if (chunk == nullptr) {  // into dst (null only when capacity is 0)
    require_format(result.size <= capacity, "decoded chunk larger than the buffer");
    if (result.size) std::memcpy(dst, result.data, result.size);
    if (owned[kChunk]) release_buffer(std::move(*owned[kChunk]));
    return result.size;
  }
  if (owned[kChunk]) {
    *chunk = std::move(*owned[kChunk]);
  } else {
    chunk->assign(result.data, result.data + result.size);
  }
  return result.size;
}

}  // namespace fz::engine
