// Presets 5 and 6 (cuszhi-tp, cuszhi-cr; work in progress, issue 14), built
// through their family's functions while the preset table still lists them
// as unavailable: every element of every real field within the NOA bound, in
// both widths, and the ratios beside preset 4 (cusz: Lorenzo + Huffman) as a
// table on stdout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"
#include "pipeline.hpp"
#include "presets/lossy_common.hpp"
#include "presets/presets.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
Pipeline build_cuszhi_tp(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);
Pipeline build_cuszhi_cr(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);
Pipeline build_cusz(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts&);
}  // namespace fz::engine

namespace fz {
namespace {

using engine::Pipeline;

struct Field {
  const char* file;
  std::vector<uint64_t> dims;
  unsigned width;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {{"wmag91.float", {91, 91, 91}, 4},
                                       {"999x999.float", {999, 999}, 4},
                                       {"vorticity.128_128_41", {41, 128, 128}, 4},
                                       {"vorticity.512_512", {512, 512}, 4},
                                       {"pressure.384_384.f64", {384, 384}, 8}};
  return f;
}

template <typename T>
size_t violations(const Bytes& a, const Bytes& b, double eb) {
  size_t bad = 0;
  for (size_t i = 0; i < a.size() / sizeof(T); ++i) {
    T x, y;
    std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
    bad += !(std::fabs(double(x) - double(y)) <= eb);
  }
  return bad;
}

using Builder = Pipeline (*)(const DataType&, const std::vector<uint64_t>&, const Options&, const engine::ChunkFacts&);

// The ratio of the streams `build` stores, after checking every element.
double checked_ratio(Builder build, const Field& f, const Bytes& data, double noa) {
  const DataType dtype = f.width == 4 ? DataType::of<float>() : DataType::of<double>();
  Options o;
  o.preset = Preset::Cusz;  // any lossy preset: the chunk's facts are the same for all of them
  o.mode = ErrorMode::Noa;
  o.bound = noa;
  auto exec = engine::make_pool_executor(0);
  const ByteSpan chunk(data.data(), data.size());
  const engine::ChunkFacts facts =
      engine::facts_from_range(o, engine::chunk_values(dtype, o, chunk, *exec));
  EXPECT_TRUE(facts.enforced.has_value()) << f.file;
  const Pipeline p = build(dtype, f.dims, o, facts);
  engine::StageContext ctx{*exec, 2 * data.size() + 65536};
  const std::vector<Bytes> stored = p.forward(chunk, ctx);
  size_t bytes = 0;
  for (const Bytes& s : stored) bytes += s.size();
  const Bytes back = p.inverse(std::vector<ByteSpan>(stored.begin(), stored.end()), ctx);
  EXPECT_EQ(back.size(), data.size()) << f.file;
  const double eb = *facts.enforced;
  const size_t bad = f.width == 4 ? violations<float>(data, back, eb) : violations<double>(data, back, eb);
  EXPECT_EQ(bad, 0u) << f.file << " NOA " << noa;
  return double(data.size()) / double(bytes);
}

TEST(SplinePresets, EveryElementWithinTheBoundAndTheRatiosBesideCusz) {
  std::printf("| field | NOA | cusz | cuszhi-tp | cuszhi-cr |\n|---|---:|---:|---:|---:|\n");
  for (const Field& f : fields()) {
    const Bytes data = testing::read_field(f.file);
    for (double noa : {1e-2, 1e-3, 1e-4}) {
      const double cusz = checked_ratio(engine::build_cusz, f, data, noa);
      const double tp = checked_ratio(engine::build_cuszhi_tp, f, data, noa);
      const double cr = checked_ratio(engine::build_cuszhi_cr, f, data, noa);
      std::printf("| %s | %g | %.2f | %.2f | %.2f |\n", f.file, noa, cusz, tp, cr);
      // A broken predictor or back end falls far below Lorenzo; at 1e-2 the
      // spline measured 0.96-1.70x cusz's ratio over these fields (issue 14's
      // work is to raise it at every bound).
      if (noa == 1e-2) {
        EXPECT_GT(cr, 0.9 * cusz) << f.file << ": cuszhi-cr far below cusz at NOA 1e-2";
      }
    }
  }
}

}  // namespace
}  // namespace fz
