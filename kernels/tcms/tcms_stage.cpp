// TCMS, zigzag (docs/FORMAT.md, stage type 4): the stage adapter of
// tcms.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is tcms_stage_cuda.cpp.
#include "tcms/tcms_stage.hpp"

#include "tcms/tcms.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_tcms(unsigned width) {
  WordKernels kernels;
  kernels.encode = tcms::encode;
  kernels.decode = tcms::decode;
  return std::make_unique<WordStage>(StageType::Tcms, "tcms", width, kernels);
}

std::unique_ptr<Stage> parse_tcms(ByteSpan config) {
  return parse_single_byte_config(config, "tcms", make_tcms);
}

std::vector<StageSample> tcms_stage_samples() { return word_stage_samples("tcms", make_tcms); }

}  // namespace fz::stage
