// RZE, repeated zero elimination: the engine stage over rze.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 2).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_rze(unsigned width);

}  // namespace fz::engine
