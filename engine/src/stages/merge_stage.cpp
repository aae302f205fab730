// MERGE: N named inputs ("part0".."partN-1") into one stored stream, so that
// small side streams (outliers, anchors) share one coder. Config: u8 N.
#include "common/error.hpp"
#include "merge/merge.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "merge/merge_cuda.hpp"
#endif

namespace fz::engine {
namespace {

class MergeStage final : public Stage {
 public:
  explicit MergeStage(unsigned parts) : parts_(parts) {
    if (parts < 1 || parts > 255) throw UsageError("merge: 1 to 255 parts");
  }
  StageType type() const override { return StageType::Merge; }
  std::string name() const override { return "merge" + std::to_string(parts_); }
  Bytes config() const override { return Bytes{static_cast<uint8_t>(parts_)}; }
  std::vector<std::string> input_ports() const override {
    std::vector<std::string> ports;
    for (unsigned i = 0; i < parts_; ++i) ports.push_back("part" + std::to_string(i));
    return ports;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext&) const override {
    out.resize(1);
    merge::encode(in, out[0]);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in = merge::decode(out.at(0), ctx.max_stream_bytes, parts_);
    require_format(in.size() == parts_, "merge stream holds the wrong number of parts");
  }

#ifdef FZ_HAVE_CUDA
  // The merged size is the header plus the parts' sizes, which the engine
  // knows on the host for every stage input.
  bool has_device_forward() const override { return true; }
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
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
  bool has_device_inverse() const override { return true; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    const DeviceBuffer& merged = out.at(0);
    const size_t header_size = merge::cuda::header_bytes(merged.size, parts_);
    Bytes downloaded;
    const uint8_t* header = merged.host;
    if (!header) {
      downloaded.resize(header_size);
      work.read_back(merged.data, header_size, downloaded.data());
      header = downloaded.data();
    }
    const merge::cuda::Layout layout =
        merge::cuda::read_layout(ByteSpan(header, header_size), merged.size, max_stream_bytes, parts_);
    require_format(layout.status == 0, "merge: malformed stream header");
    require_format(layout.sizes.size() == parts_, "merge stream holds the wrong number of parts");
    in.clear();
    for (size_t i = 0; i < parts_; ++i) {
      const size_t offset = static_cast<size_t>(layout.offsets[i]), size = static_cast<size_t>(layout.sizes[i]);
      in.push_back({merged.data + offset, size, nullptr, merged.host ? merged.host + offset : nullptr});
    }
  }
#endif

 private:
  unsigned parts_;
};

}  // namespace

std::unique_ptr<Stage> make_merge(unsigned parts) { return std::make_unique<MergeStage>(parts); }

}  // namespace fz::engine
