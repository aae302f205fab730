// MERGE: N named inputs ("part0".."partN-1") into one stored stream, so that
// small side streams (outliers, anchors) share one coder. Config: u8 N.
#include "common/error.hpp"
#include "merge/merge.hpp"
#include "stage.hpp"

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

 private:
  unsigned parts_;
};

}  // namespace

std::unique_ptr<Stage> make_merge(unsigned parts) { return std::make_unique<MergeStage>(parts); }

}  // namespace fz::engine
