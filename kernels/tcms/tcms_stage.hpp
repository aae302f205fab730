// TCMS, zigzag: the engine stage over tcms.hpp's kernels (a word stage,
// engine/src/word_stage.hpp). Config: u8 width (docs/FORMAT.md, stage type 4).
#pragma once

#include <memory>

#include "stage.hpp"

namespace fz::engine {

std::unique_ptr<Stage> make_tcms(unsigned width);

}  // namespace fz::engine
