// LORENZO's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include <algorithm>
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
    const auto stream = static_cast<cudaStream_t>(work.stream());
    auto* outliers_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    out.resize(2);
    out[0] = {work.allocate(2 * elements), 2 * elements, nullptr, nullptr};
    void* scratch = work.allocate(lorenzo::cuda::encode_scratch_bytes(dims, config.width));
    work.check(lorenzo::cuda::encode_codes(in.at(0).data, dims, config, stage.enforced_bound(), out[0].data,
                                           outliers_size, scratch, stream),
               "lorenzo (GPU)");
    // The outlier stream's room (stream_room). Every record could hold a
    // delta and raw bits (13 bytes a float32 element), but a stream longer
    // than the chunk (its input, the whole chunk in every preset) makes the
    // frame no smaller than the chunk: the room stops there.
    const size_t chunk_bytes = elements * config.width;
    const size_t room = stream_room(work, outliers_size,
                                    std::min(lorenzo::cuda::max_outliers_bytes(dims, config.width),
                                             std::max<size_t>(chunk_bytes, 64)),  // (64: a header's room)
                                    chunk_bytes);
    out[1] = {work.allocate(room), 0, outliers_size, nullptr, room};
    work.check(lorenzo::cuda::encode_outliers(in.at(0).data, dims, config, stage.enforced_bound(), out[1].data,
                                              room, scratch, stream),
               "lorenzo outliers (GPU)");
    work.release(scratch);
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
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    const DeviceBuffer& outliers = out.at(1);
    void* scratch = work.allocate(
        lorenzo::cuda::decode_scratch_bytes(dims, config.width, outliers.size, out[0].data, in[0].data));
    work.check(lorenzo::cuda::decode(out[0].data, outliers.data, outliers.size, dims, config, in[0].data,
                                     work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "lorenzo inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& lorenzo_stage_device() {
  static const LorenzoDevice part;
  return part;
}

}  // namespace fz::stage
