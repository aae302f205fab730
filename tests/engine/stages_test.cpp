// Particular malformed configs are refused as format errors. The round trip
// of every listed stage (forward, rebuilt from (type id, config) alone,
// inverse) is stage_contract_test.cpp's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "byteswap/byteswap.hpp"
#include "common/error.hpp"
#include "stage_names.hpp"
#include "word_stage/word_stage.hpp"

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

// A word stage over one width only (docs/ADDING_A_STAGE.md: WordKernels::widths):
// the class refuses the other widths, a stored config of another width is a
// FormatError, and the contract test's samples cover that width alone.
void swap_words(ByteSpan in, unsigned width, Bytes& out, const Executor& exec) {
  byteswap::apply(in, width, out, exec);
}

std::unique_ptr<Stage> make_float32_only(unsigned width) {
  WordKernels kernels;
  kernels.encode = swap_words;
  kernels.decode = swap_words;
  kernels.widths = word_widths({4});
  return std::make_unique<WordStage>(StageType::ByteSwap, "swap32", width, kernels);
}

TEST(Stages, AWordStageOfOneWidthRefusesTheOthers) {
  EXPECT_EQ(make_float32_only(4)->name(), "swap324");
  for (unsigned width : {1u, 2u, 8u}) {
    try {
      make_float32_only(width);
      ADD_FAILURE() << "width " << width << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "swap32: width must be 4");
    }
    const uint8_t config[] = {static_cast<uint8_t>(width)};
    EXPECT_THROW(parse_single_byte_config(ByteSpan(config, 1), "swap32", make_float32_only), FormatError);
  }
  const std::vector<StageSample> samples = word_stage_samples("swap32", make_float32_only, word_widths({4}));
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].label, "swap324");
  EXPECT_EQ(word_stage_samples("swap32", make_float32_only, word_widths({4, 8})).size(), 2u);
  EXPECT_EQ(word_widths({1, 2, 4, 8}), WordKernels::kAllWordWidths);
}

TEST(Stages, WordStagesTakeEveryWidthByDefault) {
  for (uint8_t width : {1, 2, 4, 8}) {
    const uint8_t config[] = {width};
    EXPECT_EQ(parse_stage(7, ByteSpan(config, 1))->config(), Bytes{width});
  }
  try {
    const uint8_t three[] = {3};
    parse_stage(7, ByteSpan(three, 1));
    ADD_FAILURE() << "width 3 accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("width must be 1, 2, 4 or 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fz::engine
