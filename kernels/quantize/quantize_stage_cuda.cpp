// QUANTIZE's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include "common/error.hpp"
#include "quantize/quantize_cuda.hpp"
#include "quantize/quantize_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

// The params stream's bytes on the host: the frame's copy when it was
// stored, else (a frame whose params pass through another stage) read back
// from the device into `downloaded` (one synchronisation). A wrong length is
// refused before reading.
ByteSpan host_params(const DeviceBuffer& params, uint8_t (&downloaded)[quantize::kParamsBytes], DeviceWork& work) {
  require_format(params.size == quantize::kParamsBytes, "quantize: params have the wrong size");
  if (params.host) return ByteSpan(params.host, params.size);
  work.read_back(params.data, quantize::kParamsBytes, downloaded);
  return ByteSpan(downloaded, quantize::kParamsBytes);
}

class QuantizeDevice final : public StageDeviceFor<QuantizeStage> {
 public:
  // ABS and REL (the engine resolves NOA into ABS before this stage).
  bool has_device_forward(const QuantizeStage& stage) const override {
    return stage.quantizer_config().mode != quantize::Mode::kNoa;
  }
  bool device_output_size_on_host(const QuantizeStage&, size_t port) const override {
    return port != 1;  // outliers vary
  }
  void forward_device(const QuantizeStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const quantize::Config& config = stage.quantizer_config();
    const size_t n = in.at(0).size;
    const bool lossless = quantize::cuda::encode_method(config) == quantize::Method::kLossless;
    auto* sizes = reinterpret_cast<uint64_t*>(work.allocate(2 * sizeof(uint64_t)));
    out.resize(3);
    out[0] = {work.allocate(lossless ? 1 : n), lossless ? 0 : n, nullptr, nullptr};
    out[2] = {work.allocate(quantize::kParamsBytes), quantize::kParamsBytes, nullptr, nullptr};
    void* scratch = work.allocate(quantize::cuda::encode_scratch_bytes(n, config.width));
    // The outliers' room (stream_room): at most the chunk, their input (a
    // LOSSLESS fall-back stores the whole chunk there, which makes the frame
    // the raw one).
    const auto room = [&] {
      const size_t bytes = stream_room(work, sizes + 1, n, n);
      out[1] = {work.allocate(bytes), 0, sizes + 1, nullptr, bytes};
      return quantize::cuda::OutlierRoom{out[1].data, bytes};
    };
    work.check(quantize::cuda::encode_with_outlier_room(in[0].data, n, config, out[0].data, room, out[2].data, sizes,
                                                        scratch, static_cast<cudaStream_t>(work.stream())),
               "quantize (GPU)");
    work.release(scratch);
  }

  // Every method and mode the format allows (NOA, CONSTANT and LOSSLESS
  // included: frames written elsewhere may hold them). The 40 params bytes are
  // read on the host, with the CPU decoder's own checks, before anything is
  // allocated; the device checks the codes and the outlier count.
  void inverse_device(const QuantizeStage&, const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in,
                      DeviceWork& work, size_t max_stream_bytes) const override {
    const DeviceBuffer& codes = out.at(0);
    const DeviceBuffer& outliers = out.at(1);
    uint8_t downloaded[quantize::kParamsBytes];
    const quantize::Params p = quantize::read_params(host_params(out.at(2), downloaded, work));
    require_format(p.count <= max_stream_bytes / p.width, "quantize: chunk larger than allowed");
    const size_t bytes = static_cast<size_t>(p.count) * p.width;
    // As the CPU: the stream that holds one word per element must match
    // before the chunk is allocated (and the kernel reads no further).
    require_format(bytes == (p.method == quantize::Method::kLossless ? outliers.size : codes.size),
                   "quantize: streams do not match the element count");
    in.resize(1);
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(quantize::cuda::decode_scratch_bytes(p));
    work.check(quantize::cuda::decode(codes.data, codes.size, outliers.data, outliers.size, p, in[0].data,
                                      work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "quantize inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& quantize_stage_device() {
  static const QuantizeDevice part;
  return part;
}

}  // namespace fz::stage
