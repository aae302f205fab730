// MERGE: N named inputs ("part0".."partN-1") into one stored stream, so that
// small side streams (outliers, anchors) share one coder. Config: u8 N
// (docs/FORMAT.md, stage type 6). The stage over merge.hpp; its GPU
// part is merge_stage_cuda.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/stage/stage.hpp"

namespace fz::stage {

class MergeStage final : public Stage {
 public:
  // Throws UsageError unless 1 <= parts <= 255.
  explicit MergeStage(unsigned parts);
  StageType type() const override { return StageType::Merge; }
  std::string name() const override { return "merge" + std::to_string(parts_); }
  Bytes config() const override { return Bytes{static_cast<uint8_t>(parts_)}; }
  std::vector<std::string> input_ports() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  bool inverse_views(const std::vector<ByteSpan>& out, std::vector<ByteSpan>& in,
                     const StageContext& ctx) const override;
  unsigned parts() const { return parts_; }

 private:
  unsigned parts_;
};

std::unique_ptr<Stage> make_merge(unsigned parts);

}  // namespace fz::stage
