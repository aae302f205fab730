// BSWAP, byte reversal (docs/FORMAT.md, stage type 7): the stage adapter of
// byteswap.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is byteswap_stage_cuda.cpp.
#include "byteswap/byteswap_stage.hpp"

#include "byteswap/byteswap.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {
namespace {

void apply(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) { byteswap::apply(in, width, out, exec); }

}  // namespace

std::unique_ptr<Stage> make_byteswap(unsigned width) {
  WordKernels kernels;
  kernels.encode = apply;
  kernels.decode = apply;  // its own inverse
  return std::make_unique<WordStage>(StageType::ByteSwap, "byteswap", width, kernels);
}

std::unique_ptr<Stage> parse_byteswap(ByteSpan config) {
  return parse_single_byte_config(config, "byteswap", make_byteswap);
}

std::vector<StageSample> byteswap_stage_samples() { return word_stage_samples("byteswap", make_byteswap); }

}  // namespace fz::stage
