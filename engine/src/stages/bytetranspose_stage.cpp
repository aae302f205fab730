// BYTET: byte transposition by element size. Config: u32 element size (LE).
#include "bytetranspose/bytetranspose.hpp"
#include "common/error.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "bytetranspose/bytetranspose_cuda.hpp"
#endif

namespace fz::engine {
namespace {

class ByteTransposeStage final : public Stage {
 public:
  explicit ByteTransposeStage(uint32_t element_size) : size_(element_size) {
    if (size_ < 1 || size_ > (1u << 24)) throw UsageError("bytetranspose: element size must be 1 .. 2^24");
  }
  StageType type() const override { return StageType::ByteTranspose; }
  std::string name() const override { return "bytetranspose" + std::to_string(size_); }
  Bytes config() const override {
    Bytes c;
    append_le<uint32_t>(c, size_);
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(1);
    bytetranspose::encode(in.at(0), size_, out[0], ctx.exec);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in.resize(1);
    require_format(out.at(0).size <= ctx.max_stream_bytes, "stream larger than the frame allows");
    bytetranspose::decode(out.at(0), size_, in[0], ctx.exec);
  }

#ifdef FZ_HAVE_CUDA
  // Length-preserving both ways: every size is known on the host.
  bool has_device_forward() const override { return true; }
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    const DeviceBuffer& chunk = in.at(0);
    out.assign(1, {work.allocate(chunk.size), chunk.size, nullptr, nullptr});
    work.check(bytetranspose::cuda::encode(chunk.data, chunk.size, size_, out[0].data,
                                           static_cast<cudaStream_t>(work.stream())),
               "bytetranspose (GPU)");
  }
  bool has_device_inverse() const override { return true; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    const DeviceBuffer& planes = out.at(0);
    require_format(planes.size <= max_stream_bytes, "stream larger than the frame allows");
    in.assign(1, {work.allocate(planes.size), planes.size, nullptr, nullptr});
    work.check(bytetranspose::cuda::decode(planes.data, planes.size, size_, in[0].data,
                                           static_cast<cudaStream_t>(work.stream())),
               "bytetranspose inverse (GPU)");
  }
#endif

 private:
  uint32_t size_;
};

}  // namespace

std::unique_ptr<Stage> make_bytetranspose(uint32_t element_size) {
  return std::make_unique<ByteTransposeStage>(element_size);
}

}  // namespace fz::engine
