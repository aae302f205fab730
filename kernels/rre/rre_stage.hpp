// RRE, repeated word elimination: the engine stage over rre.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 3).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_rre(unsigned width);

}  // namespace fz::engine
