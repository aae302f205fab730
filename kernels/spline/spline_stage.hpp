// SPLINE: the G-Interp spline predictor over a 1-3 axis chunk (stage type 13).
// Inputs: in (float32/float64 elements). Outputs: codes0, codes1, codes2
// (the codes by level group, code_bytes each), side (anchors, per-level
// flags and steps, outliers).
// Config (little-endian): u8 width | u8 code_bytes | u32 radius | f64 eb (the
// absolute bound enforced per element) | f64 alpha | f64 beta | u8 tuning |
// u8 code form | u8 rank | rank x u64 dims (docs/FORMAT.md, stage type 13).
// The engine stage over spline.hpp; the decoder needs only width,
// code_bytes, the code form and dims (the side stream says the rest).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spline/spline.hpp"
#include "stage.hpp"

namespace fz::engine {

class SplineStage final : public Stage {
 public:
  SplineStage(const spline::Config& config, double enforced_bound, std::vector<size_t> dims);
  StageType type() const override { return StageType::Spline; }
  std::string name() const override { return "spline" + std::to_string(dims_.size()) + "d"; }
  std::vector<std::string> output_ports() const override { return {"codes0", "codes1", "codes2", "side"}; }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;

  const spline::Config& predictor_config() const { return config_; }
  double enforced_bound() const { return enforced_bound_; }
  const std::vector<size_t>& dims() const { return dims_; }
  spline::CodeFormat code_format() const { return {config_.width, config_.code_bytes, config_.code_form}; }
  // The side stream's output port (after the code groups).
  static constexpr size_t kSidePort = spline::kCodeGroups;

 private:
  spline::Config config_;
  double enforced_bound_;
  std::vector<size_t> dims_;
};

std::unique_ptr<Stage> make_spline(const spline::Config& config, double enforced_bound, std::vector<size_t> dims);

}  // namespace fz::engine
