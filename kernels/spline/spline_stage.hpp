// SPLINE: the G-Interp spline predictor over a 1-3 axis chunk (stage type 13).
// Inputs: in (float32/float64 elements) and, with a fill input, fill (a
// FILLMASK stage's mask stream: fill elements are coded q = 0, spline.hpp).
// Outputs: codes0, codes1, codes2 (the codes by level group, code_bytes
// each), side (anchors, per-level flags and steps, outliers) and, with a
// fill input, fill again, unchanged (a buffer is consumed once: the mask
// goes on to its own coder, and the inverse hands it back).
// Config v1 (little-endian): u8 width | u8 code_bytes | u32 radius | f64 eb
// (the absolute bound enforced per element) | f64 alpha | f64 beta | u8
// tuning | u8 code form | u8 rank | rank x u64 dims, then u8 1 only with a
// fill input. Config v2 (Config::compact_config; its first byte 0x82, which
// no v1 config starts with: v1 starts with its width, 4 or 8): u8 0x82 | u8
// width | u8 code_bytes | u8 code form | u8 rank | rank x dims as unsigned
// LEB128 (canonical, at most 64 bits) | u8 flags (bit 0 coarse levels, bit
// 1 fill input, others 0) | f64 eb, no byte after (docs/FORMAT.md, stage
// type 13). The stage over spline.hpp; the decoder needs only width,
// code_bytes, the code form, dims and (v2) the coarse-levels flag: the side
// stream says the rest, so v2 leaves the encoder's radius, alpha, beta and
// tuning out (the bound stays for the filter's frame check), and a stage
// parsed from v2 can only decode (forward: UsageError).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spline/spline.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class SplineStage final : public Stage {
 public:
  SplineStage(const spline::Config& config, double enforced_bound, std::vector<size_t> dims, bool fill_input = false);
  // A stage that only decodes (parsed from a v2 config): forward refuses.
  static std::unique_ptr<SplineStage> decoder_only(const spline::CodeFormat& format, double enforced_bound,
                                                   std::vector<size_t> dims, bool fill_input);
  StageType type() const override { return StageType::Spline; }
  std::string name() const override { return "spline" + std::to_string(dims_.size()) + "d"; }
  std::vector<std::string> input_ports() const override {
    if (fill_input_) return {"in", "fill"};
    return {"in"};
  }
  std::vector<std::string> output_ports() const override {
    if (fill_input_) return {"codes0", "codes1", "codes2", "side", "fill"};
    return {"codes0", "codes1", "codes2", "side"};
  }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override;
  std::optional<size_t> inverse_first_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                           std::vector<Bytes>& rest, const StageContext& ctx) const override;

  const spline::Config& predictor_config() const { return config_; }
  double enforced_bound() const { return enforced_bound_; }
  const std::vector<size_t>& dims() const { return dims_; }
  spline::CodeFormat code_format() const { return spline::format_of(config_); }
  // False for a stage parsed from a v2 config (no bound, alpha, beta).
  bool can_encode() const { return !decoder_only_; }
  // UsageError unless can_encode() (forward, and the GPU's forward_device).
  void require_encoder() const;
  bool has_fill_input() const { return fill_input_; }
  // The fill mask's bytes for dims: one bit per element.
  size_t fill_mask_bytes() const;
  // The side stream's output port (after the code groups), then the fill
  // mask's (input and output), with a fill input.
  static constexpr size_t kSidePort = spline::kCodeGroups;
  static constexpr size_t kFillPort = kSidePort + 1;
  static constexpr size_t kFillInput = 1;

 private:
  uint64_t checked_streams(const std::vector<ByteSpan>& out, const StageContext& ctx,
                           ByteSpan (&codes)[spline::kCodeGroups]) const;

  spline::Config config_;
  double enforced_bound_;
  std::vector<size_t> dims_;
  bool fill_input_;
  bool decoder_only_ = false;
};

std::unique_ptr<Stage> make_spline(const spline::Config& config, double enforced_bound, std::vector<size_t> dims,
                                   bool fill_input = false);

}  // namespace fz::stage
