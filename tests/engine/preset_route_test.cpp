// Which builder a chunk's pipeline comes from (presets/build.cpp,
// pipeline_from_row): a lossless preset's row builder for every data type; a
// lossy preset's for the floats it quantizes, the lossless chain for the rest.
// docs/ADDING_A_STAGE.md promises a new preset is "one row plus its builder":
// before issue 29 every lossless preset got lossless_pipeline() and its row's
// builder was never called, so a new lossless preset would silently have been
// the old chain.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fz/fz.hpp"
#include "presets/lossy_common.hpp"
#include "presets/preset_table.hpp"
#include "presets/presets.hpp"
#include "rze/rze_stage.hpp"

namespace fz::engine {
namespace {

int g_calls = 0;
ChunkFacts g_facts;

// A builder no real preset has: one RZE stage over bytes, and a record of the call.
Pipeline only_rze(const DataType&, const std::vector<uint64_t>&, const Options&, const ChunkFacts& facts) {
  ++g_calls;
  g_facts = facts;
  Pipeline p;
  p.add(make_rze(1), {Pipeline::kChunk});
  return p;
}

std::vector<std::string> stage_names(const Pipeline& p) {
  std::vector<std::string> names;
  for (const StageNode& node : p.nodes()) names.push_back(node.stage->name());
  return names;
}

PresetRow row_with(bool lossy, PipelineBuilder build) {
  PresetRow row{};
  row.info.id = Preset::Lossless;
  row.info.name = "test-route";
  row.info.lossy = lossy;
  row.info.available = build != nullptr;
  row.build = build;
  return row;
}

const std::vector<DataType> kTypes = {DataType::of<float>(), DataType::of<double>(), DataType::of<int32_t>(),
                                      DataType::of<uint8_t>(), DataType{ElementClass::Opaque, 6}};

TEST(PresetRoute, ALosslessRowsBuilderBuildsEveryType) {
  const PresetRow row = row_with(false, only_rze);
  Options options;
  options.preset = Preset::Lossless;
  for (const DataType& dtype : kTypes) {
    g_calls = 0;
    const Pipeline p = pipeline_from_row(&row, dtype, {100}, options, FiniteRange{});
    EXPECT_EQ(g_calls, 1) << "element size " << dtype.size;
    EXPECT_EQ(stage_names(p), std::vector<std::string>{"rze1"}) << "element size " << dtype.size;
  }
}

TEST(PresetRoute, ALossyRowsBuilderBuildsFloatsWithFactsAndTheRestIsLossless) {
  const PresetRow row = row_with(true, only_rze);
  Options options;
  options.preset = Preset::Pfpl;
  options.mode = ErrorMode::Abs;
  options.bound = 0.25;
  const DataType lossless_types[] = {DataType::of<int32_t>(), DataType::of<uint8_t>(), DataType{ElementClass::Opaque, 6}};
  for (const DataType& dtype : lossless_types) {
    g_calls = 0;
    const Pipeline p = pipeline_from_row(&row, dtype, {100}, options, FiniteRange{});
    EXPECT_EQ(g_calls, 0) << "element size " << dtype.size;
    EXPECT_EQ(stage_names(p), stage_names(lossless_pipeline(dtype))) << "element size " << dtype.size;
  }
  g_calls = 0;
  const Pipeline p = pipeline_from_row(&row, DataType::of<float>(), {100}, options, FiniteRange{});
  EXPECT_EQ(g_calls, 1);
  EXPECT_EQ(stage_names(p), std::vector<std::string>{"rze1"});
  ASSERT_TRUE(g_facts.enforced.has_value());
  EXPECT_DOUBLE_EQ(*g_facts.enforced, 0.25);
}

TEST(PresetRoute, ARowWithoutABuilderIsRefusedWithItsName) {
  const PresetRow row = row_with(false, nullptr);
  Options options;
  options.preset = Preset::CuszHiCr;
  try {
    pipeline_from_row(&row, DataType::of<float>(), {100}, options, FiniteRange{});
    FAIL() << "a row without a builder built a pipeline";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cuszhi-cr' is not available"), std::string::npos) << e.what();
  }
}

// The real table goes the same way: every preset's pipeline for a chunk is
// what pipeline_from_row gives for its row.
TEST(PresetRoute, TheTablesPresetsGoThroughTheirRows) {
  for (const PresetInfo& info : preset_table()) {
    if (!info.available) continue;
    Options options;
    options.preset = info.id;
    options.mode = ErrorMode::Abs;
    options.bound = info.lossy ? 0.5 : 0.0;
    for (const DataType& dtype : kTypes) {
      const Pipeline direct = pipeline_from_row(preset_row(info.id), dtype, {64}, options, FiniteRange{});
      const Pipeline built = build_pipeline_from_range(dtype, {64}, options, FiniteRange{});
      EXPECT_EQ(stage_names(built), stage_names(direct)) << info.name << ", element size " << dtype.size;
    }
  }
}

}  // namespace
}  // namespace fz::engine
