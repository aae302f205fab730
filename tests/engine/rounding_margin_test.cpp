// The predictors' working bound leaves half an ulp of the chunk's largest
// magnitude for the rounding of x' = fl(p + fl(q * 2 eb_w)) (lossy_common.cpp,
// with_rounding_margin). Without it, a bound of a few ulps of the data (a
// temperature field in kelvin at NOA 1e-4) turns every element whose
// quantization error lands near the bound into an outlier: iris
// hybrid_height theta lost 28% of its cuszhi-cr frame to them.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "fz/fz.hpp"
#include "presets/lossy_common.hpp"
#include "lorenzo/lorenzo_stage.hpp"
#include "presets/presets.hpp"
#include "spline/spline.hpp"
#include "spline/spline_stage.hpp"
#include "value_range.hpp"

namespace fz::engine {
namespace {

// A float32 field around 288 (range about 1.8) with noise of a few
// thousandths on a smooth wave: at NOA 1e-4 the bound is about 6 ulps and
// the prediction errors span several steps, so the quantization errors
// spread evenly up to the bound, where rounding bites.
std::vector<float> kelvin_field(size_t nz, size_t ny, size_t nx) {
  std::vector<float> v(nz * ny * nx);
  uint32_t state = 12345;
  for (size_t z = 0; z < nz; ++z)
    for (size_t y = 0; y < ny; ++y)
      for (size_t x = 0; x < nx; ++x) {
        state = state * 1664525u + 1013904223u;
        const float noise = (float(state >> 8) / float(1 << 24) - 0.5f) * 4e-3f;
        v[(z * ny + y) * nx + x] =
            288.0f + 0.8f * std::sin(0.05f * float(x) + 0.3f * float(z)) * std::cos(0.07f * float(y)) + noise;
      }
  return v;
}

double half_ulp(float m) { return 0.5 * (double(std::nextafter(m, INFINITY)) - double(m)); }

ChunkFacts facts_with(double enforced, std::optional<double> magnitude) {
  ChunkFacts facts;
  facts.enforced = enforced;
  facts.magnitude = magnitude;
  return facts;
}

TEST(RoundingMargin, WorkingBoundLeavesHalfAnUlpOfTheMagnitude) {
  const double eb = 1.75e-4;  // 5.7 ulps of 288 in float32
  const auto b = predictor_bound(DataType::of<float>(), facts_with(eb, 289.0));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->rounding_margin);
  EXPECT_EQ(b->enforced, eb);
  EXPECT_LE(b->working, eb - half_ulp(289.0f));
  EXPECT_GT(b->working, eb - 2 * half_ulp(289.0f));
  EXPECT_EQ(double(float(b->working)), b->working);  // a value of T

  // Double data: half an ulp of a double.
  const auto d = predictor_bound(DataType::of<double>(), facts_with(1e-10, 1e4));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->rounding_margin);
  EXPECT_LT(d->working, 1e-10);
  EXPECT_GE(d->working, 1e-10 - (std::nextafter(1e4, INFINITY) - 1e4));
}

TEST(RoundingMargin, NoMarginWithoutAMagnitudeOrWhenItWouldTakeHalfTheBound) {
  const double eb = 1.75e-4;
  const auto unknown = predictor_bound(DataType::of<float>(), facts_with(eb, std::nullopt));
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->rounding_margin);
  float f = static_cast<float>(eb);
  if (double(f) > eb) f = std::nextafter(f, 0.0f);
  EXPECT_EQ(unknown->working, double(f));
  // A bound of one ulp: the margin would be half of it; none is taken.
  const double one_ulp = 2 * half_ulp(288.0f);
  const auto tight = predictor_bound(DataType::of<float>(), facts_with(one_ulp, 288.0));
  ASSERT_TRUE(tight);
  EXPECT_FALSE(tight->rounding_margin);
  EXPECT_EQ(tight->working, one_ulp);
}

// The presets pass it on: Lorenzo's working bound (its config's eb) and the
// spline's step bound carry the margin when the chunk's range is known.
TEST(RoundingMargin, PresetsPassTheMarginOn) {
  FiniteRange range;
  range.any = true;
  range.min = 287.3;
  range.max = 289.05;
  const std::vector<uint64_t> dims = {16, 64, 64};
  Options o;
  o.mode = ErrorMode::Noa;
  o.bound = 1e-4;
  const double eb = 1e-4 * (range.max - range.min);
  size_t seen = 0;
  for (Preset preset : {Preset::Fzgpu, Preset::Cusz, Preset::CuszHiTp, Preset::CuszHiCr}) {
    o.preset = preset;
    const Pipeline p = build_pipeline_from_range(DataType::of<float>(), dims, o, range);
    for (const StageNode& node : p.nodes()) {
      if (const auto* spline = dynamic_cast<const SplineStage*>(node.stage.get())) {
        ++seen;
        EXPECT_GT(spline->predictor_config().step_bound, 0) << preset_name(preset);
        EXPECT_LE(spline->predictor_config().step_bound, eb - half_ulp(289.05f)) << preset_name(preset);
        EXPECT_LE(spline->enforced_bound(), eb) << preset_name(preset);
        EXPECT_GT(spline->enforced_bound(), eb * (1 - 1e-12)) << preset_name(preset);
      }
      if (const auto* lorenzo = dynamic_cast<const LorenzoStage*>(node.stage.get())) {
        ++seen;
        EXPECT_LE(lorenzo->predictor_config().eb, eb - half_ulp(289.05f)) << preset_name(preset);
      }
    }
  }
  EXPECT_EQ(seen, 4u);
}

// The spline makes its steps from Config::step_bound when given (the engine
// passes the working bound with its margin) and still checks against eb: the
// same field loses most of its outliers (code 0 in the code streams).
TEST(RoundingMargin, SplineStepsFromTheStepBound) {
  const size_t n = 40 * 40 * 40;
  const std::vector<float> v = kelvin_field(40, 40, 40);
  const double eb = 1.75e-4;
  spline::Config config;
  config.radius = 4096;
  const ByteSpan in(reinterpret_cast<const uint8_t*>(v.data()), n * 4);
  const auto outliers = [&](const spline::Config& c) {
    spline::Streams s;
    spline::encode(in, {40, 40, 40}, c, eb, s);
    size_t zeros = 0;
    for (const Bytes& g : s.codes)
      for (size_t i = 0; i + 1 < g.size(); i += 2) zeros += g[i] == 0 && g[i + 1] == 0;
    return zeros;
  };
  const size_t plain = outliers(config);
  config.step_bound = eb - half_ulp(289.0f);
  const size_t margined = outliers(config);
  EXPECT_GT(plain, n / 100) << "the field no longer shows the rounding outliers";
  EXPECT_LT(margined * 10, plain) << margined << " vs " << plain;
}

}  // namespace
}  // namespace fz::engine
