// BIT, bit-shuffle: the stage over bitshuffle.hpp's kernels (a word stage,
// kernels/word_stage/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 1).
#pragma once

#include <memory>

#include "common/stage/stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_bitshuffle(unsigned width);

}  // namespace fz::stage
