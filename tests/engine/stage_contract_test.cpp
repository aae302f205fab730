// The contract every stage of stage_list.inc keeps, checked for each listed
// stage with the samples it lists (stage_samples.hpp), so a new stage is
// tested by being listed (docs/ADDING_A_STAGE.md):
// - it has samples, and its type id and name are the list's;
// - forward, rebuilt from (type id, config) alone, inverse gives the inputs
//   back, for empty, tiny, ragged and real-field inputs; the config is at
//   most kMaxStageConfigBytes and config() -> parse_stage -> config() is the
//   identity;
// - hostile streams (truncated, bit-flipped, oversized length claims, extra
//   bytes, a tight stream limit) make the inverse throw FormatError or decode
//   something within the limit; never crash (CI runs this under ASan).
// The GPU twin is stage_contract_gpu_test.cpp.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/stage/stage_samples.hpp"
#include "stage_names.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

struct RawInput {
  std::string label;
  Bytes bytes;
};

Bytes field_slice(const char* name, size_t offset, size_t bytes) {
  const Bytes field = testing::read_field(name);
  offset = std::min(offset, field.size());
  bytes = std::min(bytes, field.size() - offset);
  return Bytes(field.begin() + offset, field.begin() + offset + bytes);
}

// Empty, tiny, ragged (past a 16 KiB block, no width divides it) and slices
// of real fields (../shared/data: a missing field fails the test).
const std::vector<RawInput>& raw_inputs() {
  static const std::vector<RawInput> inputs = {
      {"empty", {}},
      {"one byte", {0x5A}},
      {"seven bytes", testing::random_bytes(7, 1)},
      {"ragged smooth", testing::smooth_words(2 * 16384 + 13, 4, 2)},
      {"ragged random", testing::random_bytes(16384 + 3, 3)},
      {"wmag91 slice", field_slice("wmag91.float", 4 * 91 * 91 * 40, 4 * 91 * 91 * 3 + 5)},
      {"pressure slice", field_slice("pressure.384_384.f64", 8 * 384 * 100, 8 * 384 * 40)},
  };
  return inputs;
}

std::vector<ByteSpan> spans(const std::vector<Bytes>& streams) { return {streams.begin(), streams.end()}; }

// The engine's bound on any stream of a frame: a merged stream holds the
// chunk and its side streams, so it is larger than the chunk (api.cpp).
size_t stream_limit(const std::vector<Bytes>& inputs) {
  size_t total = 0;
  for (const Bytes& b : inputs) total += b.size();
  return 2 * total + 65536;
}

TEST(StageContract, EveryListedStageHasSamplesAndItsListedIdAndName) {
  std::set<uint16_t> ids;
  std::set<std::string> names;
  ASSERT_FALSE(listed_stages().empty());
  for (const ListedStage& listed : listed_stages()) {
    SCOPED_TRACE(listed.name);
    EXPECT_TRUE(ids.insert(listed.id).second) << "type id listed twice";
    EXPECT_TRUE(names.insert(listed.name).second) << "name listed twice";
    EXPECT_EQ(stage_type_name(listed.id), listed.name);
    const std::vector<StageSample> samples = listed.samples();
    EXPECT_FALSE(samples.empty()) << "a listed stage must give the contract test samples (stage_samples.hpp)";
    for (const StageSample& sample : samples) {
      const StageCase c = sample.make(ByteSpan(raw_inputs().back().bytes));
      EXPECT_EQ(static_cast<uint16_t>(c.stage->type()), listed.id) << sample.label;
      EXPECT_EQ(c.inputs.size(), c.stage->input_ports().size()) << sample.label;
    }
  }
  EXPECT_THROW(parse_stage(0, ByteSpan()), FormatError);
  EXPECT_THROW(parse_stage(0x7FEE, ByteSpan()), FormatError);
}

TEST(StageContract, RebuiltFromTheirConfigTheyInvertTheForwardPass) {
  auto exec = make_pool_executor(2);
  for (const ListedStage& listed : listed_stages())
    for (const StageSample& sample : listed.samples())
      for (const RawInput& raw : raw_inputs()) {
        SCOPED_TRACE(sample.label + " on " + raw.label);
        const StageCase c = sample.make(ByteSpan(raw.bytes));
        const StageContext ctx{*exec, stream_limit(c.inputs)};
        std::vector<Bytes> outputs;
        c.stage->forward(spans(c.inputs), outputs, ctx);
        ASSERT_EQ(outputs.size(), c.stage->output_ports().size());

        const Bytes config = c.stage->config();
        EXPECT_LE(config.size(), kMaxStageConfigBytes);
        const auto rebuilt = parse_stage(listed.id, ByteSpan(config));
        EXPECT_EQ(rebuilt->config(), config);
        EXPECT_EQ(rebuilt->type(), c.stage->type());
        EXPECT_EQ(rebuilt->name(), c.stage->name());

        std::vector<Bytes> inputs;
        rebuilt->inverse(spans(outputs), inputs, ctx);
        ASSERT_EQ(inputs.size(), c.inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(inputs[i] == c.inputs[i]) << "input " << i;

        // The decoded chunk written straight into the caller's memory, where
        // the stage can (Pipeline's last copy saved): the same bytes.
        if (c.inputs.size() == 1) {
          Bytes direct(c.inputs[0].size() + 16, 0xA5);
          if (const auto length = rebuilt->inverse_into(spans(outputs), direct.data(), direct.size(), ctx)) {
            ASSERT_EQ(*length, c.inputs[0].size());
            EXPECT_TRUE(std::equal(c.inputs[0].begin(), c.inputs[0].end(), direct.begin()));
          }
        }
        // The other ways the pipeline saves a copy of a chunk (issue 28 item
        // 11), where the stage offers them: the same bytes. Its inputs as
        // pieces of its outputs (a merge's parts)...
        std::vector<ByteSpan> pieces;
        if (rebuilt->inverse_views(spans(outputs), pieces, ctx)) {
          ASSERT_EQ(pieces.size(), c.inputs.size());
          for (size_t i = 0; i < pieces.size(); ++i)
            EXPECT_TRUE(Bytes(pieces[i].data, pieces[i].data + pieces[i].size) == c.inputs[i]) << "piece " << i;
        }
        // ...its input rebuilt over one of its outputs (a fill mask's values)...
        if (const auto port = rebuilt->inverse_in_place_port()) {
          ASSERT_EQ(c.inputs.size(), 1u);
          ASSERT_LT(*port, outputs.size());
          std::vector<Bytes> copy = outputs;
          rebuilt->inverse_in_place(spans(copy), copy[*port].data(), copy[*port].size(), ctx);
          EXPECT_TRUE(copy[*port] == c.inputs[0]);
        }
        // ...and input 0 straight into the caller's memory, the others returned.
        if (c.inputs.size() > 1) {
          Bytes direct(c.inputs[0].size() + 16, 0xA5);
          std::vector<Bytes> rest;
          if (const auto length =
                  rebuilt->inverse_first_into(spans(outputs), direct.data(), direct.size(), rest, ctx)) {
            ASSERT_EQ(*length, c.inputs[0].size());
            EXPECT_TRUE(std::equal(c.inputs[0].begin(), c.inputs[0].end(), direct.begin()));
            ASSERT_EQ(rest.size() + 1, c.inputs.size());
            for (size_t i = 1; i < c.inputs.size(); ++i) EXPECT_TRUE(rest[i - 1] == c.inputs[i]) << "input " << i;
          }
        }
      }
}

// The damaged versions of one stream that a hostile frame may hold.
std::vector<std::pair<std::string, Bytes>> damaged(const Bytes& stream, uint32_t seed) {
  std::vector<std::pair<std::string, Bytes>> out;
  if (!stream.empty()) {
    out.push_back({"empty", {}});
    out.push_back({"one byte short", Bytes(stream.begin(), stream.end() - 1)});
    out.push_back({"half", Bytes(stream.begin(), stream.begin() + stream.size() / 2)});
  }
  out.push_back({"extra bytes", stream});
  out.back().second.insert(out.back().second.end(), {0xFF, 0x00, 0x7F, 0x80, 0x01, 0xFE, 0x55, 0xAA, 0x11});
  std::mt19937 rng(seed);
  for (int flip = 0; flip < 12 && !stream.empty(); ++flip) {
    Bytes b = stream;
    // Half of the flips in the first 64 bytes, where headers and lengths are.
    const size_t at = rng() % (flip % 2 ? b.size() : std::min<size_t>(b.size(), 64));
    b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    out.push_back({"bit flip at " + std::to_string(at), std::move(b)});
  }
  // Length claims far beyond any limit in the leading words.
  for (size_t at : {size_t{0}, size_t{4}, size_t{8}, size_t{16}}) {
    if (stream.size() < at + 8) break;
    Bytes b = stream;
    for (size_t i = 0; i < 8; ++i) b[at + i] = i < 7 ? 0xFF : 0x0F;
    out.push_back({"huge claim at " + std::to_string(at), std::move(b)});
  }
  return out;
}

// inverse() of hostile streams: FormatError, or inputs within the limit.
void expect_refused_or_bounded(const Stage& stage, const std::vector<Bytes>& outputs, const StageContext& ctx,
                               const std::string& what) {
  std::vector<Bytes> inputs;
  try {
    stage.inverse(spans(outputs), inputs, ctx);
  } catch (const FormatError&) {
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a FormatError: " << e.what();
    return;
  }
  for (const Bytes& input : inputs) EXPECT_LE(input.size(), ctx.max_stream_bytes) << what;
}

TEST(StageContract, HostileStreamsAreRefusedOrDecodedWithinTheLimit) {
  auto exec = make_pool_executor(2);
  size_t variants = 0;
  for (const ListedStage& listed : listed_stages())
    for (const StageSample& sample : listed.samples())
      for (const RawInput& raw : raw_inputs()) {
        SCOPED_TRACE(sample.label + " on " + raw.label);
        const StageCase c = sample.make(ByteSpan(raw.bytes));
        const StageContext ctx{*exec, stream_limit(c.inputs)};
        std::vector<Bytes> outputs;
        c.stage->forward(spans(c.inputs), outputs, ctx);
        for (size_t k = 0; k < outputs.size(); ++k)
          for (auto& [label, stream] : damaged(outputs[k], static_cast<uint32_t>(k + 31 * variants))) {
            std::vector<Bytes> hostile = outputs;
            hostile[k] = std::move(stream);
            expect_refused_or_bounded(*c.stage, hostile, ctx, "output " + std::to_string(k) + ", " + label);
            ++variants;
          }
        // Intact streams under a limit below what they decode to.
        size_t largest = 0;
        for (const Bytes& input : c.inputs) largest = std::max(largest, input.size());
        if (largest > 0) {
          const StageContext tight{*exec, largest - 1};
          expect_refused_or_bounded(*c.stage, outputs, tight, "limit below the input");
        }
      }
  EXPECT_GT(variants, 1000u);
}

// A config the stage refuses is a FormatError (a frame's config is data).
TEST(StageContract, MalformedConfigsAreFormatErrors) {
  for (const ListedStage& listed : listed_stages()) {
    SCOPED_TRACE(listed.name);
    // A stage without samples fails the first test with its message; here it
    // has nothing to build a config from (and must not crash the others).
    const std::vector<StageSample> samples = listed.samples();
    if (samples.empty()) {
      ADD_FAILURE() << "a listed stage must give the contract test samples (stage_samples.hpp)";
      continue;
    }
    const StageCase c = samples.front().make(ByteSpan(raw_inputs().back().bytes));
    const Bytes config = c.stage->config();
    std::vector<Bytes> bad = {config};  // one byte too many
    bad.back().push_back(0);
    if (!config.empty()) {
      bad.push_back(Bytes(config.begin(), config.end() - 1));  // one byte short
      bad.push_back(Bytes(config.size(), 0xFF));
    }
    for (const Bytes& b : bad) {
      try {
        const auto stage = parse_stage(listed.id, ByteSpan(b));
        EXPECT_EQ(stage->config(), b) << "a config accepted must be the stage's own";
      } catch (const FormatError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a FormatError: " << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace fz::engine
