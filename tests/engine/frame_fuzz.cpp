// libFuzzer target for the frame parser and every stage decoder behind it. The
// fuzz build compiles the engine with FZ_FUZZ_SKIP_CRC so that mutated frames
// reach the parsers instead of stopping at the checksum.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fz/fz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<uint8_t> out(1 << 20);
  try {
    const size_t n = fz::decompress_into(data, size, out.data(), out.size());
    const fz::FrameInfo info = fz::inspect(data, size);
    if (n != info.original_bytes) __builtin_trap();
  } catch (const fz::Error&) {
  }
  return 0;
}
