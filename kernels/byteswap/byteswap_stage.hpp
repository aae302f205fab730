// BSWAP, byte reversal: the stage over byteswap.hpp's kernels (a word stage,
// kernels/word_stage/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 7).
#pragma once

#include <memory>

#include "common/stage/stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_byteswap(unsigned width);

}  // namespace fz::stage
