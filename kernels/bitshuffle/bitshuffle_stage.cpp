// BIT, bit-shuffle (docs/FORMAT.md, stage type 1): the stage adapter of
// bitshuffle.hpp's kernels, a word stage (kernels/word_stage/word_stage.hpp). Its GPU part
// is bitshuffle_stage_cuda.cpp.
#include "bitshuffle/bitshuffle_stage.hpp"

#include "bitshuffle/bitshuffle.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_bitshuffle(unsigned width) {
  WordKernels kernels;
  kernels.encode = bitshuffle::encode;
  kernels.decode = bitshuffle::decode;
  kernels.block_encoder = bitshuffle::block_encoder;
  kernels.block_decoder = bitshuffle::block_decoder;
  return std::make_unique<WordStage>(StageType::BitShuffle, "bitshuffle", width, kernels);
}

std::unique_ptr<Stage> parse_bitshuffle(ByteSpan config) {
  return parse_single_byte_config(config, "bitshuffle", make_bitshuffle);
}

std::vector<StageSample> bitshuffle_stage_samples() { return word_stage_samples("bitshuffle", make_bitshuffle); }

}  // namespace fz::stage
