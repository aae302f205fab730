// The GPU part of a word stage (word_stage.hpp), for its
// kernels/<stage>/<stage>_stage_cuda.cpp: one function each way, taking the width.
#pragma once

#include <vector>

#include "common/error.hpp"
#include "common/stage/stage_device.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

class WordStageDevice final : public StageDeviceFor<WordStage> {
 public:
  // Fills `out` from `in`.
  using Forward = void (*)(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work);
  // Rebuilds `in` from `out`, no stream above max_bytes.
  using Inverse = void (*)(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work,
                           size_t max_bytes);
  // sizes_on_host: false when the forward's output length is data-dependent;
  // takes_device_sizes: true when the forward also takes an input whose
  // length is on the device (DeviceBuffer::device_size, capacity set).
  WordStageDevice(Forward forward, Inverse inverse, bool sizes_on_host, bool takes_device_sizes = false)
      : forward_(forward), inverse_(inverse), sizes_on_host_(sizes_on_host), takes_device_sizes_(takes_device_sizes) {}

  bool device_output_size_on_host(const WordStage&, size_t) const override { return sizes_on_host_; }
  bool device_forward_takes_device_sizes(const WordStage&) const override { return takes_device_sizes_; }
  void forward_device(const WordStage& stage, const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    out.resize(1);
    forward_(in.at(0), out[0], stage.width(), work);
  }
  void inverse_device(const WordStage& stage, const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in,
                      DeviceWork& work, size_t max_stream_bytes) const override {
    // The limit applies where the CPU applies it: to the stream a
    // length-preserving stage rebuilds (its input's length); a bounded
    // decoder checks the length it decodes to itself. Refusing more than the
    // CPU refuses would send valid chunks to the CPU.
    if (!stage.bounded_decoder())
      require_format(out.at(0).size <= max_stream_bytes, "stream larger than the frame allows");
    in.resize(1);
    inverse_(out.at(0), in[0], stage.width(), work, max_stream_bytes);
  }

 private:
  Forward forward_;
  Inverse inverse_;
  bool sizes_on_host_;
  bool takes_device_sizes_;
};

}  // namespace fz::stage
