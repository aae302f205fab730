// The spline decoder against malformed and hostile streams (spline.hpp):
// FormatError, never a crash, an out-of-bounds access or an allocation beyond
// the output (run it under the ASan build too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "common/error.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"

namespace fz {
namespace {

using Dims = std::vector<size_t>;

struct Sample {
  Dims dims;
  unsigned width;
  unsigned code_bytes;
  spline::Streams streams;
  Bytes decoded;
  size_t outliers = 0;
  size_t index_width = 4;
  size_t indices_at = 0;  // in the side stream

  size_t elements() const {
    size_t n = 1;
    for (size_t e : dims) n *= e;
    return n;
  }
  size_t index(size_t k) const {
    return index_width == 4 ? load_le<uint32_t>(streams.side.data() + indices_at + 4 * k)
                            : load_le<uint64_t>(streams.side.data() + indices_at + 8 * k);
  }
  void set_index(size_t k, size_t value) {
    store_le<uint32_t>(streams.side.data() + indices_at + 4 * k, static_cast<uint32_t>(value));
  }
  bool is_anchor(size_t g) const {
    const size_t tile = spline::rules::tile_size(static_cast<unsigned>(dims.size()));
    for (size_t k = dims.size(); k-- > 0;) {
      if ((g % dims[k]) % tile != 0) return false;
      g /= dims[k];
    }
    return true;
  }
  uint32_t code(size_t g) const {
    return code_bytes == 1 ? streams.codes[g] : load_le<uint16_t>(streams.codes.data() + 2 * g);
  }
  void set_code(size_t g, uint32_t value) {
    if (code_bytes == 1) streams.codes[g] = static_cast<uint8_t>(value);
    else store_le<uint16_t>(streams.codes.data() + 2 * g, static_cast<uint16_t>(value));
  }
};

// A smooth float32 field with a few NaNs, so the side stream has outliers.
Sample make_sample(const Dims& dims, unsigned width = 4, unsigned code_bytes = 2) {
  Sample s;
  s.dims = dims;
  s.width = width;
  s.code_bytes = code_bytes;
  const size_t n = s.elements();
  Bytes in(n * width);
  for (size_t i = 0; i < n; ++i) {
    double v = std::sin(0.01 * i) + 0.001 * static_cast<double>(i % 7);
    if (i % 97 == 5) v = std::numeric_limits<double>::quiet_NaN();
    if (width == 4) store_le<float>(in.data() + 4 * i, static_cast<float>(v));
    else store_le<double>(in.data() + 8 * i, v);
  }
  spline::Config config;
  config.width = width;
  config.code_bytes = code_bytes;
  config.radius = code_bytes == 1 ? 64 : 512;
  spline::encode(in, dims, config, 1e-3, s.streams);
  spline::decode(s.streams.codes, s.streams.side, dims, width, code_bytes, s.decoded);
  s.index_width = spline::rules::index_width_of(n);
  size_t tiles = 1;
  for (size_t e : dims) tiles *= (e + spline::rules::tile_size(static_cast<unsigned>(dims.size())) - 1) /
                                 spline::rules::tile_size(static_cast<unsigned>(dims.size()));
  const auto layout = spline::rules::side_layout(static_cast<unsigned>(dims.size()), width, tiles);
  s.indices_at = layout.indices_at;
  s.outliers = load_le<uint64_t>(s.streams.side.data() + layout.count_at);
  return s;
}

bool decodes(const Sample& s, const Bytes& codes, const Bytes& side) {
  Bytes out;
  try {
    spline::decode(codes, side, s.dims, s.width, s.code_bytes, out);
  } catch (const FormatError&) {
    return false;
  }
  EXPECT_EQ(out.size(), s.elements() * s.width);
  return true;
}

void expect_format_error(const Sample& s, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_FALSE(decodes(s, s.streams.codes, s.streams.side));
}

const std::vector<Dims> kShapes = {{20, 19, 33}, {70, 65}, {1000}};

TEST(SplineHostile, SamplesDecodeAndHaveOutliers) {
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims);
    EXPECT_TRUE(decodes(s, s.streams.codes, s.streams.side));
    EXPECT_GT(s.outliers, 0u);
  }
}

TEST(SplineHostile, TruncatedOrExtendedStreams) {
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims);
    for (size_t length = 0; length < s.streams.side.size(); ++length) {
      const Bytes side(s.streams.side.begin(), s.streams.side.begin() + length);
      EXPECT_FALSE(decodes(s, s.streams.codes, side)) << length;
    }
    Bytes longer = s.streams.side;
    longer.push_back(0);
    EXPECT_FALSE(decodes(s, s.streams.codes, longer));
    const Bytes short_codes(s.streams.codes.begin(), s.streams.codes.end() - 1);
    EXPECT_FALSE(decodes(s, short_codes, s.streams.side));
    Bytes long_codes = s.streams.codes;
    long_codes.push_back(1);
    EXPECT_FALSE(decodes(s, long_codes, s.streams.side));
  }
}

TEST(SplineHostile, BitFlipsNeverCrash) {
  std::mt19937_64 rng(42);
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims);
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes side = s.streams.side, codes = s.streams.codes;
      Bytes& target = trial % 3 == 0 ? codes : side;
      const size_t flips = 1 + rng() % 3;
      for (size_t f = 0; f < flips; ++f) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      decodes(s, codes, side);  // either way, but never a crash
    }
  }
}

TEST(SplineHostile, HeaderFields) {
  const Sample base = make_sample({20, 19, 33});
  auto with = [&](size_t at, uint8_t value) {
    Sample s = base;
    s.streams.side[at] = value;
    return s;
  };
  expect_format_error(with(0, 2), "rank 2 for 3-D dims");
  expect_format_error(with(0, 0), "rank 0");
  expect_format_error(with(1, 5), "levels");
  expect_format_error(with(6, 4), "unused flag bit");
  expect_format_error(with(6, 0x80), "unused flag bit 7");
  for (uint32_t radius : {0u, 32769u, 0xFFFFFFFFu}) {
    Sample s = base;
    store_le<uint32_t>(s.streams.side.data() + 2, radius);
    expect_format_error(s, "radius " + std::to_string(radius));
  }
  for (float step : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::denorm_min()}) {
    Sample s = base;
    store_le<float>(s.streams.side.data() + 7, step);
    expect_format_error(s, "step " + std::to_string(step));
  }
  // The same streams under dims of another rank or shape.
  Bytes out;
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {20 * 19, 33}, 4, 2, out), FormatError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {19, 20, 33}, 4, 2, out), FormatError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {20, 19, 33}, 8, 2, out), FormatError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {20, 19, 33}, 3, 2, out), UsageError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {20, 19, 33}, 4, 3, out), UsageError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {}, 4, 2, out), UsageError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {1, 2, 3, 4}, 4, 2, out), UsageError);
  // Huge dims against a small stream: refused before any allocation.
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {size_t{1} << 40}, 4, 2, out), FormatError);
  EXPECT_THROW(spline::decode(base.streams.codes, base.streams.side, {1 << 20, 1 << 20, 1 << 10}, 4, 2, out),
               FormatError);
}

TEST(SplineHostile, RadiusAboveOneByteCodes) {
  Sample s = make_sample({1000}, 4, 1);
  EXPECT_TRUE(decodes(s, s.streams.codes, s.streams.side));
  store_le<uint32_t>(s.streams.side.data() + 2, 129);
  expect_format_error(s, "radius 129 with 1-byte codes");
}

TEST(SplineHostile, OutlierList) {
  for (const Dims& dims : kShapes) {
    const Sample base = make_sample(dims);
    ASSERT_GE(base.outliers, 2u);
    const size_t count_at = base.indices_at - 8;
    for (uint64_t count : {base.outliers + 1, base.outliers - 1, uint64_t{1} << 60, ~uint64_t{0},
                           ~uint64_t{0} / 8 + 1}) {
      Sample s = base;
      store_le<uint64_t>(s.streams.side.data() + count_at, count);
      expect_format_error(s, "count " + std::to_string(count));
    }
    {
      Sample s = base;
      const size_t first = s.index(0), second = s.index(1);
      s.set_index(0, second);
      s.set_index(1, first);
      expect_format_error(s, "indices out of order");
      s.set_index(0, second);
      s.set_index(1, second);
      expect_format_error(s, "index repeated");
    }
    {
      Sample s = base;
      s.set_index(s.outliers - 1, s.elements());
      expect_format_error(s, "index == N");
      s.set_index(s.outliers - 1, 0xFFFFFFFFu);
      expect_format_error(s, "index 2^32 - 1");
    }
    {
      Sample s = base;
      ASSERT_GT(s.index(0), 0u);
      s.set_index(0, 0);  // an anchor, still increasing
      expect_format_error(s, "outlier at an anchor");
    }
  }
}

TEST(SplineHostile, Codes) {
  for (const Dims& dims : kShapes) {
    const Sample base = make_sample(dims);
    size_t predicted = 1;
    while (base.is_anchor(predicted) || base.code(predicted) == 0) ++predicted;
    {
      Sample s = base;
      s.set_code(predicted, 0);
      expect_format_error(s, "code 0 at a predicted point");
      s.set_code(predicted, 1024);
      expect_format_error(s, "code 2R");
      s.set_code(predicted, 0xFFFF);
      expect_format_error(s, "code 0xFFFF");
      s.set_code(predicted, 1023);
      EXPECT_TRUE(decodes(s, s.streams.codes, s.streams.side));  // 2R - 1 is a valid code
    }
    {
      Sample s = base;
      s.set_code(0, 512);
      expect_format_error(s, "nonzero code at an anchor");
    }
    {
      Sample s = base;
      s.set_code(s.index(0), 512);
      expect_format_error(s, "nonzero code at an outlier");
    }
  }
}

TEST(SplineHostile, EmptyChunk) {
  const Sample s = make_sample({0});
  EXPECT_TRUE(decodes(s, s.streams.codes, s.streams.side));
  Bytes out;
  EXPECT_THROW(spline::decode(s.streams.codes, s.streams.side, {1}, 4, 2, out), FormatError);
  EXPECT_THROW(spline::decode(Bytes{}, Bytes{}, {0}, 4, 2, out), FormatError);
}

}  // namespace
}  // namespace fz
