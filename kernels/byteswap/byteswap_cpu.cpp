// CPU byte reversal of fixed-width words (stream format: byteswap.hpp).
#include "byteswap/byteswap.hpp"

#include <cstring>
#include <string>

#include "common/blocks.hpp"
#include "common/error.hpp"

namespace fz::byteswap {
namespace {

inline uint8_t reverse(uint8_t x) { return x; }
inline uint16_t reverse(uint16_t x) { return __builtin_bswap16(x); }
inline uint32_t reverse(uint32_t x) { return __builtin_bswap32(x); }
inline uint64_t reverse(uint64_t x) { return __builtin_bswap64(x); }

template <typename T>
void swap_block(const uint8_t* in, size_t length, uint8_t* out) {
  const size_t n = length / sizeof(T);
  for (size_t i = 0; i < n; ++i) store_le<T>(out + i * sizeof(T), reverse(load_le<T>(in + i * sizeof(T))));
  std::memcpy(out + n * sizeof(T), in + n * sizeof(T), length - n * sizeof(T));
}

using BlockCoder = void (*)(const uint8_t*, size_t, uint8_t*);

}  // namespace

void apply(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  static constexpr BlockCoder coders[] = {swap_block<uint8_t>, swap_block<uint16_t>, nullptr,
                                          swap_block<uint32_t>, nullptr, nullptr, nullptr,
                                          swap_block<uint64_t>};
  if (width == 0 || width > 8 || coders[width - 1] == nullptr)
    throw UsageError("byteswap: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
  out.resize(in.size);
  if (in.size == 0) return;
  uint8_t* dst = out.data();
  const BlockCoder coder = coders[width - 1];
  exec.parallel_for(block_count(in.size), [&](size_t block) {
    const size_t begin = block * kBlockBytes;
    coder(in.data + begin, block_length(in.size, block), dst + begin);
  });
}

}  // namespace fz::byteswap
