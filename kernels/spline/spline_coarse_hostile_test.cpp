// The spline decoder with coarse levels (spline.hpp, "Coarse levels")
// against malformed and hostile streams: the side stream's layout with L + C
// levels and the root alone, the coarse levels' flags and steps, the codes
// at the anchors (the root's must be 0; any other anchor's code 0 must be a
// listed outlier), outliers listed at the root. FormatError, never a crash
// or a read out of bounds (run it under the ASan build too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/testing/spline_inputs.hpp"

namespace fz {
namespace {

using namespace spline::test_inputs;

struct Sample {
  Dims dims;
  spline::CodeFormat format;
  uint32_t radius = 32768;  // the anchors of a sine over the element index are far apart
  CodePlaces places;
  spline::Streams streams;
  spline::rules::Grid grid;
  spline::rules::SideLayout layout;
  size_t outliers = 0;
  std::vector<size_t> anchors;  // element indices, anchor-grid order
};

// A smooth field with NaNs every 97th element and at two anchors, encoded
// with coarse levels.
Sample make_sample(const Dims& dims, unsigned width, spline::CodeForm form) {
  Sample s;
  s.dims = dims;
  s.format = {width, 2, form, true};
  s.places = code_places(dims);
  spline::rules::grid_of(dims, s.grid);
  const size_t n = element_count(dims), B = s.grid.tile;
  for (size_t z = 0; z < s.grid.n[0]; z += B)
    for (size_t y = 0; y < s.grid.n[1]; y += B)
      for (size_t x = 0; x < s.grid.n[2]; x += B) s.anchors.push_back((z * s.grid.n[1] + y) * s.grid.n[2] + x);
  Bytes in(n * width);
  for (size_t i = 0; i < n; ++i) {
    double v = std::sin(0.01 * i) + 0.001 * static_cast<double>(i % 7);
    if (i % 97 == 5 || i == s.anchors[1] || i == s.anchors.back()) v = std::numeric_limits<double>::quiet_NaN();
    if (width == 4) store_le<float>(in.data() + 4 * i, static_cast<float>(v));
    else store_le<double>(in.data() + 8 * i, v);
  }
  spline::Config config;
  config.width = width;
  config.radius = s.radius;
  config.code_form = form;
  config.coarse_levels = true;
  config.compact_config = true;
  spline::encode(in, dims, config, 1e-3, s.streams);
  s.layout = spline::rules::side_layout(s.grid.rank, width, 1, spline::rules::coarse_level_count(s.grid));
  s.outliers = load_le<uint64_t>(s.streams.side.data() + s.layout.count_at);
  return s;
}

bool decodes(const Sample& s, const spline::Streams& streams, const spline::CodeFormat& format) {
  Bytes out;
  try {
    spline::decode(streams, s.dims, format, out);
  } catch (const FormatError&) {
    return false;
  }
  EXPECT_EQ(out.size(), s.grid.elements * format.width);
  // decode_into over garbage gives the same verdict and bytes.
  Bytes garbage(out.size() + 8, 0xA5);
  const ByteSpan codes[spline::kCodeGroups] = {streams.codes[0], streams.codes[1], streams.codes[2]};
  EXPECT_EQ(spline::decode_into(codes, streams.side, s.dims, format, garbage.data(), garbage.size()), out.size());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), garbage.begin()));
  return true;
}
bool decodes(const Sample& s, const spline::Streams& streams) { return decodes(s, streams, s.format); }

spline::Streams with_side(const Sample& s, Bytes side) {
  spline::Streams t = s.streams;
  t.side = std::move(side);
  return t;
}

const std::vector<Dims> kShapes = {{20, 19, 33}, {70, 65}, {1000}, {40, 50, 70}};

TEST(SplineCoarseHostile, SamplesDecodeWithCoarseOutliers) {
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims, 4, spline::CodeForm::kOffset);
    ASSERT_GT(spline::rules::coarse_level_count(s.grid), 0u);
    EXPECT_TRUE(decodes(s, s.streams));
    // The NaN anchors are coarse outliers: code 0, listed.
    EXPECT_EQ(code_at(s.streams, s.places, s.format, s.radius, s.anchors[1]), 0u);
    EXPECT_EQ(code_at(s.streams, s.places, s.format, s.radius, s.anchors.back()), 0u);
    // A decoder told the other mode refuses.
    spline::CodeFormat v1 = s.format;
    v1.coarse_levels = false;
    EXPECT_FALSE(decodes(s, s.streams, v1));
  }
}

TEST(SplineCoarseHostile, SideTruncatedExtendedOrRelabelled) {
  for (const Dims& dims : kShapes)
    for (unsigned width : {4u, 8u}) {
      const Sample s = make_sample(dims, width, spline::CodeForm::kSigned);
      const Bytes& side = s.streams.side;
      for (size_t length = 0; length < side.size(); length += length < s.layout.indices_at + 16 ? 1 : 7)
        EXPECT_FALSE(decodes(s, with_side(s, Bytes(side.begin(), side.begin() + length)))) << length;
      Bytes longer = side;
      longer.push_back(0);
      EXPECT_FALSE(decodes(s, with_side(s, longer)));
      const unsigned levels = side[1];
      for (unsigned wrong : {levels - 1, levels + 1, spline::rules::level_count(s.grid.rank), 0u, 255u}) {
        Bytes changed = side;
        changed[1] = static_cast<uint8_t>(wrong);
        EXPECT_FALSE(decodes(s, with_side(s, changed))) << "levels " << wrong;
      }
      // The coarse levels' flags must be 0; their steps positive, normal, finite.
      const unsigned coarse = spline::rules::coarse_level_count(s.grid);
      for (unsigned k = 0; k < coarse; ++k) {
        const size_t at = s.layout.levels_at + k * s.layout.level_bytes;
        for (uint8_t flags : {uint8_t{1}, uint8_t{2}, uint8_t{4}, uint8_t{6}}) {
          Bytes changed = side;
          changed[at] = flags;
          EXPECT_FALSE(decodes(s, with_side(s, changed))) << "coarse flags " << int(flags);
        }
        for (double step : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan(""), 1e-320}) {
          Bytes changed = side;
          if (width == 4) store_le<float>(changed.data() + at + 1, static_cast<float>(step == 1e-320 ? 1e-40 : step));
          else store_le<double>(changed.data() + at + 1, step);
          EXPECT_FALSE(decodes(s, with_side(s, changed))) << "coarse step " << step;
        }
      }
      // Any root value decodes (it is stored as it is).
      for (uint8_t byte : {uint8_t{0}, uint8_t{0x7F}, uint8_t{0xFF}}) {
        Bytes changed = side;
        std::memset(changed.data() + s.layout.anchors_at, byte, width);
        EXPECT_TRUE(decodes(s, with_side(s, changed))) << "root bytes " << int(byte);
      }
    }
}

TEST(SplineCoarseHostile, AnchorCodesAndOutliers) {
  for (const Dims& dims : kShapes)
    for (spline::CodeForm form : {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag}) {
      const Sample s = make_sample(dims, 4, form);
      auto with_code = [&](size_t g, uint32_t code) {
        spline::Streams t = s.streams;
        set_code(t, s.places, s.format, s.radius, g, code);
        return t;
      };
      // The root's code must be 0.
      for (uint32_t code : {1u, s.radius, 2 * s.radius - 1, 0xFFFFu})
        EXPECT_FALSE(decodes(s, with_code(0, code))) << "root code " << code;
      size_t coded = 0;  // a coded anchor (not an outlier)
      for (size_t a = 2; a < s.anchors.size() && coded == 0; ++a)
        if (code_at(s.streams, s.places, s.format, s.radius, s.anchors[a]) != 0) coded = s.anchors[a];
      ASSERT_NE(coded, 0u);
      EXPECT_FALSE(decodes(s, with_code(coded, 0))) << "unlisted code 0 at an anchor";
      EXPECT_FALSE(decodes(s, with_code(coded, 2 * s.radius))) << "code 2R at an anchor";
      for (uint32_t code : {1u, s.radius, 2 * s.radius - 1})  // any valid code decodes, to some value
        EXPECT_TRUE(decodes(s, with_code(coded, code))) << "code " << code;
      // A listed anchor outlier given a code: refused.
      EXPECT_FALSE(decodes(s, with_code(s.anchors[1], s.radius)));
      // An outlier listed at the root: refused (the first index set to 0).
      Bytes side = s.streams.side;
      store_le<uint32_t>(side.data() + s.layout.indices_at, 0);
      EXPECT_FALSE(decodes(s, with_side(s, side)));
    }
}

TEST(SplineCoarseHostile, BitFlipsNeverCrash) {
  std::mt19937_64 rng(5);
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims, 8, spline::CodeForm::kZigzag);
    for (int trial = 0; trial < 400; ++trial) {
      spline::Streams t = s.streams;
      const unsigned which = trial % 4;
      Bytes& target = which < spline::kCodeGroups ? t.codes[which] : t.side;
      for (size_t f = 0, flips = 1 + rng() % 3; f < flips; ++f)
        target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      decodes(s, t);  // either verdict; never a crash
    }
  }
}

}  // namespace
}  // namespace fz
