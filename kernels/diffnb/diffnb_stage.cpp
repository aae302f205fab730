// DIFFNB, difference coding + negabinary (docs/FORMAT.md, stage type 5): the stage adapter of
// diffnb.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is diffnb_stage_cuda.cpp.
#include "diffnb/diffnb_stage.hpp"

#include "diffnb/diffnb.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_diffnb(unsigned width) {
  WordKernels kernels;
  kernels.encode = diffnb::encode;
  kernels.decode = diffnb::decode;
  kernels.decode_into = diffnb::decode_into;
  kernels.block_encoder = diffnb::block_encoder;
  kernels.block_decoder = diffnb::block_decoder;
  return std::make_unique<WordStage>(StageType::DiffNb, "diffnb", width, kernels);
}

std::unique_ptr<Stage> parse_diffnb(ByteSpan config) {
  return parse_single_byte_config(config, "diffnb", make_diffnb);
}

std::vector<StageSample> diffnb_stage_samples() { return word_stage_samples("diffnb", make_diffnb); }

}  // namespace fz::stage
