// The GPU parts of the listed stages (stage_list.inc), for CUDA builds:
// kernels/CMakeLists.txt compiles this file or stage_device_registry_none.cpp, never both.
#include "common/stage/stage_device.hpp"

namespace fz::stage {

// A stage marked CUDA defines its part in kernels/<name>/<name>_stage_cuda.cpp.
#define FZ_STAGE_DEVICE_CUDA(name) const StageDevice& name##_stage_device();
#define FZ_STAGE_DEVICE_CPU_ONLY(name)
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) FZ_STAGE_DEVICE_##gpu(name)
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
#undef FZ_STAGE_DEVICE_CUDA
#undef FZ_STAGE_DEVICE_CPU_ONLY

const StageDevice* find_stage_device(uint16_t type_id) {
#define FZ_STAGE_DEVICE_CUDA(name) return &name##_stage_device();
#define FZ_STAGE_DEVICE_CPU_ONLY(name) return nullptr;
  switch (type_id) {
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) \
  case id: FZ_STAGE_DEVICE_##gpu(name)
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
  }
#undef FZ_STAGE_DEVICE_CUDA
#undef FZ_STAGE_DEVICE_CPU_ONLY
  return nullptr;
}

// The fused pairs, each in kernels/<first>_<second>/<first>_<second>_stage_cuda.cpp.
const FusedDevicePair& bitshuffle_rze_pair();

const FusedDevicePair* find_fused_device_pair(const Stage& first, const Stage& second) {
  const FusedDevicePair* const pairs[] = {&bitshuffle_rze_pair()};
  for (const FusedDevicePair* pair : pairs)
    if (pair->accepts(first, second)) return pair;
  return nullptr;
}

// The fused triples, in the folder of the pair they extend.
const FusedDeviceTriple& diffnb_bitshuffle_rze_triple();

const FusedDeviceTriple* find_fused_device_triple(const Stage& first, const Stage& second, const Stage& third) {
  const FusedDeviceTriple* const triples[] = {&diffnb_bitshuffle_rze_triple()};
  for (const FusedDeviceTriple* triple : triples)
    if (triple->accepts(first, second, third)) return triple;
  return nullptr;
}

}  // namespace fz::stage
