// FILLMASK: takes the fill value's elements out before lossy stages and puts
// them back exactly after. Inputs: in. Outputs: values (fill elements replaced
// by their nearest preceding data value), mask (one bit per element).
// Config (little-endian): u8 width | u64 fill bits.
#include "common/error.hpp"
#include "fillmask/fillmask.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "fillmask/fillmask_cuda.hpp"
#endif

namespace fz::engine {
namespace {

class FillMaskStage final : public Stage {
 public:
  FillMaskStage(unsigned width, uint64_t fill) : width_(width), fill_(fill) {
    if (width != 1 && width != 2 && width != 4 && width != 8) throw UsageError("fillmask: width 1, 2, 4 or 8");
    if (width < 8 && (fill >> (8 * width)) != 0) throw UsageError("fillmask: fill bits wider than the element");
  }
  StageType type() const override { return StageType::FillMask; }
  std::string name() const override { return "fillmask"; }
  std::vector<std::string> output_ports() const override { return {"values", "mask"}; }
  Bytes config() const override {
    Bytes c{static_cast<uint8_t>(width_)};
    append_le<uint64_t>(c, fill_);
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(2);
    fillmask::Streams streams{std::move(out[0]), std::move(out[1])};
    fillmask::encode(in.at(0), width_, fill_, streams, ctx.exec);
    out[0] = std::move(streams.values);
    out[1] = std::move(streams.mask);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in.resize(1);
    fillmask::decode(out.at(0), out.at(1), width_, fill_, in[0], ctx.max_stream_bytes, ctx.exec);
  }

#ifdef FZ_HAVE_CUDA
  // Both output sizes follow from the input's: values as long, one mask bit
  // per element.
  bool has_device_forward() const override { return true; }
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    const DeviceBuffer& chunk = in.at(0);
    if (chunk.size % width_ != 0)  // as the CPU encoder refuses it
      throw UsageError("fillmask: input size " + std::to_string(chunk.size) + " is not a multiple of the width");
    const size_t mask_size = fillmask::cuda::mask_bytes(chunk.size / width_);
    out.resize(2);
    out[0] = {work.allocate(chunk.size), chunk.size, nullptr, nullptr};
    out[1] = {work.allocate(mask_size), mask_size, nullptr, nullptr};
    void* scratch = work.allocate(fillmask::cuda::encode_scratch_bytes(chunk.size, width_));
    work.check(fillmask::cuda::encode(chunk.data, chunk.size, width_, fill_, out[0].data, out[1].data, scratch,
                                      static_cast<cudaStream_t>(work.stream())),
               "fillmask (GPU)");
  }

  // Sizes are checked here, with the CPU decoder's rules (FormatError sends
  // the chunk to the CPU, which names the problem); the mask's padding bits
  // are checked on the device, into the chunk's status word.
  bool has_device_inverse() const override { return true; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    const DeviceBuffer& values = out.at(0);
    const DeviceBuffer& mask = out.at(1);
    require_format(values.size % width_ == 0, "fillmask: values stream is not a whole number of elements");
    require_format(values.size <= max_stream_bytes, "fillmask: decoded chunk larger than allowed");
    require_format(mask.size == fillmask::cuda::mask_bytes(values.size / width_),
                   "fillmask: mask stream size does not match the element count");
    in.assign(1, {work.allocate(values.size), values.size, nullptr, nullptr});
    work.check(fillmask::cuda::decode(values.data, values.size, mask.data, mask.size, width_, fill_, in[0].data,
                                      values.size, work.status_word(), static_cast<cudaStream_t>(work.stream())),
               "fillmask inverse (GPU)");
  }
#endif

 private:
  unsigned width_;
  uint64_t fill_;
};

}  // namespace

std::unique_ptr<Stage> make_fillmask(unsigned width, uint64_t fill) {
  return std::make_unique<FillMaskStage>(width, fill);
}

std::unique_ptr<Stage> parse_fillmask(ByteSpan c) {
  require_format(c.size == 9, "fillmask stage: config must be 9 bytes");
  try {
    return make_fillmask(c.data[0], load_le<uint64_t>(c.data + 1));
  } catch (const UsageError& e) {
    throw FormatError(std::string("invalid fillmask stage config: ") + e.what());
  }
}

}  // namespace fz::engine
