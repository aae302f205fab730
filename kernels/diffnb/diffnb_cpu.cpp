// CPU difference + negabinary coding (stream format: diffnb.hpp). Blocks are
// independent (the predecessor restarts at 0), so they run on the executor;
// decoding is a running sum and therefore sequential within a block.
#include "diffnb/diffnb.hpp"

#include <cstring>
#include <string>

#include "common/blocks.hpp"
#include "common/error.hpp"

namespace fz::diffnb {
namespace {

void check_width(unsigned width) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw UsageError("diffnb: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
}

// Negabinary mask 0xAA..A: adding it and XOR-ing it out maps two's complement to
// base -2, where small magnitudes of either sign have only low bits set.
template <typename T>
constexpr T kNegabinaryMask = static_cast<T>(0xAAAAAAAAAAAAAAAAull);

template <typename T>
void encode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  T previous = 0;
  for (size_t i = 0; i < n; ++i) {
    const T word = load_le<T>(in + i * sizeof(T));
    const T delta = static_cast<T>(word - previous);
    store_le<T>(out + i * sizeof(T), static_cast<T>(static_cast<T>(delta + kNegabinaryMask<T>) ^ kNegabinaryMask<T>));
    previous = word;
  }
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

template <typename T>
void decode_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  T word = 0;
  for (size_t i = 0; i < n; ++i) {
    const T coded = load_le<T>(in + i * sizeof(T));
    word = static_cast<T>(word + static_cast<T>((coded ^ kNegabinaryMask<T>) - kNegabinaryMask<T>));
    store_le<T>(out + i * sizeof(T), word);
  }
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

}  // namespace

void encode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  check_width(width);
  static constexpr BlockCoder coders[] = {encode_block<uint8_t>, encode_block<uint16_t>, nullptr,
                                          encode_block<uint32_t>, nullptr, nullptr, nullptr,
                                          encode_block<uint64_t>};
  run_blocks(in, out, exec, coders[width - 1]);
}

void decode_into(ByteSpan in, unsigned width, uint8_t* out, const Executor& exec) {
  check_width(width);
  static constexpr BlockCoder coders[] = {decode_block<uint8_t>, decode_block<uint16_t>, nullptr,
                                          decode_block<uint32_t>, nullptr, nullptr, nullptr,
                                          decode_block<uint64_t>};
  run_blocks_into(in, out, exec, coders[width - 1]);
}

void decode(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  check_width(width);
  out.resize(in.size);
  decode_into(in, width, out.data(), exec);
}

}  // namespace fz::diffnb
