// TCMS, zigzag: the stage over tcms.hpp's kernels (a word stage,
// kernels/word_stage/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 4).
#pragma once

#include <memory>

#include "common/stage/stage.hpp"

namespace fz::stage {

std::unique_ptr<Stage> make_tcms(unsigned width);

}  // namespace fz::stage
