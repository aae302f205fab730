// The GPU part of a stage type: what Stage's device entry points
// (has_device_forward, forward_device, ... in stage.hpp) hand over to. A
// stage's GPU part lives in kernels/<stage>/<stage>_stage_cuda.cpp, which
// only CUDA builds compile (kernels/CMakeLists.txt); the part is found by type
// id in a table generated from stage_list.inc, and a CPU build's table is
// empty. No CUDA type appears here, so the stage's CPU files may include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/stage/stage.hpp"

namespace fz::stage {

// Type-erased: the entry points below receive the stage itself.
class StageDevice {
 public:
  virtual ~StageDevice() = default;
  // Whether `stage` is of the class this part was written for (a test's
  // stand-in may borrow a real stage's type id, but not its class).
  virtual bool accepts(const Stage& stage) const = 0;
  virtual bool has_forward(const Stage& stage) const = 0;
  virtual bool output_size_on_host(const Stage& stage, size_t port) const = 0;
  virtual bool takes_device_sizes(const Stage& stage) const = 0;
  virtual void forward(const Stage& stage, const std::vector<DeviceBuffer>& inputs,
                       std::vector<DeviceBuffer>& outputs, DeviceWork& work) const = 0;
  virtual bool has_inverse(const Stage& stage) const = 0;
  virtual bool inverse_reads_host_bytes(const Stage& stage) const = 0;
  virtual void inverse(const Stage& stage, const std::vector<DeviceBuffer>& outputs,
                       std::vector<DeviceBuffer>& inputs, DeviceWork& work, size_t max_stream_bytes) const = 0;
};

// What a stage's GPU part derives from: the same entry points, given the
// stage as the class its CPU part declares (kernels/<stage>/<stage>_stage.hpp).
// The meaning of each is that of Stage's entry point of the same name.
template <typename StageClass>
class StageDeviceFor : public StageDevice {
 public:
  virtual bool has_device_forward(const StageClass&) const { return true; }
  virtual bool device_output_size_on_host(const StageClass&, size_t) const { return true; }
  virtual bool device_forward_takes_device_sizes(const StageClass&) const { return false; }
  virtual void forward_device(const StageClass& stage, const std::vector<DeviceBuffer>& inputs,
                              std::vector<DeviceBuffer>& outputs, DeviceWork& work) const = 0;
  virtual bool has_device_inverse(const StageClass&) const { return true; }
  virtual bool device_inverse_reads_host_bytes(const StageClass&) const { return false; }
  virtual void inverse_device(const StageClass& stage, const std::vector<DeviceBuffer>& outputs,
                              std::vector<DeviceBuffer>& inputs, DeviceWork& work,
                              size_t max_stream_bytes) const = 0;

 private:
  static const StageClass& as(const Stage& stage) { return static_cast<const StageClass&>(stage); }
  bool accepts(const Stage& stage) const final { return dynamic_cast<const StageClass*>(&stage) != nullptr; }
  bool has_forward(const Stage& stage) const final { return has_device_forward(as(stage)); }
  bool output_size_on_host(const Stage& stage, size_t port) const final {
    return device_output_size_on_host(as(stage), port);
  }
  bool takes_device_sizes(const Stage& stage) const final { return device_forward_takes_device_sizes(as(stage)); }
  void forward(const Stage& stage, const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
               DeviceWork& work) const final {
    forward_device(as(stage), inputs, outputs, work);
  }
  bool has_inverse(const Stage& stage) const final { return has_device_inverse(as(stage)); }
  bool inverse_reads_host_bytes(const Stage& stage) const final {
    return device_inverse_reads_host_bytes(as(stage));
  }
  void inverse(const Stage& stage, const std::vector<DeviceBuffer>& outputs, std::vector<DeviceBuffer>& inputs,
               DeviceWork& work, size_t max_stream_bytes) const final {
    inverse_device(as(stage), outputs, inputs, work, max_stream_bytes);
  }
};

// The GPU part of stage type `type_id` in this build, or nullptr (no CUDA in
// this build, or the stage has none): stage_device_registry_cuda.cpp, or
// stage_device_registry_none.cpp in CPU builds.
const StageDevice* find_stage_device(uint16_t type_id);

// Chunks from this size on read a stored stream's exact length back before
// allocating its room (stream_room): one synchronisation, a few microseconds
// beside their milliseconds, for a room that is mostly a small part of the
// worst case.
constexpr size_t kExactRoomMinBytes = size_t{64} << 20;

// The room to allocate for a stored stream whose exact length the device has
// just written to *length (Lorenzo's outliers, the quantizer's, the spline's
// side stream): `most` for chunks under kExactRoomMinBytes, where `most` is
// the worst case capped near the chunk's size (a longer stream means the raw
// frame, which the engine checks: cuda::outgrew_room); for larger chunks the
// length read back, or 1 byte when it exceeds `most` (written nowhere).
inline size_t stream_room(DeviceWork& work, const uint64_t* length, size_t most, size_t chunk_bytes) {
  if (chunk_bytes < kExactRoomMinBytes) return most;
  uint64_t exact = 0;
  work.read_back(reinterpret_cast<const uint8_t*>(length), sizeof exact, reinterpret_cast<uint8_t*>(&exact));
  return exact <= most ? static_cast<size_t>(exact) : 1;
}

// Two adjacent stages that run on the GPU as one pass: `first`'s one output
// is `second`'s one input, which nothing else reads or stores, so the stream
// between them need never be made (kernels/bitshuffle_rze/: a bit-shuffle and
// the RZE of bytes after it, in one read of the input and one write of the
// output). forward: from first's input to second's output; inverse: back,
// with max_stream_bytes the limit of the stages' own inverses. The bytes,
// refusals and status words are those of the two stages' own GPU parts one
// after the other (the engine's device pipeline, engine/src/cuda/, chooses).
class FusedDevicePair {
 public:
  virtual ~FusedDevicePair() = default;
  virtual bool accepts(const Stage& first, const Stage& second) const = 0;
  virtual void forward(const Stage& first, const Stage& second, const DeviceBuffer& in, DeviceBuffer& out,
                       DeviceWork& work) const = 0;
  virtual void inverse(const Stage& first, const Stage& second, const DeviceBuffer& out, DeviceBuffer& in,
                       DeviceWork& work, size_t max_stream_bytes) const = 0;
};

// The pair that runs `first` then `second` in this build, or nullptr (CPU
// builds have none).
const FusedDevicePair* find_fused_device_pair(const Stage& first, const Stage& second);

// Three adjacent stages as one pass, as a pair but with a stage before it
// (kernels/bitshuffle_rze/: DIFFNB, the bit-shuffle and the RZE of bytes, of
// pfpl and lossless): neither stream between them is made.
class FusedDeviceTriple {
 public:
  virtual ~FusedDeviceTriple() = default;
  virtual bool accepts(const Stage& first, const Stage& second, const Stage& third) const = 0;
  virtual void forward(const Stage& first, const Stage& second, const Stage& third, const DeviceBuffer& in,
                       DeviceBuffer& out, DeviceWork& work) const = 0;
  virtual void inverse(const Stage& first, const Stage& second, const Stage& third, const DeviceBuffer& out,
                       DeviceBuffer& in, DeviceWork& work, size_t max_stream_bytes) const = 0;
};

// The triple that runs the three in this build, or nullptr.
const FusedDeviceTriple* find_fused_device_triple(const Stage& first, const Stage& second, const Stage& third);

}  // namespace fz::stage
