// SPLINE's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
// The whole forward runs on the device, the tuning included (spline_cuda.hpp),
// so it can be captured in a graph; the side stream's size (it holds the
// outliers) is known on the device only.
#include <cuda_runtime_api.h>

#include <algorithm>

#include <array>

#include "common/error.hpp"
#include "spline/spline_cuda.hpp"
#include "spline/spline_rules.hpp"
#include "spline/spline_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class SplineDevice final : public StageDeviceFor<SplineStage> {
 public:
  bool device_output_size_on_host(const SplineStage&, size_t port) const override {
    return port != SplineStage::kSidePort;  // the side stream's outliers vary
  }

  void forward_device(const SplineStage& stage, const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    stage.require_encoder();
    const std::vector<size_t>& dims = stage.dims();
    const spline::Config& config = stage.predictor_config();
    auto* side_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    out.resize(SplineStage::kSidePort + 1 + (stage.has_fill_input() ? 1 : 0));
    const uint8_t* fill_mask = nullptr;
    if (stage.has_fill_input()) {  // passed on unchanged, in memory of its own (each buffer has one consumer)
      const DeviceBuffer& fill = in.at(SplineStage::kFillInput);
      const size_t mask_bytes = stage.fill_mask_bytes();
      if (fill.device_size != nullptr || fill.size != mask_bytes)
        throw UsageError("spline (GPU): the fill mask must have one bit per element, its size known on the host");
      fill_mask = static_cast<const uint8_t*>(fill.data);
      uint8_t* copy = work.allocate(mask_bytes);
      if (mask_bytes != 0)
        work.check(cudaMemcpyAsync(copy, fill_mask, mask_bytes, cudaMemcpyDeviceToDevice,
                                   static_cast<cudaStream_t>(work.stream())),
                   "spline fill mask (GPU)");
      out[SplineStage::kFillPort] = {copy, mask_bytes, nullptr, nullptr};
    }
    const auto group_bytes = spline::cuda::code_group_bytes(dims, config.code_bytes);
    spline::cuda::CodeStreams codes;
    for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
      codes.at[g] = static_cast<uint8_t*>(work.allocate(group_bytes[g]));
      out[g] = {codes.at[g], group_bytes[g], nullptr, nullptr};
    }
    void* scratch = work.allocate(spline::cuda::encode_scratch_bytes(dims, config));
    // The side stream's room (stream_room): every element an outlier would
    // take 2x a float32 chunk, but a stream longer than the chunk makes the
    // frame no smaller than the chunk.
    size_t elements = 1;
    for (size_t d : dims) elements *= d;
    const size_t chunk_bytes = elements * config.width;
    const auto room = [&] {
      const size_t bytes = stream_room(work, side_size,
                                       std::min(spline::cuda::max_side_bytes(dims, config.width, config.coarse_levels),
                                                std::max<size_t>(chunk_bytes, 4096)),  // (4096: any header's room)
                                       chunk_bytes);
      out[SplineStage::kSidePort] = {work.allocate(bytes), 0, side_size, nullptr, bytes};
      return spline::cuda::SideRoom{static_cast<uint8_t*>(out[SplineStage::kSidePort].data), bytes};
    };
    work.check(spline::cuda::encode_with_side_room(in.at(0).data, fill_mask, dims, config, stage.enforced_bound(),
                                                   codes, room, side_size, scratch,
                                                   static_cast<cudaStream_t>(work.stream())),
               "spline (GPU)");
    work.release(scratch);
  }

  // Sizes are checked on the host as SplineStage::inverse checks them, before
  // anything is allocated; the side stream and the codes are validated on the
  // device (decode_cpu.cpp's checks), so no stream is read back.
  void inverse_device(const SplineStage& stage, const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in,
                      DeviceWork& work, size_t max_stream_bytes) const override {
    const std::vector<size_t>& dims = stage.dims();
    const spline::Config& config = stage.predictor_config();
    uint64_t elements = 1;
    for (size_t d : dims) require_format(!__builtin_mul_overflow(elements, d, &elements), "spline dims overflow");
    require_format(elements <= max_stream_bytes / config.width, "spline chunk larger than the frame allows");
    require_format(out.size() == SplineStage::kSidePort + 1 + (stage.has_fill_input() ? 1 : 0),
                   "spline: wrong number of streams");
    // spline::decode refuses these (UsageError) and the kernels would too
    // (cudaErrorInvalidValue): a frame's dims are data, so the CPU names them.
    spline::rules::Grid grid;
    require_format(spline::rules::grid_of(dims, grid) == spline::rules::GridCheck::kOk, "spline: dims the decoder refuses");
    require_format(grid.tile_count <= 0x7FFFFFFFu, "spline: too many tiles for the GPU");
    const auto group_bytes = spline::cuda::code_group_bytes(dims, config.code_bytes);
    std::array<size_t, spline::kCodeGroups> sizes{};
    spline::cuda::ConstCodeStreams codes;
    for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
      sizes[g] = out[g].size;
      codes.at[g] = static_cast<const uint8_t*>(out[g].data);
      require_format(sizes[g] == group_bytes[g], "spline: a code stream's size does not match dims");
    }
    const size_t bytes = static_cast<size_t>(elements) * config.width;
    in.resize(stage.has_fill_input() ? 2 : 1);
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    if (stage.has_fill_input()) {  // handed back as it came (the fill mask stage checks it)
      const DeviceBuffer& fill = out[SplineStage::kFillPort];
      const size_t mask_bytes = stage.fill_mask_bytes();
      require_format(fill.device_size == nullptr && fill.size == mask_bytes,
                     "spline: the fill mask does not match the chunk size");
      uint8_t* copy = work.allocate(mask_bytes);
      if (mask_bytes != 0)
        work.check(cudaMemcpyAsync(copy, fill.data, mask_bytes, cudaMemcpyDeviceToDevice,
                                   static_cast<cudaStream_t>(work.stream())),
                   "spline fill mask inverse (GPU)");
      in[SplineStage::kFillInput] = {copy, mask_bytes, nullptr, fill.host};
    }
    const DeviceBuffer& side = out[SplineStage::kSidePort];
    void* scratch = work.allocate(spline::cuda::decode_scratch_bytes(dims, stage.code_format()));
    work.check(spline::cuda::decode(codes, sizes, static_cast<const uint8_t*>(side.data), side.size, dims,
                                    stage.code_format(), static_cast<uint8_t*>(in[0].data), work.status_word(),
                                    scratch, static_cast<cudaStream_t>(work.stream())),
               "spline inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& spline_stage_device() {
  static const SplineDevice part;
  return part;
}

}  // namespace fz::stage
