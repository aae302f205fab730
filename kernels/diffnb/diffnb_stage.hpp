// DIFFNB, difference coding + negabinary: the engine stage over diffnb.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 5).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_diffnb(unsigned width);

}  // namespace fz::engine
