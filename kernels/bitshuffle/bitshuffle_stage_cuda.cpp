// BIT's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds:
// length-preserving both ways, so every size is known on the host.
#include <cuda_runtime_api.h>

#include "bitshuffle/bitshuffle_cuda.hpp"
#include "word_stage/word_stage_device.hpp"

namespace fz::stage {
namespace {

cudaStream_t stream_of(DeviceWork& work) { return static_cast<cudaStream_t>(work.stream()); }

void forward(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out = {work.allocate(in.size), in.size, nullptr, nullptr};
  work.check(bitshuffle::cuda::encode(in.data, in.size, width, out.data, stream_of(work)), "bit-shuffle (GPU)");
}

void inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t) {
  in = {work.allocate_rebuilt(out.size), out.size, nullptr, nullptr};
  work.check(bitshuffle::cuda::decode(out.data, out.size, width, in.data, stream_of(work)), "bit-shuffle inverse (GPU)");
}

}  // namespace

const StageDevice& bitshuffle_stage_device() {
  static const WordStageDevice part(forward, inverse, true);
  return part;
}

}  // namespace fz::stage
