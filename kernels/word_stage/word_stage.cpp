// The word stages' shared class (word_stage.hpp).
#include "word_stage/word_stage.hpp"

#include <string>
#include <vector>

#include "common/error.hpp"

namespace fz::stage {
namespace {

// word_widths gives no bit for a width other than 1, 2, 4 or 8.
bool in_set(unsigned width, uint8_t widths) { return (word_widths({width}) & widths) != 0; }

// "1, 2, 4 or 8", "4", "4 or 8": the widths of a set, for messages.
std::string widths_text(uint8_t widths) {
  std::vector<std::string> names;
  for (unsigned w : {1u, 2u, 4u, 8u})
    if (in_set(w, widths)) names.push_back(std::to_string(w));
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

// The elimination coders' output, decoded one sub-chunk at a time.
class EliminationSource final : public BlockSource {
 public:
  EliminationSource(ByteSpan stream, unsigned width, elimination::Rule rule, size_t max_out)
      : blocks_(stream, width, rule, max_out) {}
  size_t size() const override { return blocks_.size(); }
  void decode_block(size_t block, uint8_t* dst) const override { blocks_.decode_block(block, dst); }

 private:
  elimination::StreamBlocks blocks_;
};

}  // namespace

WordStage::WordStage(StageType type, const char* name, unsigned width, const WordKernels& kernels)
    : type_(type), name_(name), width_(width), kernels_(kernels) {
  if (!in_set(width, kernels.widths))
    throw UsageError(std::string(name) + ": width must be " + widths_text(kernels.widths));
}

void WordStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(1);
  kernels_.encode(in.at(0), width_, out[0], ctx.exec);
}

void WordStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  in.resize(1);
  if (kernels_.decode_bounded) {
    kernels_.decode_bounded(out.at(0), width_, in[0], ctx.max_stream_bytes, ctx.exec);
  } else {
    require_format(out.at(0).size <= ctx.max_stream_bytes, "stream larger than the frame allows");
    kernels_.decode(out.at(0), width_, in[0], ctx.exec);
  }
}

std::optional<size_t> WordStage::inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                              const StageContext& ctx) const {
  if (!kernels_.decode_into || out.at(0).size > capacity) return std::nullopt;  // same length as its input
  kernels_.decode_into(out.at(0), width_, dst, ctx.exec);
  return out.at(0).size;
}

BlockCoder WordStage::forward_block_coder() const {
  return kernels_.block_encoder ? kernels_.block_encoder(width_) : nullptr;
}

bool WordStage::forward_from_blocks(size_t n, const std::function<const uint8_t*(size_t, uint8_t*)>& produce,
                                    std::vector<Bytes>& out, const StageContext& ctx) const {
  if (!kernels_.stream) return false;
  out.resize(1);
  elimination::encode_stream_blocks(n, width_, *kernels_.stream, out[0], ctx.exec, produce);
  return true;
}

BlockCoder WordStage::inverse_block_coder() const {
  return kernels_.block_decoder ? kernels_.block_decoder(width_) : nullptr;
}

std::unique_ptr<BlockSource> WordStage::inverse_source(ByteSpan output, const StageContext& ctx) const {
  if (!kernels_.stream) return nullptr;
  return std::make_unique<EliminationSource>(output, width_, *kernels_.stream, ctx.max_stream_bytes);
}

std::vector<StageSample> word_stage_samples(const char* name, std::unique_ptr<Stage> (*make)(unsigned),
                                            uint8_t widths) {
  std::vector<StageSample> samples;
  for (unsigned width : {1u, 2u, 4u, 8u}) {
    if (!in_set(width, widths)) continue;
    samples.push_back({name + std::to_string(width), [make, width](ByteSpan raw) {
                         StageCase c{make(width), {}};
                         c.inputs.emplace_back(raw.data, raw.data + raw.size);
                         return c;
                       }});
  }
  return samples;
}

}  // namespace fz::stage
