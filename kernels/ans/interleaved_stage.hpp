// ANS, interleaved, over u16 symbols (docs/FORMAT.md, stage type 15, name
// "ansi"; format: ans/interleaved.hpp). Config (3 bytes): u16 alphabet A
// (2..65535) | u8 probability bits M (8..16, 2^M >= A + 1), little-endian.
// The stream does not repeat them: the decoder takes them from the stage.
// Its kernels live beside type 14's in kernels/ans/ (they share the tables,
// normalisation and rANS steps).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ans/interleaved.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class AnsInterleavedStage final : public Stage {
 public:
  // Throws UsageError for a config the coder refuses.
  explicit AnsInterleavedStage(const ans::InterleavedConfig& config);
  StageType type() const override { return StageType::AnsInterleaved; }
  std::string name() const override { return "ansi" + std::to_string(config_.alphabet); }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  const ans::InterleavedConfig& coder_config() const { return config_; }

 private:
  ans::InterleavedConfig config_;
};

std::unique_ptr<Stage> make_ansi(const ans::InterleavedConfig& config);

}  // namespace fz::stage
