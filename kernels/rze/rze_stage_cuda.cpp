// RZE's GPU part (engine/src/stage_device.hpp), compiled only in CUDA builds.
#include "elimination_stage_device.hpp"

namespace fz::engine {

const StageDevice& rze_stage_device() {
  static const WordStageDevice part(elimination_device::forward<elimination::Rule::kNonZero>,
                                    elimination_device::inverse<elimination::Rule::kNonZero>, false,
                                    /*takes_device_sizes=*/true);
  return part;
}

}  // namespace fz::engine
