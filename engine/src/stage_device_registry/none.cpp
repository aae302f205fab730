// CPU builds: no stage has a GPU part (engine/CMakeLists.txt compiles this
// file instead of cuda.cpp), so every pipeline runs on the CPU.
#include "stage_device.hpp"

namespace fz::engine {

const StageDevice* find_stage_device(uint16_t) { return nullptr; }

}  // namespace fz::engine
