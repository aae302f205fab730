// Checks shared by the stages that transform words of 1, 2, 4 or 8 bytes in
// place (bitshuffle, byteswap, diffnb, tcms): round trips over every standard
// input at every width, bad widths refused, threads giving the serial bytes.
// Stage-specific checks (pinned bytes, formulas) stay in each stage's test.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/executor.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz::testing {

// encode, decode or apply of a width-based stage.
using WidthTransformFn = void (*)(ByteSpan in, unsigned width, Bytes& out, const Executor& exec);

// The valid widths of every width-based stage.
inline constexpr unsigned kWidths[] = {1, 2, 4, 8};

// standard_inputs(), built once per test executable.
inline const std::vector<NamedInput>& cached_standard_inputs() {
  static const std::vector<NamedInput> all = standard_inputs();
  return all;
}

// Runs `transform` into an output that holds stale bytes, which must not survive.
inline Bytes transformed(WidthTransformFn transform, const Bytes& in, unsigned width,
                         const Executor& exec = serial_executor()) {
  Bytes out{1, 2, 3};
  transform(in, width, out, exec);
  return out;
}

// decode(encode(x)) == x and |encode(x)| == |x| for every standard input at every width.
// For a stage that is its own inverse, pass the same function twice.
template <class Widths>
void expect_width_transform_round_trips(WidthTransformFn encode, WidthTransformFn decode, const Widths& widths) {
  for (unsigned width : widths)
    for (const auto& input : cached_standard_inputs()) {
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      const Bytes coded = transformed(encode, input.bytes, width);
      ASSERT_EQ(coded.size(), input.bytes.size());
      ASSERT_EQ(transformed(decode, coded, width), input.bytes);
    }
}

// Every standard input of at least two blocks: encode on 4 threads gives the
// serial bytes, and decode on 4 threads gives the input back.
template <class Widths>
void expect_threads_give_the_serial_bytes(WidthTransformFn encode, WidthTransformFn decode, const Widths& widths) {
  const ThreadExecutor threads(4);
  for (unsigned width : widths)
    for (const auto& input : cached_standard_inputs()) {
      if (input.bytes.size() < 2 * kBlockBytes) continue;
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      const Bytes serial = transformed(encode, input.bytes, width);
      ASSERT_EQ(transformed(encode, input.bytes, width, threads), serial);
      ASSERT_EQ(transformed(decode, serial, width, threads), input.bytes);
    }
}

// The same for a single transform (a stage that is its own inverse): on 4
// threads it gives the serial bytes.
template <class Widths>
void expect_threads_give_the_serial_bytes(WidthTransformFn apply, const Widths& widths) {
  const ThreadExecutor threads(4);
  for (unsigned width : widths)
    for (const auto& input : cached_standard_inputs()) {
      if (input.bytes.size() < 2 * kBlockBytes) continue;
      SCOPED_TRACE(input.name + " width " + std::to_string(width));
      ASSERT_EQ(transformed(apply, input.bytes, width, threads), transformed(apply, input.bytes, width));
    }
}

// Each of `bad_widths` is a UsageError for encode and for decode (64 bytes of 1).
inline void expect_bad_widths_refused(WidthTransformFn encode, WidthTransformFn decode,
                                      std::initializer_list<unsigned> bad_widths) {
  const Bytes in(64, 1);
  Bytes out;
  for (unsigned width : bad_widths) {
    EXPECT_THROW(encode(in, width, out, serial_executor()), UsageError) << width;
    EXPECT_THROW(decode(in, width, out, serial_executor()), UsageError) << width;
  }
}

// Each of `bad_widths` is a UsageError for a single transform (64 bytes of 1).
inline void expect_bad_widths_refused(WidthTransformFn apply, std::initializer_list<unsigned> bad_widths) {
  const Bytes in(64, 1);
  Bytes out;
  for (unsigned width : bad_widths) EXPECT_THROW(apply(in, width, out, serial_executor()), UsageError) << width;
}

}  // namespace fz::testing
