// Stages that transform one stream of fixed-width words into one stream, with
// a one-byte config holding the width (bit-shuffle, zigzag, difference/
// negabinary, byte swap, and the two elimination coders): one class, each
// stage described by its kernels (kernels/<stage>/<stage>_stage.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elimination/elimination.hpp"
#include "common/stage/stage.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

// A word stage's kernels. Length-preserving kernels take no output bound
// (`decode`); the elimination decoders do (`decode_bounded`).
struct WordKernels {
  using Transform = void (*)(ByteSpan, unsigned, Bytes&, const Executor&);
  using Decoder = void (*)(ByteSpan, unsigned, Bytes&, size_t, const Executor&);
  using DecoderInto = void (*)(ByteSpan, unsigned, uint8_t*, const Executor&);
  using BlockCoderFor = BlockCoder (*)(unsigned);

  Transform encode = nullptr;
  Transform decode = nullptr;
  Decoder decode_bounded = nullptr;
  DecoderInto decode_into = nullptr;  // decode() into the caller's memory, or none
  // How the stage takes part in fused chains (Pipeline::forward, run_inverse):
  BlockCoderFor block_encoder = nullptr;         // block-local forward and
  BlockCoderFor block_decoder = nullptr;         // inverse, or
  std::optional<elimination::Rule> stream;  // an elimination stream (ends a forward chain, starts an inverse one)
  // The widths the kernels take, as word_widths() makes them: all four unless
  // the stage says fewer (a stage over float32 words only: word_widths({4})).
  uint8_t widths = kAllWordWidths;

  static constexpr uint8_t kAllWordWidths = 0x0F;  // 1, 2, 4 and 8 bytes
};

// A set of word widths, each 1, 2, 4 or 8 (bit k: width 2^k), for
// WordKernels::widths and word_stage_samples.
constexpr uint8_t word_widths(std::initializer_list<unsigned> widths) {
  uint8_t set = 0;
  for (unsigned w : widths) set |= w == 1 ? 1 : w == 2 ? 2 : w == 4 ? 4 : w == 8 ? 8 : 0;
  return set;
}

class WordStage final : public Stage {
 public:
  // Throws UsageError unless width is one of kernels.widths (by default 1,
  // 2, 4 or 8); parse_single_byte_config makes that a FormatError.
  WordStage(StageType type, const char* name, unsigned width, const WordKernels& kernels);
  StageType type() const override { return type_; }
  std::string name() const override { return name_ + std::to_string(width_); }
  Bytes config() const override { return Bytes{static_cast<uint8_t>(width_)}; }
  unsigned width() const { return width_; }
  // Whether the inverse bounds the length it decodes to itself (elimination).
  bool bounded_decoder() const { return kernels_.decode_bounded != nullptr; }

  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override;
  BlockCoder forward_block_coder() const override;
  bool forward_from_blocks(size_t n, const std::function<const uint8_t*(size_t, uint8_t*)>& produce,
                           std::vector<Bytes>& out, const StageContext& ctx) const override;
  BlockCoder inverse_block_coder() const override;
  std::unique_ptr<BlockSource> inverse_source(ByteSpan output, const StageContext& ctx) const override;

 private:
  StageType type_;
  std::string name_;
  unsigned width_;
  WordKernels kernels_;
};

// The contract test's samples for a word stage: each of `widths` (the same
// set as its kernels' WordKernels::widths), over the raw bytes.
std::vector<StageSample> word_stage_samples(const char* name, std::unique_ptr<Stage> (*make)(unsigned),
                                            uint8_t widths = WordKernels::kAllWordWidths);

}  // namespace fz::stage
