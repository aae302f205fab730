// The spline stage's config layouts (kernels/spline/spline_stage.hpp; issue 30
// item 3): v1 (the presets' today, whose bytes must not change) and the
// compact v2 (first byte 0x82, LEB128 dims, a flags byte for coarse levels
// and the fill input). Checks v2's exact bytes, that both parse back to the
// same bytes, that a stage parsed from v2 decodes the encoder's streams but
// refuses to encode, and that malformed v2 configs are refused as
// FormatError (bad varints, flags, sizes, trailing bytes).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/stage/stage.hpp"
#include "spline/spline_stage.hpp"

namespace fz {
namespace {

using stage::SplineStage;

spline::Config v2_config(bool coarse) {
  spline::Config c;
  c.width = 4;
  c.code_bytes = 2;
  c.radius = 4096;
  c.alpha = 1.25;
  c.beta = 2;
  c.coarse_levels = coarse;
  c.compact_config = true;
  return c;
}

const SplineStage& as_spline(const stage::Stage& s) { return dynamic_cast<const SplineStage&>(s); }

TEST(SplineConfig, V2Bytes) {
  const SplineStage s(v2_config(true), 0.01, {14, 64, 128});
  EXPECT_EQ(s.config(), (Bytes{0x82, 4, 2, 0, 3, 14, 0x40, 0x80, 0x01, 0x01, 0x7B, 0x14, 0xAE, 0x47, 0xE1, 0x7A, 0x84, 0x3F}));
  const SplineStage fill(v2_config(false), 0.01, {300}, true);
  EXPECT_EQ(fill.config(), (Bytes{0x82, 4, 2, 0, 1, 0xAC, 0x02, 0x02, 0x7B, 0x14, 0xAE, 0x47, 0xE1, 0x7A, 0x84, 0x3F}));
}

TEST(SplineConfig, V2ParsesBackAndOnlyDecodes) {
  for (const bool coarse : {false, true})
    for (const bool fill : {false, true}) {
      const SplineStage s(v2_config(coarse), 0.01, {5, 1000, 3}, fill);
      const auto parsed = stage::parse_stage(static_cast<uint16_t>(stage::StageType::Spline), s.config());
      EXPECT_EQ(parsed->config(), s.config());
      const SplineStage& p = as_spline(*parsed);
      EXPECT_EQ(p.code_format().coarse_levels, coarse);
      EXPECT_EQ(p.has_fill_input(), fill);
      EXPECT_EQ(p.dims(), (std::vector<size_t>{5, 1000, 3}));
      EXPECT_FALSE(p.can_encode());
      EXPECT_TRUE(s.can_encode());
      std::vector<Bytes> out;
      const Bytes in(4 * 15000, 0);
      const Bytes mask(15000 / 8, 0);
      std::vector<ByteSpan> inputs{ByteSpan(in)};
      if (fill) inputs.push_back(ByteSpan(mask));
      const stage::StageContext ctx{serial_executor(), size_t{1} << 30};
      EXPECT_THROW(p.forward(inputs, out, ctx), UsageError);
    }
}

// The encoder's stage writes, the stage parsed from its v2 config decodes.
TEST(SplineConfig, V2RoundTripThroughParsedStage) {
  const std::vector<size_t> dims{33, 40, 50};
  std::vector<float> values;
  for (size_t i = 0; i < 33 * 40 * 50; ++i) values.push_back(static_cast<float>(std::sin(i * 0.001) + i % 50 * 0.01));
  Bytes in(values.size() * 4);
  std::memcpy(in.data(), values.data(), in.size());
  const SplineStage s(v2_config(true), 1e-3, dims);
  const stage::StageContext ctx{serial_executor(), size_t{1} << 30};
  std::vector<Bytes> streams;
  s.forward({ByteSpan(in)}, streams, ctx);
  const auto parsed = stage::parse_stage(static_cast<uint16_t>(stage::StageType::Spline), s.config());
  std::vector<ByteSpan> spans(streams.begin(), streams.end());
  std::vector<Bytes> back;
  parsed->inverse(spans, back, ctx);
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(back[0].size(), in.size());
  for (size_t i = 0; i < values.size(); ++i) {
    float y;
    std::memcpy(&y, back[0].data() + 4 * i, 4);
    ASSERT_LE(std::fabs(static_cast<double>(values[i]) - y), 1e-3) << i;
  }
}

// v1 keeps its layout and parses back to the same bytes; coarse levels need v2.
TEST(SplineConfig, V1Unchanged) {
  spline::Config c = v2_config(false);
  c.compact_config = false;
  const SplineStage s(c, 0.01, {14, 64, 128});
  const Bytes bytes = s.config();
  ASSERT_EQ(bytes.size(), 33u + 8 * 3);
  EXPECT_EQ(bytes[0], 4);
  const auto parsed = stage::parse_stage(static_cast<uint16_t>(stage::StageType::Spline), bytes);
  EXPECT_EQ(parsed->config(), bytes);
  EXPECT_TRUE(as_spline(*parsed).can_encode());
  c.coarse_levels = true;
  EXPECT_THROW(SplineStage(c, 0.01, {14, 64, 128}), UsageError);
}

TEST(SplineConfig, MalformedV2IsRefused) {
  const std::vector<Bytes> bad = {
      {0x82},                                            // too short
      {0x82, 4, 2, 0, 1, 5},                             // no flags byte
      {0x82, 4, 2, 0, 1, 5, 0},                          // no bound
      {0x82, 4, 2, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0},        // a byte after the bound
      {0x82, 4, 2, 0, 1, 5, 4, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},           // unknown flag
      {0x82, 4, 2, 0, 1, 5, 0x80, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},        // unknown flag (high bit)
      {0x82, 4, 2, 0, 1, 0x85, 0x00, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},  // dim not minimally encoded
      {0x82, 4, 2, 0, 1, 0x85},                          // ends inside a dim
      {0x82, 4, 2, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},  // over 64 bits
      {0x82, 4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},              // rank 0
      {0x82, 4, 2, 0, 4, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},  // rank 4
      {0x82, 4, 2, 3, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},           // code form 3
      {0x82, 5, 2, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},           // width 5
      {0x82, 4, 3, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},           // code bytes 3
      {0x82, 4, 2, 0, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F},           // rank 2 with one dim
      {0x82, 4, 2, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0x7F},  // bound +inf
      {0x82, 4, 2, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0},        // bound 0
  };
  for (size_t k = 0; k < bad.size(); ++k)
    EXPECT_THROW(stage::parse_stage(static_cast<uint16_t>(stage::StageType::Spline), bad[k]), FormatError)
        << "case " << k;
}

}  // namespace
}  // namespace fz
