// The block grid shared by the lossless stages: streams are cut into blocks of
// kBlockBytes so that every block is coded independently (threads on the CPU,
// thread blocks on the GPU) and a later RZE/RRE sub-chunk holds exactly one
// block of the stage before it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz {

constexpr size_t kBlockBytes = 16384;

inline size_t block_count(size_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes; }

inline size_t block_length(size_t bytes, size_t block) {
  const size_t begin = block * kBlockBytes;
  const size_t rest = bytes - begin;
  return rest < kBlockBytes ? rest : kBlockBytes;
}

// Codes one block of `length` bytes from `in` to `out` (same length).
using BlockCoder = void (*)(const uint8_t* in, size_t length, uint8_t* out);

// Runs a length-preserving block coder over every block of `in`, in parallel;
// the output has the input's length and each block lands where it came from.
// `dst` holds in.size bytes and does not overlap `in`.
inline void run_blocks_into(ByteSpan in, uint8_t* dst, const Executor& exec, BlockCoder coder) {
  if (in.size == 0) return;
  exec.parallel_for(block_count(in.size), [&](size_t block) {
    const size_t begin = block * kBlockBytes;
    coder(in.data + begin, block_length(in.size, block), dst + begin);
  });
}

inline void run_blocks(ByteSpan in, Bytes& out, const Executor& exec, BlockCoder coder) {
  out.resize(in.size);
  run_blocks_into(in, out.data(), exec, coder);
}

}  // namespace fz
