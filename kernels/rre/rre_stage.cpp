// RRE, repeated word elimination (docs/FORMAT.md, stage type 3): the stage adapter of
// rre.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is rre_stage_cuda.cpp.
#include "rre/rre_stage.hpp"

#include "rre/rre.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_rre(unsigned width) {
  WordKernels kernels;
  kernels.encode = rre::encode;
  kernels.decode_bounded = rre::decode;
  kernels.stream = elimination::Rule::kChanged;
  return std::make_unique<WordStage>(StageType::Rre, "rre", width, kernels);
}

std::unique_ptr<Stage> parse_rre(ByteSpan config) {
  return parse_single_byte_config(config, "rre", make_rre);
}

std::vector<StageSample> rre_stage_samples() { return word_stage_samples("rre", make_rre); }

}  // namespace fz::stage
