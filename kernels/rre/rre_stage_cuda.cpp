// RRE's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include "word_stage/elimination_stage_device.hpp"

namespace fz::stage {

const StageDevice& rre_stage_device() {
  static const WordStageDevice part(elimination_device::forward<elimination::Rule::kChanged>,
                                    elimination_device::inverse<elimination::Rule::kChanged>, false,
                                    /*takes_device_sizes=*/true);
  return part;
}

}  // namespace fz::stage
