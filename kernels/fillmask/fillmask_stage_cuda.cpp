// FILLMASK's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include "common/error.hpp"
#include "fillmask/fillmask_cuda.hpp"
#include "fillmask/fillmask_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class FillMaskDevice final : public StageDeviceFor<FillMaskStage> {
 public:
  // Both output sizes follow from the input's: values as long, one mask bit
  // per element.
  void forward_device(const FillMaskStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const unsigned width = stage.width();
    const DeviceBuffer& chunk = in.at(0);
    if (chunk.size % width != 0)  // as the CPU encoder refuses it
      throw UsageError("fillmask: input size " + std::to_string(chunk.size) + " is not a multiple of the width");
    const size_t mask_size = fillmask::cuda::mask_bytes(chunk.size / width);
    out.resize(2);
    out[0] = {work.allocate(chunk.size), chunk.size, nullptr, nullptr};
    out[1] = {work.allocate(mask_size), mask_size, nullptr, nullptr};
    void* scratch = work.allocate(fillmask::cuda::encode_scratch_bytes(chunk.size, width));
    work.check(fillmask::cuda::encode(chunk.data, chunk.size, width, stage.fill(), out[0].data, out[1].data,
                                      scratch, static_cast<cudaStream_t>(work.stream())),
               "fillmask (GPU)");
    work.release(scratch);
  }

  // Sizes are checked here, with the CPU decoder's rules (FormatError sends
  // the chunk to the CPU, which names the problem); the mask's padding bits
  // are checked on the device, into the chunk's status word.
  void inverse_device(const FillMaskStage& stage, const std::vector<DeviceBuffer>& out,
                      std::vector<DeviceBuffer>& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const unsigned width = stage.width();
    const DeviceBuffer& values = out.at(0);
    const DeviceBuffer& mask = out.at(1);
    require_format(values.size % width == 0, "fillmask: values stream is not a whole number of elements");
    require_format(values.size <= max_stream_bytes, "fillmask: decoded chunk larger than allowed");
    require_format(mask.size == fillmask::cuda::mask_bytes(values.size / width),
                   "fillmask: mask stream size does not match the element count");
    in.assign(1, {work.allocate_rebuilt(values.size), values.size, nullptr, nullptr});
    work.check(fillmask::cuda::decode(values.data, values.size, mask.data, mask.size, width, stage.fill(),
                                      in[0].data, values.size, work.status_word(),
                                      static_cast<cudaStream_t>(work.stream())),
               "fillmask inverse (GPU)");
  }
};

}  // namespace

const StageDevice& fillmask_stage_device() {
  static const FillMaskDevice part;
  return part;
}

}  // namespace fz::stage
