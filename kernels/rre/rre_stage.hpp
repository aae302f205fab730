// RRE, repeated word elimination: the stage over rre.hpp's kernels (a word stage,
// kernels/word_stage/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 3).
#pragma once

#include <memory>

#include "common/stage/stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_rre(unsigned width);

}  // namespace fz::stage
