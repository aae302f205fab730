// ANS: zero-run tokens, then static rANS in independent lanes, over u16
// symbols (docs/FORMAT.md, stage type 14; format: ans/ans.hpp).
// Config (9 bytes): u32 alphabet A | u8 probability bits M | u32 lane
// symbols S, little-endian. The stream does not repeat them: the decoder
// takes them from the stage.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ans/ans.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class AnsStage final : public Stage {
 public:
  // Throws UsageError for a config the coder refuses.
  explicit AnsStage(const ans::Config& config);
  StageType type() const override { return StageType::Ans; }
  std::string name() const override { return "ans" + std::to_string(config_.alphabet); }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  const ans::Config& coder_config() const { return config_; }

 private:
  ans::Config config_;
};

std::unique_ptr<Stage> make_ans(const ans::Config& config);

}  // namespace fz::stage
