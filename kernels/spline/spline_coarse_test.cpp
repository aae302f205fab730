// SPLINE with coarse levels (spline.hpp, "Coarse levels"; issue 30 items 1
// and 3): the anchors predicted and coded from the root instead of stored
// raw. Checks the bound element by element on every real field of
// ../shared/data (float32 and float64, ABS and NOA, 1e-2 .. 1e-4, whole and
// reshaped into ragged and tiny shapes of 1-3 axes), the streams found the
// slow way (the root code 0 and unlisted, every other code 0 exactly at the
// listed outliers, fill points at q = 0), special values, thread-count
// independence, the side stream's layout, and the gain: cuszhi-cr's coders
// (ANS per group, and the Huffman > RZE1 chain before it; the side raw)
// over the streams with coarse levels and config v2 against without,
// smaller on every real field at NOA 1e-2, with a table of the bytes per
// field and bound, whole and in ~100k element chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"
#include "ans/ans.hpp"
#include "huffman/huffman.hpp"
#include "rze/rze.hpp"
#include "spline/spline.hpp"
#include "spline/spline_rules.hpp"
#include "spline/testing/spline_inputs.hpp"

namespace fz {
namespace {

using namespace spline::test_inputs;

spline::Config coarse_config(unsigned width, bool coarse, uint32_t radius = 4096, double alpha = 1.5,
                             double beta = 4) {
  spline::Config c;
  c.width = width;
  c.code_bytes = 2;
  c.radius = radius;
  c.alpha = alpha;
  c.beta = beta;
  c.coarse_levels = coarse;
  c.compact_config = coarse;
  return c;
}

spline::rules::Grid grid_for(const Dims& dims) {
  spline::rules::Grid grid;
  EXPECT_EQ(spline::rules::grid_of(dims, grid), spline::rules::GridCheck::kOk);
  return grid;
}

// The side stream's layout with coarse levels (spline.hpp).
spline::rules::SideLayout coarse_layout(const spline::rules::Grid& grid, unsigned width) {
  return spline::rules::side_layout(grid.rank, width, spline::rules::stored_anchor_count(grid, true),
                                    spline::rules::coarse_level_count(grid));
}

std::vector<size_t> coarse_outliers(const Bytes& side, const Dims& dims, unsigned width) {
  try {
    return listed_outliers(side, dims, width, true);
  } catch (const std::runtime_error& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Encodes with coarse levels and decodes; checks every element (within eb
// in binary128, or bit-exact at the root, outliers and values that cannot
// be coded; a fill point other than the root has code R and is not checked)
// and the codes found the slow way (CodePlaces). Returns the streams.
template <typename T>
spline::Streams coarse_round_trip(const std::vector<T>& values, const Dims& dims, const spline::Config& config,
                                  double eb, const std::vector<bool>* fill = nullptr,
                                  const Executor& exec = serial_executor()) {
  spline::Streams streams;
  const Bytes in = to_bytes(values);
  const Bytes mask = fill != nullptr ? fill_mask_of(*fill) : Bytes();
  spline::encode(in, mask, dims, config, eb, streams, exec);
  const spline::CodeFormat format = spline::format_of(config);
  const CodePlaces places = code_places(dims);
  for (unsigned k = 0; k < spline::kCodeGroups; ++k)
    EXPECT_EQ(streams.codes[k].size(), places.size[k] * config.code_bytes) << "code group " << k;
  Bytes out;
  spline::decode(streams, dims, format, out, exec);
  EXPECT_EQ(out.size(), in.size());
  if (out.size() != in.size()) return streams;
  const std::vector<size_t> outliers = coarse_outliers(streams.side, dims, config.width);
  size_t next = 0, failures = 0;
  for (size_t g = 0; g < values.size() && failures < 5; ++g) {
    const T x = values[g];
    const T y = load_le<T>(out.data() + g * sizeof(T));
    const uint32_t code = code_at(streams, places, format, config.radius, g);
    const bool listed = next < outliers.size() && outliers[next] == g;
    next += listed;
    const bool root = g == 0;
    bool ok = code < 2 * config.radius && (root ? code == 0 && !listed : listed == (code == 0));
    if (fill != nullptr && (*fill)[g] && !root && !listed) {
      ok = ok && code == config.radius;
    } else if (root || code == 0 || !spline::rules::is_codable(x)) {
      ok = ok && same_bits(x, y);
    } else {
      __float128 d = static_cast<__float128>(x) - static_cast<__float128>(y);
      if (d < 0) d = -d;
      ok = ok && std::isfinite(y) && d <= static_cast<__float128>(eb);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << g << ": " << x << " -> " << y << " (eb " << eb << ", code " << code
                    << (listed ? ", listed" : "") << ")";
    }
  }
  EXPECT_EQ(next, outliers.size()) << "outliers listed out of order or past the end";
  return streams;
}

template <typename T>
double value_range(const std::vector<T>& v) {
  double lo = INFINITY, hi = -INFINITY;
  for (T x : v)
    if (std::isfinite(x)) {
      lo = std::fmin(lo, static_cast<double>(x));
      hi = std::fmax(hi, static_cast<double>(x));
    }
  return hi > lo ? hi - lo : 0;
}

// The shapes a real field is also cut into: its first elements as ragged
// shapes of 1-3 axes and shapes smaller than one tile.
const std::vector<Dims>& cut_shapes() {
  static const std::vector<Dims> shapes = {{100003}, {317, 291}, {37, 23, 51}, {14, 64, 128}, {200},
                                           {13, 9},  {5, 7, 3},  {1, 1, 17},  {33, 1, 65}};
  return shapes;
}

template <typename T>
void check_field_bounds(const testing::RealField& field) {
  const std::vector<T> values = testing::field_values<T>(field);
  const double range = value_range(values);
  for (const bool noa : {false, true})
    for (const double rel : {1e-2, 1e-3, 1e-4}) {
      const double eb = noa && range > 0 ? rel * range : rel;
      SCOPED_TRACE(field.name + (noa ? " NOA " : " ABS ") + std::to_string(rel));
      coarse_round_trip(values, field.dims, coarse_config(sizeof(T), true), eb);
      if (rel == 1e-3) {  // fill elements: where the field is above its median-ish, and every 11th
        std::vector<bool> fill(values.size());
        std::vector<T> filled = values;
        for (size_t g = 0; g < values.size(); ++g)
          if (g % 11 == 4 || std::sin(g * 0.0007) > 0.6) {
            fill[g] = true;
            filled[g] = T(-9.96921e36);  // a netCDF-like fill value
          }
        coarse_round_trip(filled, field.dims, coarse_config(sizeof(T), true), eb, &fill);
      }
      for (const Dims& dims : cut_shapes()) {
        const size_t n = element_count(dims);
        if (n > values.size()) continue;
        SCOPED_TRACE("cut " + std::to_string(dims.size()) + "-D, " + std::to_string(n) + " elements");
        coarse_round_trip(std::vector<T>(values.begin(), values.begin() + n), dims, coarse_config(sizeof(T), true),
                          eb);
      }
    }
}

TEST(SplineCoarse, BoundOnRealFieldsFloat32) {
  for (const auto& field : testing::real_fields()) check_field_bounds<float>(field);
}

TEST(SplineCoarse, BoundOnRealFieldsFloat64) {
  for (const auto& field : testing::real_fields()) check_field_bounds<double>(field);
}

// The anchors are coded: with coarse levels the side stream holds the root
// alone, the coarse levels' flags are 0 and their steps follow the rule, and
// on a smooth field most anchors have a nonzero code.
TEST(SplineCoarse, SideLayoutAndAnchorCodes) {
  const Dims dims{70, 50, 90};
  std::vector<float> values;  // smooth on the anchor grid too
  for (size_t z = 0; z < dims[0]; ++z)
    for (size_t y = 0; y < dims[1]; ++y)
      for (size_t x = 0; x < dims[2]; ++x)
        values.push_back(static_cast<float>(std::sin(z / 30.0) + std::cos(y / 25.0) + x / 100.0));
  const spline::Config config = coarse_config(4, true, 32768, 1.5, 4);
  const spline::Streams s = coarse_round_trip(values, dims, config, 1e-3);
  const spline::rules::Grid grid = grid_for(dims);
  ASSERT_EQ(spline::rules::coarse_level_count(grid), 3u);  // anchor grid 5 x 4 x 6
  const unsigned levels = spline::rules::side_level_count(grid, true);
  ASSERT_EQ(s.side[1], levels);
  float steps[spline::rules::kMaxSideLevels];
  spline::rules::level_steps<float>(1e-3, 1.5, 4, levels, steps);
  const auto layout = coarse_layout(grid, 4);
  for (unsigned k = 0; k < levels; ++k) {
    const uint8_t* at = s.side.data() + layout.levels_at + k * layout.level_bytes;
    const unsigned level = levels - 1 - k;
    if (level >= spline::rules::level_count(3)) {
      EXPECT_EQ(at[0], 0) << "coarse level " << level;
    }
    EXPECT_EQ(load_le<float>(at + 1), steps[level]) << "level " << level;
  }
  EXPECT_TRUE(same_bits(load_le<float>(s.side.data() + layout.anchors_at), values[0]));
  const CodePlaces places = code_places(dims);
  size_t coded = 0;
  for (size_t z = 0; z < dims[0]; z += 16)
    for (size_t y = 0; y < dims[1]; y += 16)
      for (size_t x = 0; x < dims[2]; x += 16)
        coded += code_at(s, places, spline::format_of(config), config.radius, (z * dims[1] + y) * dims[2] + x) != 0;
  EXPECT_EQ(coded, grid.tile_count - 1);  // all but the root
}

// Ragged, empty and tiny shapes (one anchor: the root alone), both widths,
// 1- and 2-byte codes, every code form.
TEST(SplineCoarse, RaggedShapesRoundTrip) {
  for (const Dims& dims : ragged_shapes()) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    for (const auto form : {spline::CodeForm::kOffset, spline::CodeForm::kSigned, spline::CodeForm::kZigzag}) {
      spline::Config c = coarse_config(4, true, 100);
      c.code_bytes = form == spline::CodeForm::kSigned ? 1 : 2;
      c.code_form = form;
      coarse_round_trip(smooth_field<float>(element_count(dims), 5), dims, c, 1e-3);
      c.width = 8;
      c.tuning = spline::Tuning::kOff;
      coarse_round_trip(smooth_field<double>(element_count(dims), 6), dims, c, 1e-4);
    }
  }
}

// NaN, Inf, -0 and denormals (element 0, the root, among them) come back
// bit-exact; at anchors they are coarse outliers. Radius 1: every point an
// outlier but those predicted within half a step.
TEST(SplineCoarse, SpecialValuesAndRadiusOverflow) {
  for (const auto& f : fields_with_specials<float>()) coarse_round_trip(f.values, f.dims, coarse_config(4, true), 1e-3);
  for (const auto& f : fields_with_specials<double>())
    coarse_round_trip(f.values, f.dims, coarse_config(8, true), 1e-6);
  // Specials at every anchor of a 3-D field.
  const Dims dims{49, 33, 65};
  std::vector<float> values = smooth_field<float>(element_count(dims), 9);
  const std::vector<float> specials = special_values<float>();
  size_t k = 0;
  for (size_t z = 0; z < dims[0]; z += 16)
    for (size_t y = 0; y < dims[1]; y += 16)
      for (size_t x = 0; x < dims[2]; x += 16) values[(z * dims[1] + y) * dims[2] + x] = specials[k++ % specials.size()];
  coarse_round_trip(values, dims, coarse_config(4, true), 1e-3);
  coarse_round_trip(values, dims, coarse_config(4, true, 1), 1e-3);
  coarse_round_trip(smooth_field<float>(100000, 4), {100000}, coarse_config(4, true, 1), 1e-5);
}

// Fill points: the rule applies to the coarse points as to the tile points
// (q = 0, x' = the prediction); the root stays stored.
TEST(SplineCoarse, FillMask) {
  for (const Dims& dims : std::vector<Dims>{{60, 40, 70}, {300, 200}, {70000}, {5, 6, 7}}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    const size_t n = element_count(dims);
    std::vector<float> values = smooth_field<float>(n, 1);
    std::vector<bool> fill(n, false);
    std::mt19937_64 rng(3);
    for (size_t g = 0; g < n; ++g)
      if (g < n / 3 || rng() % 7 == 0) {
        fill[g] = true;
        values[g] = -1e10f;  // land
      }
    coarse_round_trip(values, dims, coarse_config(4, true), 1e-3, &fill);
  }
}

TEST(SplineCoarse, SameBytesForAnyThreadCount) {
  const Dims dims{90, 70, 110};
  const std::vector<float> values = smooth_field<float>(element_count(dims), 2);
  const testing::ThreadExecutor threads(4);
  const spline::Streams a = coarse_round_trip(values, dims, coarse_config(4, true), 1e-3);
  const spline::Streams b = coarse_round_trip(values, dims, coarse_config(4, true), 1e-3, nullptr, threads);
  for (unsigned g = 0; g < spline::kCodeGroups; ++g) EXPECT_EQ(a.codes[g], b.codes[g]);
  EXPECT_EQ(a.side, b.side);
}

// A decoder told the wrong mode refuses the streams (the level count differs
// whenever there are coarse levels), either way.
TEST(SplineCoarse, ModeMismatchIsRefused) {
  const Dims dims{40, 40, 40};
  const std::vector<float> values = smooth_field<float>(element_count(dims), 2);
  for (const bool coarse : {false, true}) {
    spline::Streams s;
    spline::encode(to_bytes(values), dims, coarse_config(4, coarse), 1e-3, s);
    spline::CodeFormat other = spline::format_of(coarse_config(4, coarse));
    other.coarse_levels = !coarse;
    Bytes out;
    EXPECT_THROW(spline::decode(s, dims, other, out), FormatError);
  }
}

// ---- The gain (issue 30 item 3) --------------------------------------------

// cuszhi-cr's bytes for one chunk (engine/src/presets/cuszhi.cpp): the spline
// (radius 4096, offset codes), each code group through its coder, the side
// stream raw, plus the spline's config (v1: 33 + 8 rank bytes; v2: 6 + the
// dims' LEB128 bytes). The coder: ANS (alphabet 8192, M 14, lanes of 8192:
// the preset's since 8a8e636), or the Huffman (alphabet 8192, limit 16,
// blocks 16384 / 4096) > RZE1 chain of the frames before it. The frame's
// header and the other stages' configs are the same either way and left out.
size_t leb128_bytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

enum class Coder { kAns, kHuffmanRze };

template <typename T>
size_t cr_bytes(const std::vector<T>& values, const Dims& dims, double eb, double alpha, double beta, bool coarse,
                Coder coder) {
  spline::Config c = coarse_config(sizeof(T), coarse, 4096, alpha, beta);
  spline::Streams s;
  spline::encode(to_bytes(values), dims, c, eb, s);
  size_t bytes = s.side.size();
  for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
    Bytes coded, rze;
    if (coder == Coder::kAns) {
      ans::encode(s.codes[g], {2 * c.radius, 14, 8192}, coded);
      bytes += coded.size();
    } else {
      huffman::encode(s.codes[g], {2 * c.radius, 16, g == 0 ? 16384u : 4096u}, coded);
      rze::encode(coded, 1, rze);
      bytes += rze.size();
    }
  }
  if (coarse) {
    bytes += 6;
    for (size_t d : dims) bytes += leb128_bytes(d);
  } else {
    bytes += 33 + 8 * dims.size();
  }
  return bytes;
}

// ratio-first's level bounds (cuszhi.cpp): alpha 1.25, beta 2 at rel >= 1e-2,
// 1 and 1 at 1e-3 and below.
void levels_for(double rel, double& alpha, double& beta) {
  alpha = rel >= 1e-2 ? 1.25 : 1;
  beta = rel >= 1e-2 ? 2 : 1;
}

// The field cut along its slowest axis into chunks of about 100k elements.
std::vector<Dims> chunk_dims(const Dims& dims) {
  size_t plane = 1;
  for (size_t k = 1; k < dims.size(); ++k) plane *= dims[k];
  const size_t rows = std::max<size_t>(1, 100000 / plane);
  std::vector<Dims> out;
  for (size_t z = 0; z < dims[0]; z += rows) {
    Dims d = dims;
    d[0] = std::min(rows, dims[0] - z);
    out.push_back(d);
  }
  return out;
}

// One field's row of the table at each bound, in its own element type.
template <typename T>
void gain_rows(const testing::RealField& field, Coder coder) {
  const std::vector<T> values = testing::field_values<T>(field);
  const double range = value_range(values);
  for (const double rel : {1e-2, 1e-3, 1e-4}) {
    const double eb = range > 0 ? rel * range : rel;
    double alpha, beta;
    levels_for(rel, alpha, beta);
    const size_t whole_v1 = cr_bytes(values, field.dims, eb, alpha, beta, false, coder);
    const size_t whole_v2 = cr_bytes(values, field.dims, eb, alpha, beta, true, coder);
    size_t chunks_v1 = 0, chunks_v2 = 0, offset = 0;
    const std::vector<Dims> chunks = chunk_dims(field.dims);
    for (const Dims& d : chunks) {
      const size_t n = element_count(d);
      const std::vector<T> part(values.begin() + offset, values.begin() + offset + n);
      offset += n;
      chunks_v1 += cr_bytes(part, d, eb, alpha, beta, false, coder);
      chunks_v2 += cr_bytes(part, d, eb, alpha, beta, true, coder);
    }
    std::printf("%-22s %6.0e %12zu %12zu %6.2f%% | %12zu %12zu %6.2f%% %zu\n", field.name.c_str(), rel, whole_v1,
                whole_v2, 100.0 * (1 - double(whole_v2) / whole_v1), chunks_v1, chunks_v2,
                100.0 * (1 - double(chunks_v2) / chunks_v1), chunks.size());
    if (rel == 1e-2) {
      EXPECT_LT(whole_v2, whole_v1) << field.name;
      EXPECT_LT(chunks_v2, chunks_v1) << field.name;
    }
  }
}

TEST(SplineCoarse, SmallerFramesOnRealFields) {
  for (const Coder coder : {Coder::kAns, Coder::kHuffmanRze}) {
    std::printf("cuszhi-cr bytes without / with coarse levels + config v2 (NOA; spline streams + %s + config)\n",
                coder == Coder::kAns ? "ANS" : "Huffman > RZE1");
    std::printf("%-22s %6s %12s %12s %7s | %12s %12s %7s %s\n", "field", "bound", "whole v1", "whole v2", "gain",
                "100k v1", "100k v2", "gain", "(chunks)");
    for (const auto& field : testing::real_fields()) {
      if (field.f64) gain_rows<double>(field, coder);
      else gain_rows<float>(field, coder);
    }
  }
}

}  // namespace
}  // namespace fz
