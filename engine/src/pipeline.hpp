// A pipeline is a DAG of stages over numbered buffers. Buffer 0 is the chunk;
// each stage consumes existing buffers and produces new ones, numbered in order
// of creation. Every buffer is consumed at most once; the buffers nobody
// consumes are stored in the frame, in ascending id order. The frame records
// exactly this (stage type, config, input ids), so the inverse is built from the
// frame alone.
#pragma once

#include <memory>
#include <vector>

#include "fz/fz.hpp"
#include "stage_names.hpp"

namespace fz::engine {

constexpr size_t kMaxBuffers = 255;

struct StageNode {
  std::unique_ptr<Stage> stage;
  std::vector<uint8_t> inputs;  // buffer ids
  uint8_t first_output = 0;     // outputs are first_output .. first_output + n - 1
  uint8_t output_count = 0;
};

class Pipeline {
 public:
  static constexpr uint8_t kChunk = 0;

  // Appends a stage fed by `inputs` (one per input port); returns its output ids.
  // Throws FormatError if an id does not exist yet or is already consumed.
  std::vector<uint8_t> add(std::unique_ptr<Stage> stage, std::vector<uint8_t> inputs);

  const std::vector<StageNode>& nodes() const { return nodes_; }
  size_t buffer_count() const { return consumed_.size(); }
  // Unconsumed buffers, ascending: what the frame stores.
  std::vector<uint8_t> stored_buffers() const;
  // The stages as the frame header records them (type, config, inputs).
  std::vector<StageInfo> stage_infos() const;

  // Runs every stage; returns the stored buffers in stored_buffers() order.
  std::vector<Bytes> forward(ByteSpan chunk, const StageContext& ctx) const;
  // Rebuilds the chunk from the stored buffers.
  Bytes inverse(std::vector<ByteSpan> stored, const StageContext& ctx) const;
  // The same into caller memory of `capacity` bytes; returns the chunk's length
  // (FormatError if it does not fit). The last stage writes there directly when
  // it can (Stage::inverse_into), saving a copy of the chunk.
  size_t inverse_into(std::vector<ByteSpan> stored, uint8_t* dst, size_t capacity, const StageContext& ctx) const;

 private:
  // Shared by inverse and inverse_into: with dst, the chunk goes there and its
  // length is returned; without, it is moved into *chunk.
  size_t run_inverse(std::vector<ByteSpan> stored, const StageContext& ctx, uint8_t* dst, size_t capacity,
                     Bytes* chunk) const;

  std::vector<StageNode> nodes_;
  std::vector<bool> consumed_ = {false};  // one per buffer
};

// The pipeline a frame records: its stages, in order, each rebuilt from its
// type id and config. Throws FormatError for an unknown stage, a config it
// refuses, a wrong output count or inputs that do not form a pipeline.
Pipeline pipeline_of_stages(const std::vector<StageInfo>& stages);

}  // namespace fz::engine
