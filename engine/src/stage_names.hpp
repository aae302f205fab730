// The stage contract (kernels/common/stage/) as the engine uses it: the engine
// composes stages into pipelines and runs them, so it names Stage,
// StageContext, StageType, DeviceBuffer ... without the fz::stage:: prefix.
// Engine sources include this instead of the contract header itself.
#pragma once

#include "common/stage/stage.hpp"

namespace fz::engine {
using namespace fz::stage;
}  // namespace fz::engine
