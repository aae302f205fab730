// BYTET's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA
// builds: length-preserving both ways, so every size is known on the host.
#include <cuda_runtime_api.h>

#include "bytetranspose/bytetranspose_cuda.hpp"
#include "bytetranspose/bytetranspose_stage.hpp"
#include "common/error.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class ByteTransposeDevice final : public StageDeviceFor<ByteTransposeStage> {
 public:
  void forward_device(const ByteTransposeStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const DeviceBuffer& chunk = in.at(0);
    out.assign(1, {work.allocate(chunk.size), chunk.size, nullptr, nullptr});
    work.check(bytetranspose::cuda::encode(chunk.data, chunk.size, stage.element_size(), out[0].data,
                                           static_cast<cudaStream_t>(work.stream())),
               "bytetranspose (GPU)");
  }
  void inverse_device(const ByteTransposeStage& stage, const std::vector<DeviceBuffer>& out,
                      std::vector<DeviceBuffer>& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const DeviceBuffer& planes = out.at(0);
    require_format(planes.size <= max_stream_bytes, "stream larger than the frame allows");
    in.assign(1, {work.allocate_rebuilt(planes.size), planes.size, nullptr, nullptr});
    work.check(bytetranspose::cuda::decode(planes.data, planes.size, stage.element_size(), in[0].data,
                                           static_cast<cudaStream_t>(work.stream())),
               "bytetranspose inverse (GPU)");
  }
};

}  // namespace

const StageDevice& bytetranspose_stage_device() {
  static const ByteTransposeDevice part;
  return part;
}

}  // namespace fz::stage
