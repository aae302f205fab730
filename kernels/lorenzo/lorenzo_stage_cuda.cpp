// LORENZO's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include <limits>

#include "common/error.hpp"
#include "lorenzo/lorenzo_cuda.hpp"
#include "lorenzo/lorenzo_rules.hpp"
#include "lorenzo/lorenzo_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class LorenzoDevice final : public StageDeviceFor<LorenzoStage> {
 public:
  bool device_output_size_on_host(const LorenzoStage&, size_t port) const override {
    return port != 1;  // outliers vary
  }
  void forward_device(const LorenzoStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const std::vector<size_t>& dims = stage.dims();
    const lorenzo::Config& config = stage.predictor_config();
    size_t elements = 1;
    for (size_t d : dims) elements *= d;
    auto* outliers_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    out.resize(2);
    out[0] = {work.allocate(2 * elements), 2 * elements, nullptr, nullptr};
    const size_t outliers_capacity = lorenzo::cuda::max_outliers_bytes(dims, config.width);
    out[1] = {work.allocate(outliers_capacity), 0, outliers_size, nullptr, outliers_capacity};
    void* scratch = work.allocate(lorenzo::cuda::encode_scratch_bytes(dims, config.width));
    work.check(lorenzo::cuda::encode(in.at(0).data, dims, config, stage.enforced_bound(), out[0].data, out[1].data,
                                     outliers_size, scratch, static_cast<cudaStream_t>(work.stream())),
               "lorenzo (GPU)");
  }

  // Sizes and the config are checked on the host as the CPU checks them,
  // before anything is allocated; the outlier stream (header, records) and
  // the codes are validated on the device, so no stream is read back.
  void inverse_device(const LorenzoStage& stage, const std::vector<DeviceBuffer>& out,
                      std::vector<DeviceBuffer>& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const std::vector<size_t>& dims = stage.dims();
    const lorenzo::Config& config = stage.predictor_config();
    const uint64_t elements = stage.checked_elements(out.at(0).size, max_stream_bytes);
    // lorenzo::decode refuses these (UsageError) and the kernel would too
    // (cudaErrorInvalidValue): a frame's config is data, so the CPU names it.
    require_format(elements <= std::numeric_limits<size_t>::max() / 32, "lorenzo: too many elements");
    require_format(lorenzo::config_is_decodable(config), "lorenzo: config the decoder refuses");
    const size_t bytes = static_cast<size_t>(elements) * config.width;
    in.resize(1);
    in[0] = {work.allocate(bytes), bytes, nullptr, nullptr};
    const DeviceBuffer& outliers = out.at(1);
    void* scratch = work.allocate(lorenzo::cuda::decode_scratch_bytes(dims, config.width, outliers.size));
    work.check(lorenzo::cuda::decode(out[0].data, outliers.data, outliers.size, dims, config, in[0].data,
                                     work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "lorenzo inverse (GPU)");
  }
};

}  // namespace

const StageDevice& lorenzo_stage_device() {
  static const LorenzoDevice part;
  return part;
}

}  // namespace fz::stage
