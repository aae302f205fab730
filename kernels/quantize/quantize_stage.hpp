// QUANTIZE: direct error-bounded quantizer (ABS / NOA / REL), float32 and float64.
// Inputs: in. Outputs: codes (one element-wide word each), outliers, params.
// Config (little-endian): u8 width | u8 mode | f64 user bound | u8 has_fill | u64 fill bits
// (docs/FORMAT.md, stage type 9). The decoder needs only the params stream;
// the config records the request. The stage over quantize.hpp; its GPU
// part is quantize_stage_cuda.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quantize/quantize.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class QuantizeStage final : public Stage {
 public:
  explicit QuantizeStage(const quantize::Config& config) : config_(config) {}
  StageType type() const override { return StageType::Quantize; }
  std::string name() const override { return "quantize"; }
  std::vector<std::string> output_ports() const override { return {"codes", "outliers", "params"}; }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  std::unique_ptr<ForwardSource> forward_source(const std::vector<ByteSpan>& in,
                                                const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  std::unique_ptr<BlockSink> inverse_sink(const std::vector<ByteSpan>& out, size_t port, size_t port_bytes,
                                          const StageContext& ctx) const override;
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override;
  const quantize::Config& quantizer_config() const { return config_; }

 private:
  quantize::Config config_;
};

std::unique_ptr<Stage> make_quantize(const quantize::Config& config);

}  // namespace fz::stage
