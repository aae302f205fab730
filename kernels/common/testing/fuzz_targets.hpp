// Bodies of the libFuzzer targets shared by several stages. Header-only and
// free of gtest: the fuzz build compiles each *_fuzz.cpp against fz_kernels alone.
// Each returns the value LLVMFuzzerTestOneInput returns; a broken property traps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/executor.hpp"

namespace fz::testing {

using FuzzWidthTransformFn = void (*)(ByteSpan in, unsigned width, Bytes& out, const Executor& exec);
using FuzzWordEncodeFn = void (*)(ByteSpan in, unsigned word_size, Bytes& out, const Executor& exec);
using FuzzWordDecodeFn = void (*)(ByteSpan in, unsigned word_size, Bytes& out, size_t max_out,
                                  const Executor& exec);

// The first byte picks the width (1, 2, 4, 8, or 3 for an invalid one, which
// must be a UsageError); the rest is the stream.
inline unsigned fuzz_width(uint8_t selector) {
  static constexpr unsigned kWidths[] = {1, 2, 4, 8, 3};
  return kWidths[selector % 5];
}

// A width-based stage that is a bijection: decode of arbitrary bytes must not
// crash, and encode(decode(x)) == x and decode(encode(x)) == x.
inline int fuzz_width_transform(const uint8_t* data, size_t size, FuzzWidthTransformFn encode,
                                FuzzWidthTransformFn decode) {
  if (size == 0) return 0;
  const unsigned width = fuzz_width(data[0]);
  const ByteSpan stream(data + 1, size - 1);
  try {
    Bytes decoded, reencoded, encoded, redecoded;
    decode(stream, width, decoded, serial_executor());
    encode(decoded, width, reencoded, serial_executor());
    encode(stream, width, encoded, serial_executor());
    decode(encoded, width, redecoded, serial_executor());
    const Bytes original(stream.data, stream.data + stream.size);
    if (reencoded != original || redecoded != original) __builtin_trap();
  } catch (const FormatError&) {
  } catch (const UsageError&) {
  }
  return 0;
}

// A width-based stage that is its own inverse: apply of arbitrary bytes must
// not crash, and apply(apply(x)) == x.
inline int fuzz_self_inverse_width_transform(const uint8_t* data, size_t size, FuzzWidthTransformFn apply) {
  if (size == 0) return 0;
  const unsigned width = fuzz_width(data[0]);
  const ByteSpan stream(data + 1, size - 1);
  try {
    Bytes once, twice;
    apply(stream, width, once, serial_executor());
    apply(once, width, twice, serial_executor());
    if (twice != Bytes(stream.data, stream.data + stream.size)) __builtin_trap();
  } catch (const FormatError&) {
  } catch (const UsageError&) {
  }
  return 0;
}

// A word coder whose stream starts with the 64-bit decoded length (rze, rre).
// The first byte picks the word size (1, 2, 4, 8); the rest is decoded as a
// hostile stream (only FormatError may come out, nothing may be read or
// written out of bounds, an accepted stream decodes to its stored length)
// and, separately, round-tripped as plain data.
inline int fuzz_word_coder(const uint8_t* data, size_t size, FuzzWordEncodeFn encode, FuzzWordDecodeFn decode) {
  constexpr size_t kMaxOut = size_t{1} << 20;  // keeps hostile lengths from eating memory
  if (size == 0) return 0;
  static constexpr unsigned kWordSizes[] = {1, 2, 4, 8};
  const unsigned word_size = kWordSizes[data[0] % 4];
  const ByteSpan rest(data + 1, size - 1);

  Bytes decoded;
  try {
    decode(rest, word_size, decoded, kMaxOut, serial_executor());
    if (decoded.size() != load_le<uint64_t>(rest.data)) __builtin_trap();
  } catch (const FormatError&) {
  }

  Bytes coded;
  Bytes round_trip;
  encode(rest, word_size, coded, serial_executor());
  decode(coded, word_size, round_trip, rest.size, serial_executor());
  if (round_trip.size() != rest.size || (rest.size != 0 && std::memcmp(round_trip.data(), rest.data, rest.size) != 0)) {
    __builtin_trap();
  }
  return 0;
}

}  // namespace fz::testing
