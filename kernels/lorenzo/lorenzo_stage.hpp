// LORENZO: dual-quantization Lorenzo predictor over a 1-3 axis chunk.
// Inputs: in (float32/float64 elements). Outputs: codes (u16 per element), outliers.
// Config (little-endian): u8 width | u32 radius | f64 working bound eb | f64 the
// absolute bound enforced | u8 has_fill | u64 fill bits | u8 rank | rank x u64 dims
// (docs/FORMAT.md, stage type 10). The stage over lorenzo.hpp; its GPU
// part is lorenzo_stage_cuda.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorenzo/lorenzo.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class LorenzoStage final : public Stage {
 public:
  // dims: the predictor shape (1 to 3 axes); enforced_bound: the absolute bound checked per element.
  LorenzoStage(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims);
  StageType type() const override { return StageType::Lorenzo; }
  std::string name() const override { return "lorenzo" + std::to_string(dims_.size()) + "d"; }
  std::vector<std::string> output_ports() const override { return {"codes", "outliers"}; }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override;

  const lorenzo::Config& predictor_config() const { return config_; }
  double enforced_bound() const { return enforced_bound_; }
  const std::vector<size_t>& dims() const { return dims_; }
  // The inverse's checks before anything is allocated, on the CPU and the
  // GPU alike: the element count (returned) overflows nothing, its chunk is
  // within max_stream_bytes, and the codes hold one u16 per element
  // (FormatError otherwise).
  uint64_t checked_elements(size_t codes_bytes, size_t max_stream_bytes) const;

 private:
  lorenzo::Config config_;
  double enforced_bound_;
  std::vector<size_t> dims_;
};

std::unique_ptr<Stage> make_lorenzo(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims);

}  // namespace fz::stage
