// FILLMASK: takes the fill value's elements out before lossy stages and puts
// them back exactly after. Inputs: in. Outputs: values (fill elements replaced
// by their nearest preceding data value), mask (one bit per element).
// Config (little-endian): u8 width | u64 fill bits (docs/FORMAT.md, stage
// type 12). The stage over fillmask.hpp; its GPU part is
// fillmask_stage_cuda.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/stage/stage.hpp"

namespace fz::stage {

class FillMaskStage final : public Stage {
 public:
  // Throws UsageError unless width is 1, 2, 4 or 8 and fill fits in it.
  FillMaskStage(unsigned width, uint64_t fill);
  StageType type() const override { return StageType::FillMask; }
  std::string name() const override { return "fillmask"; }
  std::vector<std::string> output_ports() const override { return {"values", "mask"}; }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  std::optional<size_t> inverse_in_place_port() const override { return 0; }  // the values become the chunk
  void inverse_in_place(const std::vector<ByteSpan>& out, uint8_t* data, size_t size,
                        const StageContext& ctx) const override;
  unsigned width() const { return width_; }
  uint64_t fill() const { return fill_; }

 private:
  unsigned width_;
  uint64_t fill_;
};

std::unique_ptr<Stage> make_fillmask(unsigned width, uint64_t fill);

}  // namespace fz::stage
