// CPU zigzag (two's complement to magnitude-sign) coding (stream format: tcms.hpp).
// Word-local, so any split works; 16 KiB blocks keep it on the executor like the
// other stages (a block boundary never cuts a word: kBlockBytes is a multiple of 8).
#include "tcms/tcms.hpp"

#include <cstring>
#include <string>

#include "common/blocks.hpp"
#include "common/error.hpp"

namespace fz::tcms {
namespace {

void check_width(unsigned width) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw UsageError("tcms: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
}

template <typename T>  // T unsigned: the arithmetic shift is written as 0 - sign bit
T zigzag(T x) {
  const T sign = static_cast<T>(x >> (8 * sizeof(T) - 1));
  return static_cast<T>(static_cast<T>(x << 1) ^ static_cast<T>(T{0} - sign));
}

template <typename T>
T unzigzag(T y) {
  return static_cast<T>(static_cast<T>(y >> 1) ^ static_cast<T>(T{0} - static_cast<T>(y & 1)));
}

template <typename T, T (*Map)(T)>
void map_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  for (size_t i = 0; i < n; ++i) store_le<T>(out + i * sizeof(T), Map(load_le<T>(in + i * sizeof(T))));
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

}  // namespace

void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  check_width(width);
  static constexpr BlockCoder coders[] = {
      map_block<uint8_t, zigzag<uint8_t>>, map_block<uint16_t, zigzag<uint16_t>>, nullptr,
      map_block<uint32_t, zigzag<uint32_t>>, nullptr, nullptr, nullptr, map_block<uint64_t, zigzag<uint64_t>>};
  run_blocks(in, out, exec, coders[width - 1]);
}

void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  check_width(width);
  static constexpr BlockCoder coders[] = {
      map_block<uint8_t, unzigzag<uint8_t>>, map_block<uint16_t, unzigzag<uint16_t>>, nullptr,
      map_block<uint32_t, unzigzag<uint32_t>>, nullptr, nullptr, nullptr,
      map_block<uint64_t, unzigzag<uint64_t>>};
  run_blocks(in, out, exec, coders[width - 1]);
}

}  // namespace fz::tcms
