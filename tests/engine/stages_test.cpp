// Every stage the registry knows survives the trip a frame makes: forward, then
// rebuilt from (type id, config) alone, then inverse; configs stay within 128
// bytes; malformed configs are refused as format errors.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "stage.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

struct Case {
  std::string label;
  std::function<std::unique_ptr<Stage>()> make;
  Bytes input;
};

Bytes u16_symbols(size_t n, uint16_t alphabet) {
  Bytes b = testing::smooth_words(2 * n, 2, 77);
  for (size_t i = 0; i + 1 < b.size(); i += 2) {
    const uint16_t s = static_cast<uint16_t>((b[i] | (b[i + 1] << 8)) % alphabet);
    b[i] = static_cast<uint8_t>(s);
    b[i + 1] = static_cast<uint8_t>(s >> 8);
  }
  return b;
}

// Small integers as float32: exactly representable, so quantizers with a bound of
// 0.5 and working step 1 reproduce them exactly.
Bytes integers(size_t n) {
  Bytes b(n * 4);
  for (size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(static_cast<int>((i * 7919) % 2001) - 1000);
    std::memcpy(&b[4 * i], &v, 4);
  }
  return b;
}

std::vector<Case> cases() {
  const Bytes field = testing::read_field("wmag91.float");
  std::vector<Case> all;
  for (unsigned w : {1u, 2u, 4u, 8u}) {
    all.push_back({"bitshuffle", [w] { return make_bitshuffle(w); }, field});
    all.push_back({"rze", [w] { return make_rze(w); }, field});
    all.push_back({"rre", [w] { return make_rre(w); }, field});
    all.push_back({"tcms", [w] { return make_tcms(w); }, field});
    all.push_back({"diffnb", [w] { return make_diffnb(w); }, field});
    all.push_back({"byteswap", [w] { return make_byteswap(w); }, field});
  }
  all.push_back({"bytetranspose", [] { return make_bytetranspose(12); }, field});
  all.push_back({"huffman", [] { return make_huffman({1024, 16, 4096}); }, u16_symbols(100003, 1024)});
  all.push_back({"huffman", [] { return make_huffman({256, 12, 16384}); }, u16_symbols(5000, 256)});
  // A lossy stage inverts exactly the values it reproduces exactly: integers
  // with an absolute bound of 0.5 (step 1) quantize to themselves.
  all.push_back({"quantize", [] { return make_quantize({4, quantize::Mode::kAbs, 0.5, 0x7F7FFFFFu}); },
                 integers(100000)});
  all.push_back({"lorenzo", [] { return make_lorenzo({4, 0.5, 32768, false, 0}, 0.5, {91, 91, 91}); }, integers(91 * 91 * 91)});
  return all;
}

TEST(Stages, RebuiltFromTheirConfigTheyInvertTheForwardPass) {
  auto exec = make_pool_executor(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const auto stage = c.make();
    StageContext ctx{*exec, 2 * c.input.size() + 65536};
    std::vector<Bytes> outputs;
    stage->forward({ByteSpan(c.input)}, outputs, ctx);
    ASSERT_EQ(outputs.size(), stage->output_ports().size());
    const Bytes config = stage->config();
    EXPECT_LE(config.size(), kMaxStageConfigBytes);
    const auto rebuilt = parse_stage(static_cast<uint16_t>(stage->type()), ByteSpan(config));
    EXPECT_EQ(rebuilt->config(), config);
    EXPECT_EQ(stage_type_name(static_cast<uint16_t>(stage->type())), c.label);
    std::vector<ByteSpan> views(outputs.begin(), outputs.end());
    std::vector<Bytes> inputs;
    rebuilt->inverse(views, inputs, ctx);
    ASSERT_EQ(inputs.size(), 1u);
    EXPECT_TRUE(inputs[0] == c.input);
  }
}

TEST(Stages, MalformedConfigsAreFormatErrors) {
  const uint8_t bad_width[] = {3};
  EXPECT_THROW(parse_stage(1, ByteSpan(bad_width, 1)), FormatError);
  EXPECT_THROW(parse_stage(2, ByteSpan(bad_width, 0)), FormatError);
  const uint8_t bad_huffman[9] = {0, 4, 0, 0, 8, 0, 16, 0, 0};  // A=1024 but L=8: 2^8 < A
  EXPECT_THROW(parse_stage(11, ByteSpan(bad_huffman, 9)), FormatError);
  EXPECT_THROW(parse_stage(11, ByteSpan(bad_huffman, 5)), FormatError);
  EXPECT_THROW(parse_stage(0x7FEE, ByteSpan()), FormatError);
}

}  // namespace
}  // namespace fz::engine
