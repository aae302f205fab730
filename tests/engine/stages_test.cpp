// Particular malformed configs are refused as format errors. The round trip
// of every listed stage (forward, rebuilt from (type id, config) alone,
// inverse) is stage_contract_test.cpp's.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "stage_names.hpp"

namespace fz::engine {
namespace {

TEST(Stages, MalformedConfigsAreFormatErrors) {
  const uint8_t bad_width[] = {3};
  EXPECT_THROW(parse_stage(1, ByteSpan(bad_width, 1)), FormatError);
  EXPECT_THROW(parse_stage(2, ByteSpan(bad_width, 0)), FormatError);
  const uint8_t bad_huffman[9] = {0, 4, 0, 0, 8, 0, 16, 0, 0};  // A=1024 but L=8: 2^8 < A
  EXPECT_THROW(parse_stage(11, ByteSpan(bad_huffman, 9)), FormatError);
  EXPECT_THROW(parse_stage(11, ByteSpan(bad_huffman, 5)), FormatError);
  EXPECT_THROW(parse_stage(0x7FEE, ByteSpan()), FormatError);
}

}  // namespace
}  // namespace fz::engine
