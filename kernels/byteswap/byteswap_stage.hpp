// BSWAP, byte reversal: the engine stage over byteswap.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 7).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_byteswap(unsigned width);

}  // namespace fz::engine
