// The pipeline caches (pipeline_cache.hpp): the same object for the same
// description, the right pipeline for every other one, a bounded size, and
// correct answers under concurrent callers.
#include "pipeline_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "presets/presets.hpp"
#include "spline/spline_stage.hpp"

namespace fz::engine {
namespace {

// What a frame records of a pipeline: equal records mean equal pipelines.
std::string record_of(const Pipeline& p) {
  std::string out;
  for (const StageInfo& s : p.stage_infos()) {
    out += std::to_string(s.type_id) + "(" + std::to_string(s.config.size()) + ":";
    out.append(s.config.begin(), s.config.end());
    out += ")<";
    for (uint8_t id : s.inputs) out += std::to_string(id) + ",";
    out += ">" + std::to_string(s.outputs) + ";";
  }
  return out;
}

struct ForwardInputs {
  std::string what;
  DataType dtype;
  std::vector<uint64_t> dims;
  Options options;
  FiniteRange values;
};

std::string built_record(const ForwardInputs& in) {
  return record_of(build_pipeline_from_range(in.dtype, in.dims, in.options, in.values));
}
std::shared_ptr<const Pipeline> cached(const ForwardInputs& in) {
  return cached_forward_pipeline(in.dtype, in.dims, in.options, in.values);
}

ForwardInputs base_inputs() {
  ForwardInputs in;
  in.what = "base";
  in.dtype = DataType::of<float>();
  in.dims = {8, 16, 32};
  in.options.preset = Preset::Fzgpu;
  in.options.mode = ErrorMode::Abs;
  in.options.bound = 1e-3;
  return in;
}

// Each changes one input of build_pipeline_from_range, and each changes the
// pipeline (checked below), so a key that left that input out would hand
// back the base's pipeline.
std::vector<ForwardInputs> variants() {
  std::vector<ForwardInputs> out;
  auto add = [&](const std::string& what, auto change) {
    ForwardInputs in = base_inputs();
    in.what = what;
    change(in);
    out.push_back(in);
  };
  add("preset pfpl", [](ForwardInputs& in) { in.options.preset = Preset::Pfpl; });
  add("preset cusz", [](ForwardInputs& in) { in.options.preset = Preset::Cusz; });
  add("preset lossless", [](ForwardInputs& in) { in.options.preset = Preset::Lossless; });
  add("mode noa", [](ForwardInputs& in) {
    in.options.mode = ErrorMode::Noa;
    in.values = {true, -3.0, 5.0, false};
  });
  add("pfpl mode rel", [](ForwardInputs& in) {
    in.options.preset = Preset::Pfpl;
    in.options.mode = ErrorMode::Rel;
  });
  add("bound", [](ForwardInputs& in) { in.options.bound = 2e-3; });
  add("element size", [](ForwardInputs& in) { in.dtype = DataType::of<double>(); });
  add("element class", [](ForwardInputs& in) { in.dtype.element_class = ElementClass::Signed; });
  add("byte order", [](ForwardInputs& in) { in.dtype.order = ByteOrder::Big; });
  add("dims", [](ForwardInputs& in) { in.dims = {16, 8, 32}; });
  add("rank", [](ForwardInputs& in) { in.dims = {8 * 16 * 32}; });
  add("fill value present in the chunk", [](ForwardInputs& in) {
    const float fill = -999.0f;
    in.options.fill_value.resize(sizeof fill);
    std::memcpy(in.options.fill_value.data(), &fill, sizeof fill);
    in.values.has_fill = true;
  });
  add("noa range", [](ForwardInputs& in) {
    in.options.mode = ErrorMode::Noa;
    in.values = {true, -3.0, 7.0, false};
  });
  add("noa without finite values", [](ForwardInputs& in) {
    in.options.mode = ErrorMode::Noa;
    in.values = {false, 0.0, 0.0, false};
  });
  return out;
}

// Presets 5 and 6 build their spline stage from the tuning fields: each
// change must reach the key, or one process (an h5py session, h5repack)
// would reuse the first dataset's tuning for the next.
// The spline's config v2 leaves the encoder's tuning, alpha and beta out of
// the frame, so here the record also holds what the spline stage encodes with.
std::string tuned_record(const Pipeline& p) {
  std::string out = record_of(p);
  for (const StageNode& node : p.nodes()) {
    const auto* spline = dynamic_cast<const stage::SplineStage*>(node.stage.get());
    if (!spline) continue;
    const spline::Config& c = spline->predictor_config();
    out += "tuning " + std::to_string(static_cast<int>(c.tuning)) + " alpha " + std::to_string(c.alpha) + " beta " +
           std::to_string(c.beta) + ";";
  }
  return out;
}

TEST(PipelineCache, TheSplineTuningIsInTheKey) {
  ForwardInputs base = base_inputs();
  base.options.preset = Preset::CuszHiCr;
  const auto built_record = [](const ForwardInputs& in) {
    return tuned_record(build_pipeline_from_range(in.dtype, in.dims, in.options, in.values));
  };
  const auto record_of = tuned_record;
  const std::string base_record = built_record(base);
  std::vector<std::pair<std::string, Options>> changes;
  auto add = [&](const std::string& what, auto change) {
    Options o = base.options;
    change(o);
    changes.emplace_back(what, o);
  };
  add("tuning off", [](Options& o) { o.spline_tuning = SplineTuning::kOff; });
  add("quality-first", [](Options& o) { o.spline_tuning = SplineTuning::kQualityFirst; });
  add("manual alpha", [](Options& o) {
    o.spline_tuning = SplineTuning::kManual;
    o.spline_alpha = 1.5;
  });
  add("manual beta", [](Options& o) {
    o.spline_tuning = SplineTuning::kManual;
    o.spline_beta = 3;
  });
  for (const auto& [what, options] : changes) {
    SCOPED_TRACE(what);
    ForwardInputs variant = base;
    variant.options = options;
    const std::string expected = built_record(variant);
    ASSERT_NE(expected, base_record) << "this change does not change the pipeline, so it tests nothing";
    EXPECT_EQ(record_of(*cached(base)), base_record);
    EXPECT_EQ(record_of(*cached(variant)), expected);
    EXPECT_EQ(record_of(*cached(base)), base_record);
  }
}

TEST(PipelineCache, SameDescriptionGivesTheSameObject) {
  const ForwardInputs in = base_inputs();
  const auto first = cached(in);
  EXPECT_EQ(cached(in).get(), first.get());
  EXPECT_EQ(record_of(*first), built_record(in));
  // The CPU thread count does not change a pipeline and is not in the key.
  ForwardInputs threads = in;
  threads.options.threads = 3;
  EXPECT_EQ(cached(threads).get(), first.get());

  const std::vector<StageInfo> stages = first->stage_infos();
  const auto from_frame = cached_pipeline_of_stages(stages);
  EXPECT_EQ(cached_pipeline_of_stages(stages).get(), from_frame.get());
  EXPECT_EQ(record_of(*from_frame), record_of(*first));
}

TEST(PipelineCache, EveryInputOfThePipelineIsInTheKey) {
  const ForwardInputs base = base_inputs();
  const std::string base_record = built_record(base);
  for (const ForwardInputs& variant : variants()) {
    SCOPED_TRACE(variant.what);
    const std::string expected = built_record(variant);
    ASSERT_NE(expected, base_record) << "this variant does not change the pipeline, so it tests nothing";
    // Asked right after the base, and the base right after it: a key missing
    // this input would return the other's pipeline.
    EXPECT_EQ(record_of(*cached(base)), base_record);
    EXPECT_EQ(record_of(*cached(variant)), expected);
    EXPECT_EQ(record_of(*cached(base)), base_record);
    // The same for the frame's records of both.
    const auto variant_stages = build_pipeline_from_range(variant.dtype, variant.dims, variant.options,
                                                          variant.values).stage_infos();
    const auto base_stages = build_pipeline_from_range(base.dtype, base.dims, base.options, base.values).stage_infos();
    EXPECT_EQ(record_of(*cached_pipeline_of_stages(base_stages)), base_record);
    EXPECT_EQ(record_of(*cached_pipeline_of_stages(variant_stages)), expected);
  }
}

TEST(PipelineCache, KeepsTheMostRecentlyUsed) {
  auto with_bound = [](int i) {
    ForwardInputs in = base_inputs();
    in.options.bound = 1e-3 * (i + 2);
    return in;
  };
  const auto kept = cached(with_bound(0));
  for (int i = 1; i < static_cast<int>(kCachedPipelines); ++i) cached(with_bound(i));
  // Asked again, the first goes to the front; one more new key then pushes
  // out the least recently used (bound 1), not the first.
  EXPECT_EQ(cached(with_bound(0)).get(), kept.get());
  cached(with_bound(static_cast<int>(kCachedPipelines)));
  EXPECT_EQ(cached(with_bound(0)).get(), kept.get());
  // kCachedPipelines more new keys push everything out: the first is built
  // anew (a new object, while `kept` still holds the old one alive).
  for (int i = 0; i < static_cast<int>(kCachedPipelines); ++i) cached(with_bound(100 + i));
  const auto rebuilt = cached(with_bound(0));
  EXPECT_NE(rebuilt.get(), kept.get());
  EXPECT_EQ(record_of(*rebuilt), record_of(*kept));
}

TEST(PipelineCache, StagesThatDoNotParseAreRefusedEveryTime) {
  std::vector<StageInfo> stages = build_pipeline_from_range(base_inputs().dtype, base_inputs().dims,
                                                            base_inputs().options, {}).stage_infos();
  ASSERT_FALSE(stages.empty());
  std::vector<StageInfo> unknown = stages;
  unknown[0].type_id = 0xFFFF;
  std::vector<StageInfo> wrong_outputs = stages;
  wrong_outputs[0].outputs += 1;
  std::vector<StageInfo> dangling = stages;
  dangling.back().inputs = {200};
  for (const auto& bad : {unknown, wrong_outputs, dangling})
    for (int attempt = 0; attempt < 2; ++attempt) EXPECT_THROW(cached_pipeline_of_stages(bad), FormatError);
  EXPECT_EQ(record_of(*cached_pipeline_of_stages(stages)), record_of(pipeline_of_stages(stages)));
}

TEST(PipelineCache, ConcurrentCallersGetTheirOwnPipelines) {
  // More keys than the cache holds, so that threads also evict each other's.
  std::vector<ForwardInputs> inputs = variants();
  inputs.push_back(base_inputs());
  for (int i = 0; i < 8; ++i) {
    ForwardInputs in = base_inputs();
    in.options.bound = 5e-4 * (i + 1);
    inputs.push_back(in);
  }
  ASSERT_GT(inputs.size(), kCachedPipelines);
  std::vector<std::string> expected;
  std::vector<std::vector<StageInfo>> stages;
  for (const auto& in : inputs) {
    expected.push_back(built_record(in));
    stages.push_back(build_pipeline_from_range(in.dtype, in.dims, in.options, in.values).stage_infos());
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < 300; ++k) {
        const size_t i = (k * 7 + t * 5) % inputs.size();
        if (record_of(*cached(inputs[i])) != expected[i]) ++wrong;
        if (record_of(*cached_pipeline_of_stages(stages[i])) != expected[i]) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace fz::engine
