// CPU builds: no stage has a GPU part (kernels/CMakeLists.txt compiles this
// file instead of stage_device_registry_cuda.cpp), so every pipeline runs on the CPU.
#include "common/stage/stage_device.hpp"

namespace fz::stage {

const StageDevice* find_stage_device(uint16_t) { return nullptr; }

const FusedDevicePair* find_fused_device_pair(const Stage&, const Stage&) { return nullptr; }
const FusedDeviceTriple* find_fused_device_triple(const Stage&, const Stage&, const Stage&) { return nullptr; }

}  // namespace fz::stage
