// The spline decoder against malformed and hostile streams (spline.hpp):
// FormatError, never a crash, an out-of-bounds access or an allocation beyond
// the output (run it under the ASan build too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
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
  uint32_t radius = 512;
  CodePlaces places;
  spline::Streams streams;
  Bytes decoded;
  size_t outliers = 0;
  size_t index_width = 4;
  size_t indices_at = 0;  // in the side stream

  size_t elements() const { return element_count(dims); }
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
  // Element g's code in the offset form, through the slow places (spline_inputs.hpp).
  uint32_t code(size_t g) const { return code_at(streams, places, format, radius, g); }
  void set_code(size_t g, uint32_t value) { spline::test_inputs::set_code(streams, places, format, radius, g, value); }
  uint32_t stored(size_t g) const { return stored_at(streams.codes, places, format.code_bytes, g); }
  void set_stored_word(size_t g, uint32_t value) { set_stored(streams.codes, places, format.code_bytes, g, value); }
};

// A smooth float32 field with a few NaNs, so the side stream has outliers.
Sample make_sample(const Dims& dims, unsigned width = 4, unsigned code_bytes = 2,
                   spline::CodeForm form = spline::CodeForm::kOffset, uint32_t radius = 0) {
  Sample s;
  s.dims = dims;
  s.format = {width, code_bytes, form};
  s.radius = radius != 0 ? radius : code_bytes == 1 ? 64 : 512;
  s.places = code_places(dims);
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
  config.radius = s.radius;
  config.code_form = form;
  spline::encode(in, dims, config, 1e-3, s.streams);
  spline::decode(s.streams, dims, s.format, s.decoded);
  s.index_width = spline::rules::index_width_of(n);
  size_t tiles = 1;
  for (size_t e : dims) tiles *= (e + spline::rules::tile_size(static_cast<unsigned>(dims.size())) - 1) /
                                 spline::rules::tile_size(static_cast<unsigned>(dims.size()));
  const auto layout = spline::rules::side_layout(static_cast<unsigned>(dims.size()), width, tiles);
  s.indices_at = layout.indices_at;
  s.outliers = load_le<uint64_t>(s.streams.side.data() + layout.count_at);
  return s;
}

bool decodes(const Sample& s, const spline::Streams& streams, const spline::CodeFormat& format) {
  Bytes out;
  try {
    spline::decode(streams, s.dims, format, out);
  } catch (const FormatError&) {
    return false;
  }
  EXPECT_EQ(out.size(), s.elements() * format.width);
  return true;
}
bool decodes(const Sample& s, const spline::Streams& streams) { return decodes(s, streams, s.format); }
bool decodes(const Sample& s) { return decodes(s, s.streams); }

// The sample's streams with the side stream replaced.
spline::Streams with_side(const Sample& s, Bytes side) {
  spline::Streams t = s.streams;
  t.side = std::move(side);
  return t;
}

void expect_format_error(const Sample& s, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_FALSE(decodes(s));
}

const std::vector<Dims> kShapes = {{20, 19, 33}, {70, 65}, {1000}};
const spline::CodeForm kForms[] = {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag};

std::string form_name(spline::CodeForm form) {
  return form == spline::CodeForm::kSigned ? "signed" : form == spline::CodeForm::kZigzag ? "zigzag" : "offset";
}

TEST(SplineHostile, SamplesDecodeAndHaveOutliers) {
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims);
    EXPECT_TRUE(decodes(s));
    EXPECT_GT(s.outliers, 0u);
    for (unsigned k = 0; k < spline::kCodeGroups; ++k) EXPECT_FALSE(s.streams.codes[k].empty()) << k;
    const Sample t = make_sample(dims, 4, 2, spline::CodeForm::kSigned);
    EXPECT_TRUE(decodes(t));
    EXPECT_EQ(t.streams.side, s.streams.side);
    EXPECT_EQ(t.decoded, s.decoded);
  }
}

TEST(SplineHostile, TruncatedOrExtendedStreams) {
  for (const Dims& dims : kShapes)
    for (spline::CodeForm form : kForms) {
      SCOPED_TRACE(form_name(form));
      const Sample s = make_sample(dims, 4, 2, form);
      for (size_t length = 0; length < s.streams.side.size(); ++length) {
        const Bytes side(s.streams.side.begin(), s.streams.side.begin() + length);
        EXPECT_FALSE(decodes(s, with_side(s, side))) << length;
      }
      Bytes longer = s.streams.side;
      longer.push_back(0);
      EXPECT_FALSE(decodes(s, with_side(s, longer)));
      // Each code stream a byte or a code shorter or longer (the longer with
      // a valid-looking q = 0 word), and empty.
      for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
        SCOPED_TRACE("code group " + std::to_string(k));
        const Bytes& codes = s.streams.codes[k];
        ASSERT_GE(codes.size(), 2u);
        for (size_t cut : {size_t{1}, size_t{2}, codes.size()}) {
          spline::Streams t = s.streams;
          t.codes[k].resize(codes.size() - cut);
          EXPECT_FALSE(decodes(s, t)) << "cut " << cut;
        }
        for (size_t extra : {size_t{1}, size_t{2}}) {
          spline::Streams t = s.streams;
          for (size_t b = 0; b < extra; ++b)
            t.codes[k].push_back(form != spline::CodeForm::kOffset ? 0 : b == 0 ? uint8_t(s.radius) : uint8_t(s.radius >> 8));
          EXPECT_FALSE(decodes(s, t)) << "extra " << extra;
        }
      }
    }
}

// The code streams' sizes each match their group, not only their sum (which
// is all the stage's own check sees): a code moved from one group to
// another, the groups in another order, every code in one group.
TEST(SplineHostile, WrongSizeCodeGroups) {
  for (const Dims& dims : kShapes) {
    const Sample s = make_sample(dims);
    const unsigned cb = s.format.code_bytes;
    for (unsigned from = 0; from < spline::kCodeGroups; ++from)
      for (unsigned to = 0; to < spline::kCodeGroups; ++to) {
        if (from == to) continue;
        spline::Streams t = s.streams;
        t.codes[to].insert(t.codes[to].end(), t.codes[from].end() - cb, t.codes[from].end());
        t.codes[from].resize(t.codes[from].size() - cb);
        EXPECT_FALSE(decodes(s, t)) << "a code moved from group " << from << " to " << to;
      }
    size_t swaps = 0;
    for (unsigned a = 0; a < spline::kCodeGroups; ++a)
      for (unsigned b = a + 1; b < spline::kCodeGroups; ++b) {
        if (s.streams.codes[a].size() == s.streams.codes[b].size()) continue;  // 1-D: groups 1 and 2
        spline::Streams t = s.streams;
        std::swap(t.codes[a], t.codes[b]);
        EXPECT_FALSE(decodes(s, t)) << "groups " << a << " and " << b << " swapped";
        ++swaps;
      }
    EXPECT_GE(swaps, 2u);
    {
      spline::Streams t = s.streams;
      std::swap(t.codes[0], t.codes[1]);
      std::swap(t.codes[1], t.codes[2]);
      EXPECT_FALSE(decodes(s, t)) << "groups rotated";
    }
    {
      spline::Streams t = s.streams;
      for (unsigned k = 1; k < spline::kCodeGroups; ++k) {
        t.codes[0].insert(t.codes[0].end(), t.codes[k].begin(), t.codes[k].end());
        t.codes[k].clear();
      }
      EXPECT_FALSE(decodes(s, t)) << "every code in group 0";
    }
  }
}

TEST(SplineHostile, BitFlipsNeverCrash) {
  std::mt19937_64 rng(42);
  for (const Dims& dims : kShapes)
    for (spline::CodeForm form : kForms) {
      const Sample s = make_sample(dims, 4, 2, form);
      for (int trial = 0; trial < 3000; ++trial) {
        spline::Streams t = s.streams;
        const unsigned which = trial % 6;  // half the trials in a code stream, half in the side stream
        Bytes& target = which < spline::kCodeGroups ? t.codes[which] : t.side;
        const size_t flips = 1 + rng() % 3;
        for (size_t f = 0; f < flips; ++f) target[rng() % target.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        decodes(s, t);  // either way, but never a crash
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
  expect_format_error(with(6, 6), "interpolation 3");
  expect_format_error(with(6, 7), "interpolation 3, reversed");
  expect_format_error(with(6, 8), "unused flag bit 3");
  expect_format_error(with(6, 0x80), "unused flag bit 7");
  expect_format_error(with(6 + 5, 0x40), "unused flag bit 6 at the second level");
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
  // The same streams under dims of another rank or shape (their code groups
  // differ in size too), another width, a bad format.
  const spline::CodeFormat f4{4, 2, spline::CodeForm::kOffset};
  const spline::Streams& st = base.streams;
  Bytes out;
  EXPECT_THROW(spline::decode(st, {20 * 19, 33}, f4, out), FormatError);
  EXPECT_THROW(spline::decode(st, {19, 20, 33}, f4, out), FormatError);
  EXPECT_THROW(spline::decode(st, {20, 19, 33}, {8, 2, spline::CodeForm::kOffset}, out), FormatError);
  EXPECT_THROW(spline::decode(st, {20, 19, 33}, {3, 2, spline::CodeForm::kOffset}, out), UsageError);
  EXPECT_THROW(spline::decode(st, {20, 19, 33}, {4, 3, spline::CodeForm::kOffset}, out), UsageError);
  EXPECT_THROW(spline::decode(st, {20, 19, 33}, {4, 2, static_cast<spline::CodeForm>(3)}, out), UsageError);
  EXPECT_THROW(spline::decode(st, {}, f4, out), UsageError);
  EXPECT_THROW(spline::decode(st, {1, 2, 3, 4}, f4, out), UsageError);
  // Huge dims against a small stream: refused before any allocation.
  EXPECT_THROW(spline::decode(st, {size_t{1} << 40}, f4, out), FormatError);
  EXPECT_THROW(spline::decode(st, {1 << 20, 1 << 20, 1 << 10}, f4, out), FormatError);
  // The explicit-span decode over the same streams.
  const ByteSpan codes[spline::kCodeGroups] = {st.codes[0], st.codes[1], st.codes[2]};
  spline::decode(codes, st.side, {20, 19, 33}, f4, out);
  EXPECT_EQ(out, base.decoded);
  EXPECT_THROW(spline::decode(codes, st.side, {20, 33, 19}, f4, out), FormatError);
}

TEST(SplineHostile, RadiusAboveOneByteCodes) {
  Sample s = make_sample({1000}, 4, 1);
  EXPECT_TRUE(decodes(s));
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

// Codes set through the slow places (spline_inputs.hpp), in both forms: code
// 0 at a predicted point of each group, 2R, 0xFFFF, 2R - 1 (valid); a nonzero
// code at an anchor and at an outlier.
TEST(SplineHostile, Codes) {
  for (const Dims& dims : kShapes)
    for (spline::CodeForm form : kForms) {
      SCOPED_TRACE(form_name(form));
      const Sample base = make_sample(dims, 4, 2, form);
      ASSERT_EQ(base.radius, 512u);
      // The first predicted point (not an anchor, not an outlier) of each group.
      std::vector<size_t> predicted;
      for (unsigned k = 0; k < spline::kCodeGroups; ++k) {
        size_t g = 0;
        while (g < base.elements() && (base.places.group[g] != k || base.is_anchor(g) || base.code(g) == 0)) ++g;
        ASSERT_LT(g, base.elements()) << "no predicted point in group " << k;
        predicted.push_back(g);
      }
      for (size_t g : predicted) {
        SCOPED_TRACE("element " + std::to_string(g) + " of group " + std::to_string(base.places.group[g]));
        Sample s = base;
        s.set_code(g, 0);
        expect_format_error(s, "code 0 at a predicted point");
        s.set_code(g, 1024);
        expect_format_error(s, "code 2R");
        s.set_code(g, 0xFFFF);
        expect_format_error(s, "code 0xFFFF");
        s.set_code(g, 1023);
        EXPECT_EQ(s.code(g), 1023u);
        EXPECT_TRUE(decodes(s));  // 2R - 1 is a valid code
        s.set_code(g, 1);
        EXPECT_TRUE(decodes(s));  // and so is 1
      }
      {
        Sample s = base;
        EXPECT_EQ(s.code(0), 0u);
        s.set_code(0, 512);
        expect_format_error(s, "nonzero code at an anchor");
      }
      {
        Sample s = base;
        EXPECT_EQ(s.code(s.index(0)), 0u);
        s.set_code(s.index(0), 512);
        expect_format_error(s, "nonzero code at an outlier");
      }
      {
        // An anchor in the middle of the chunk (group 2, past the first code).
        size_t anchor = base.elements() - 1;
        while (!base.is_anchor(anchor)) --anchor;
        ASSERT_GT(anchor, 0u);
        Sample s = base;
        s.set_code(anchor, 1);
        expect_format_error(s, "nonzero code at the last anchor");
      }
    }
}

// The signed form: stored words whose code (word + R modulo 2^(8 code_bytes))
// is >= 2R, or 0 at a predicted point, are refused; the others accepted.
TEST(SplineHostile, SignedFormStoredWords) {
  struct Case {
    unsigned code_bytes;
    uint32_t radius;
    std::vector<uint32_t> bad;   // at a predicted point
    std::vector<uint32_t> good;  // at a predicted point
    uint32_t anchor_word;        // -R: the only word an anchor or outlier may hold
  };
  const std::vector<Case> cases = {
      {2, 512, {512, 0x7FFF, 0x8000, 65023, 65024, 1000}, {0, 1, 511, 65025, 65535}, 65024},
      {2, 32768, {0x8000}, {0, 1, 0x7FFF, 0x8001, 0xFFFF}, 0x8000},
      {1, 64, {64, 127, 128, 191, 192}, {0, 1, 63, 193, 255}, 192},
      {1, 128, {0x80}, {0, 0x7F, 0x81, 0xFF}, 0x80},
  };
  for (const Dims& dims : kShapes)
    for (const Case& c : cases) {
      SCOPED_TRACE("code bytes " + std::to_string(c.code_bytes) + ", radius " + std::to_string(c.radius));
      const Sample base = make_sample(dims, 4, c.code_bytes, spline::CodeForm::kSigned, c.radius);
      EXPECT_TRUE(decodes(base));
      EXPECT_EQ(base.stored(0), c.anchor_word);
      size_t g = 1;
      while (base.is_anchor(g) || base.code(g) == 0) ++g;
      for (uint32_t word : c.bad) {
        Sample s = base;
        s.set_stored_word(g, word);
        expect_format_error(s, "stored word " + std::to_string(word) + " at a predicted point");
      }
      for (uint32_t word : c.good) {
        Sample s = base;
        s.set_stored_word(g, word);
        EXPECT_TRUE(decodes(s)) << "stored word " << word << " at a predicted point";
      }
      for (uint32_t word : {0u, c.anchor_word + 1, c.anchor_word - 1}) {
        Sample s = base;
        s.set_stored_word(0, word);
        expect_format_error(s, "stored word " + std::to_string(word) + " at an anchor");
        s = base;
        s.set_stored_word(s.index(0), word);
        expect_format_error(s, "stored word " + std::to_string(word) + " at an outlier");
      }
    }
}

// Streams decoded in the other code form: the anchors' words (0 in the
// offset form, -R in the signed one) are then nonzero codes.
TEST(SplineHostile, WrongCodeForm) {
  for (const Dims& dims : kShapes)
    for (unsigned code_bytes : {1u, 2u}) {
      const Sample offset = make_sample(dims, 4, code_bytes, spline::CodeForm::kOffset);
      const Sample signed_sample = make_sample(dims, 4, code_bytes, spline::CodeForm::kSigned);
      EXPECT_TRUE(decodes(offset));
      EXPECT_TRUE(decodes(signed_sample));
      EXPECT_FALSE(decodes(offset, offset.streams, signed_sample.format));
      EXPECT_FALSE(decodes(signed_sample, signed_sample.streams, offset.format));
    }
}

TEST(SplineHostile, EmptyChunk) {
  for (spline::CodeForm form : kForms) {
    const Sample s = make_sample({0}, 4, 2, form);
    EXPECT_TRUE(decodes(s));
    for (unsigned k = 0; k < spline::kCodeGroups; ++k) EXPECT_TRUE(s.streams.codes[k].empty());
    Bytes out;
    EXPECT_THROW(spline::decode(s.streams, {1}, s.format, out), FormatError);
    EXPECT_THROW(spline::decode(spline::Streams{}, {0}, s.format, out), FormatError);
    spline::Streams t = s.streams;
    t.codes[2].assign(2, 0);
    EXPECT_THROW(spline::decode(t, {0}, s.format, out), FormatError);
  }
}

}  // namespace
}  // namespace fz
