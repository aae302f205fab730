// The per-thread memo of one node's outputs (node_memo.hpp).
#include "node_memo.hpp"

#include <cstring>

namespace fz::engine {
namespace {

struct Memo {
  std::shared_ptr<const Pipeline> pipeline;
  size_t node = 0;
  std::vector<Bytes> inputs;
  std::vector<Bytes> outputs;
};

Memo& memo() {
  thread_local Memo m;
  return m;
}

}  // namespace

void remember_node_outputs(std::shared_ptr<const Pipeline> pipeline, size_t node,
                           const std::vector<ByteSpan>& inputs, std::vector<Bytes> outputs) {
  Memo& m = memo();
  m.pipeline = std::move(pipeline);
  m.node = node;
  m.inputs.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) m.inputs[k].assign(inputs[k].data, inputs[k].data + inputs[k].size);
  m.outputs = std::move(outputs);
}

std::optional<std::vector<Bytes>> take_node_outputs(const Pipeline* pipeline, size_t node,
                                                    const std::vector<ByteSpan>& inputs) {
  Memo& m = memo();
  if (!m.pipeline || m.pipeline.get() != pipeline || m.node != node || m.inputs.size() != inputs.size())
    return std::nullopt;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (m.inputs[k].size() != inputs[k].size ||
        (inputs[k].size != 0 && std::memcmp(m.inputs[k].data(), inputs[k].data, inputs[k].size) != 0))
      return std::nullopt;
  std::vector<Bytes> outputs = std::move(m.outputs);
  forget_node_outputs();
  return outputs;
}

void forget_node_outputs() {
  Memo& m = memo();
  m.pipeline.reset();
  m.inputs.clear();
  m.outputs.clear();
}

}  // namespace fz::engine
