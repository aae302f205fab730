// cuszhi-cr's third candidate (predictor_choice.hpp, fold_dims): the spline
// over a 3-D chunk folded into a stack of 2-D slices, chosen from the sample
// when it stores it in fewer bytes than the 3-D spline. A field whose slow
// axis is a dozen unrelated levels takes it (ncl hgt and nc4uvt T doubled
// their ratio at NOA 1e-2); a field smooth along every axis keeps 3-D; both
// come back within the bound, and the GPU path chooses with the same
// function (backend_identity_gpu_test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"
#include "presets/predictor_choice.hpp"
#include "presets/presets.hpp"
#include "value_range.hpp"

namespace fz::engine {
namespace {

// Twelve slices of one smooth 2-D wave, each with its own offset and
// amplitude: smooth within a slice, unrelated from slice to slice. 61,440
// elements: the chunk is its own sample (predictor_choice.hpp).
std::vector<float> levels_field(size_t nz, size_t ny, size_t nx) {
  std::vector<float> v(nz * ny * nx);
  for (size_t z = 0; z < nz; ++z) {
    const float offset = 100.0f * float((z * 7919) % 13), amplitude = 5.0f + float((z * 104729) % 17);
    for (size_t y = 0; y < ny; ++y)
      for (size_t x = 0; x < nx; ++x)
        v[(z * ny + y) * nx + x] =
            offset + amplitude * std::sin(0.09f * float(x) + 0.05f * float(z * z)) * std::cos(0.06f * float(y));
  }
  return v;
}

Options cr(double bound) {
  Options o;
  o.preset = Preset::CuszHiCr;
  o.mode = ErrorMode::Noa;
  o.bound = bound;
  return o;
}

// The rank of the frame's spline stage, from its config v2 (0x82, width,
// code bytes, form, rank, ...: docs/FORMAT.md); 0 without one.
unsigned spline_rank(const Bytes& frame) {
  for (const StageInfo& s : inspect(frame.data(), frame.size()).stages)
    if (s.name == "spline" && s.config.size() > 4 && s.config[0] == 0x82) return s.config[4];
  return 0;
}

TEST(FoldChoice, FoldDimsMergesTheSlowestTwoAxesOfA3dShapeOnly) {
  EXPECT_EQ(fold_dims({12, 64, 80}), (std::vector<size_t>{768, 80}));
  EXPECT_EQ(fold_dims({64, 96}), (std::vector<size_t>{64, 96}));
  EXPECT_EQ(fold_dims({4096}), (std::vector<size_t>{4096}));
}

TEST(FoldChoice, UnrelatedLevelsFoldAndSmoothFieldsStay3d) {
  const std::vector<uint64_t> dims = {12, 64, 80};
  const std::vector<float> levels = levels_field(12, 64, 80);
  const Bytes raw = testing::read_field("wmag91.float");
  const std::vector<uint64_t> wmag_dims = {91, 91, 91};
  for (double bound : {1e-2, 1e-3}) {
    const Options o = cr(bound);
    const ByteSpan chunk(reinterpret_cast<const uint8_t*>(levels.data()), levels.size() * 4);
    const FiniteRange facts = chunk_facts(DataType::of<float>(), dims, o, chunk, serial_executor());
    EXPECT_TRUE(facts.fold) << bound;
    EXPECT_FALSE(facts.lorenzo) << bound;
    const Bytes frame = compress(levels.data(), levels.size() * 4, DataType::of<float>(), dims, o);
    EXPECT_EQ(spline_rank(frame), 2u) << bound;
    const Decoded d = decompress(frame.data(), frame.size());
    ASSERT_EQ(d.data.size(), levels.size() * 4);
    const ChunkBound cb = chunk_bound(levels.data(), levels.size() * 4, DataType::of<float>(), o);
    size_t over = 0;
    for (size_t i = 0; i < levels.size(); ++i) {
      float back;
      std::memcpy(&back, &d.data[4 * i], 4);
      over += !(std::fabs(double(back) - double(levels[i])) <= cb.bound);
    }
    EXPECT_EQ(over, 0u) << bound;

    const FiniteRange smooth = chunk_facts(DataType::of<float>(), wmag_dims, o, ByteSpan(raw), serial_executor());
    EXPECT_FALSE(smooth.fold) << bound;
    const Bytes wmag_frame = compress(raw.data(), raw.size(), DataType::of<float>(), wmag_dims, o);
    EXPECT_EQ(spline_rank(wmag_frame), 3u) << bound;
  }
}

// The sample's costs say why: the folded spline codes the levels field in
// well under the 3-D spline's bytes; a 2-D chunk has no folded candidate.
TEST(FoldChoice, SampleCostsOfTheFoldedSpline) {
  const std::vector<uint64_t> dims = {12, 64, 80};
  const std::vector<float> levels = levels_field(12, 64, 80);
  const ByteSpan chunk(reinterpret_cast<const uint8_t*>(levels.data()), levels.size() * 4);
  const Options o = cr(1e-2);
  const FiniteRange values = chunk_values(DataType::of<float>(), o, chunk, serial_executor());
  const std::vector<size_t> shape = {12, 64, 80};
  const SampleCosts c = sample_costs(DataType::of<float>(), dims, o, values, [&](const SampleBox& box, uint8_t* dst) {
    read_host_box(chunk, shape, 4, box, dst);
  });
  ASSERT_GT(c.folded, 0u);
  EXPECT_LT(c.folded * 10, c.spline * 9) << c.folded << " vs " << c.spline;
  const std::vector<uint64_t> flat = {768, 80};
  const SampleCosts c2 =
      sample_costs(DataType::of<float>(), flat, o, values, [&](const SampleBox& box, uint8_t* dst) {
        read_host_box(chunk, {768, 80}, 4, box, dst);
      });
  EXPECT_EQ(c2.folded, 0u);
}

}  // namespace
}  // namespace fz::engine
