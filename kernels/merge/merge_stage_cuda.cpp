// MERGE's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include "common/error.hpp"
#include "merge/merge_cuda.hpp"
#include "merge/merge_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class MergeDevice final : public StageDeviceFor<MergeStage> {
 public:
  // The merged size is the header plus the parts' sizes, which the engine
  // knows on the host for every stage input.
  void forward_device(const MergeStage&, const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    std::vector<merge::cuda::Part> parts;
    for (const DeviceBuffer& part : in) parts.push_back({part.data, part.size});
    const size_t size = merge::cuda::encoded_size(parts);
    out.assign(1, {work.allocate(size), size, nullptr, nullptr});
    work.check(merge::cuda::encode(parts, out[0].data, static_cast<cudaStream_t>(work.stream())), "merge (GPU)");
  }

  // The header (count and sizes) is read on the host, from the frame's bytes
  // or, for a stream an earlier GPU inverse rebuilt, downloaded from the
  // device (one synchronisation), and checked with the CPU decoder's rules
  // and limits: a refused stream throws FormatError, so the CPU decodes the
  // chunk and names the error. The parts are views into the merged stream
  // (no copy; no GPU stage writes into its inputs), with their host bytes
  // when the stream has them.
  void inverse_device(const MergeStage& stage, const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in,
                      DeviceWork& work, size_t max_stream_bytes) const override {
    const unsigned parts = stage.parts();
    const DeviceBuffer& merged = out.at(0);
    const size_t header_size = merge::cuda::header_bytes(merged.size, parts);
    Bytes downloaded;
    const uint8_t* header = merged.host;
    if (!header) {
      downloaded.resize(header_size);
      work.read_back(merged.data, header_size, downloaded.data());
      header = downloaded.data();
    }
    const merge::cuda::Layout layout =
        merge::cuda::read_layout(ByteSpan(header, header_size), merged.size, max_stream_bytes, parts);
    require_format(layout.status == 0, "merge: malformed stream header");
    require_format(layout.sizes.size() == parts, "merge stream holds the wrong number of parts");
    in.clear();
    for (size_t i = 0; i < parts; ++i) {
      const size_t offset = static_cast<size_t>(layout.offsets[i]), size = static_cast<size_t>(layout.sizes[i]);
      in.push_back({merged.data + offset, size, nullptr, merged.host ? merged.host + offset : nullptr});
    }
  }
};

}  // namespace

const StageDevice& merge_stage_device() {
  static const MergeDevice part;
  return part;
}

}  // namespace fz::stage
