// BYTET: byte transposition by element size. Config: u32 element size (LE)
// (docs/FORMAT.md, stage type 8). The stage over bytetranspose.hpp;
// its GPU part is bytetranspose_stage_cuda.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/stage/stage.hpp"

namespace fz::stage {

class ByteTransposeStage final : public Stage {
 public:
  // Throws UsageError unless 1 <= element_size <= 2^24.
  explicit ByteTransposeStage(uint32_t element_size);
  StageType type() const override { return StageType::ByteTranspose; }
  std::string name() const override { return "bytetranspose" + std::to_string(size_); }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  uint32_t element_size() const { return size_; }

 private:
  uint32_t size_;
};

std::unique_ptr<Stage> make_bytetranspose(uint32_t element_size);

}  // namespace fz::stage
