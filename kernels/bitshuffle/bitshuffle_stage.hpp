// BIT, bit-shuffle: the engine stage over bitshuffle.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 1).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_bitshuffle(unsigned width);

}  // namespace fz::engine
