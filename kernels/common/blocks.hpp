// The block grid shared by the lossless stages: streams are cut into blocks of
// kBlockBytes so that every block is coded independently (threads on the CPU,
// thread blocks on the GPU) and a later RZE/RRE sub-chunk holds exactly one
// block of the stage before it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fz {

constexpr size_t kBlockBytes = 16384;

inline size_t block_count(size_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes; }

inline size_t block_length(size_t bytes, size_t block) {
  const size_t begin = block * kBlockBytes;
  const size_t rest = bytes - begin;
  return rest < kBlockBytes ? rest : kBlockBytes;
}

}  // namespace fz
