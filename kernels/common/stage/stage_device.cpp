// Stage's GPU entry points: the stage type's GPU part when this build has one
// for this stage (stage_device.hpp), else "none" (the pipeline stays on the CPU).
#include <stdexcept>

#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

const StageDevice* device_part(const Stage& stage) {
  const StageDevice* part = find_stage_device(static_cast<uint16_t>(stage.type()));
  return part && part->accepts(stage) ? part : nullptr;
}

}  // namespace

bool Stage::has_device_forward() const {
  const StageDevice* part = device_part(*this);
  return part && part->has_forward(*this);
}

bool Stage::device_output_size_on_host(size_t port) const {
  const StageDevice* part = device_part(*this);
  return !part || part->output_size_on_host(*this, port);
}

bool Stage::device_forward_takes_device_sizes() const {
  const StageDevice* part = device_part(*this);
  return part && part->takes_device_sizes(*this);
}

void Stage::forward_device(const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
                           DeviceWork& work) const {
  if (!has_device_forward()) throw std::logic_error("stage " + name() + " has no GPU forward");
  device_part(*this)->forward(*this, inputs, outputs, work);
}

bool Stage::has_device_inverse() const {
  const StageDevice* part = device_part(*this);
  return part && part->has_inverse(*this);
}

bool Stage::device_inverse_reads_host_bytes() const {
  const StageDevice* part = device_part(*this);
  return part && part->inverse_reads_host_bytes(*this);
}

void Stage::inverse_device(const std::vector<DeviceBuffer>& outputs, std::vector<DeviceBuffer>& inputs,
                           DeviceWork& work, size_t max_stream_bytes) const {
  if (!has_device_inverse()) throw std::logic_error("stage " + name() + " has no GPU inverse");
  device_part(*this)->inverse(*this, outputs, inputs, work, max_stream_bytes);
}

}  // namespace fz::stage
