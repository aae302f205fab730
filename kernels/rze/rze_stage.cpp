// RZE, repeated zero elimination (docs/FORMAT.md, stage type 2): the stage adapter of
// rze.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is rze_stage_cuda.cpp.
#include "rze/rze_stage.hpp"

#include "rze/rze.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_rze(unsigned width) {
  WordKernels kernels;
  kernels.encode = rze::encode;
  kernels.decode_bounded = rze::decode;
  kernels.stream = elimination::Rule::kNonZero;
  return std::make_unique<WordStage>(StageType::Rze, "rze", width, kernels);
}

std::unique_ptr<Stage> parse_rze(ByteSpan config) {
  return parse_single_byte_config(config, "rze", make_rze);
}

std::vector<StageSample> rze_stage_samples() { return word_stage_samples("rze", make_rze); }

}  // namespace fz::stage
