// RRE's GPU part (engine/src/stage_device.hpp), compiled only in CUDA builds.
#include "elimination_stage_device.hpp"

namespace fz::engine {

const StageDevice& rre_stage_device() {
  static const WordStageDevice part(elimination_device::forward<elimination::Rule::kChanged>,
                                    elimination_device::inverse<elimination::Rule::kChanged>, false,
                                    /*takes_device_sizes=*/true);
  return part;
}

}  // namespace fz::engine
