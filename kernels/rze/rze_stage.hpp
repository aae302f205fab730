// RZE, repeated zero elimination: the stage over rze.hpp's kernels (a word stage,
// kernels/word_stage/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 2).
#pragma once

#include <memory>

#include "common/stage/stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_rze(unsigned width);

}  // namespace fz::stage
