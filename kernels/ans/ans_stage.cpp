// ANS's stage adapter (ans_stage.hpp).
#include "ans/ans_stage.hpp"

#include "ans/ans_format.hpp"
#include "common/error.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

AnsStage::AnsStage(const ans::Config& config) : config_(config) { ans::format::check_config(config); }

Bytes AnsStage::config() const {
  Bytes c;
  append_le<uint32_t>(c, config_.alphabet);
  c.push_back(config_.prob_bits);
  append_le<uint32_t>(c, config_.lane_symbols);
  return c;
}

void AnsStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(1);
  ans::encode(in.at(0), config_, out[0], ctx.exec);
}

void AnsStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  in.resize(1);
  ans::decode(out.at(0), config_, in[0], ctx.max_stream_bytes, ctx.exec);
}

std::unique_ptr<Stage> make_ans(const ans::Config& config) { return std::make_unique<AnsStage>(config); }

std::unique_ptr<Stage> parse_ans(ByteSpan config) {
  require_format(config.size == 9, "ans stage: config must be 9 bytes");
  ans::Config c;
  c.alphabet = load_le<uint32_t>(config.data);
  c.prob_bits = config.data[4];
  c.lane_symbols = load_le<uint32_t>(config.data + 5);
  return config_error_as_format_error("ans", [&] { return make_ans(c); });
}

// The raw bytes as symbols of a small alphabet (mostly distinct symbols, few
// runs), of the spline's alphabet at the preset's config, and of the largest
// alphabet with one-symbol lanes; and the top 4 bits of each u16 (runs and a
// skewed histogram: the coded method, on real fields) in lanes of 1000.
std::vector<StageSample> ans_stage_samples() {
  std::vector<StageSample> samples;
  samples.push_back({"ans16-top-bits", [](ByteSpan raw) {
                       StageCase c{make_ans(ans::Config{16, 6, 1000}), {}};
                       Bytes symbols;
                       for (size_t i = 0; i + 2 <= raw.size; i += 2)
                         append_le<uint16_t>(symbols, static_cast<uint16_t>(load_le<uint16_t>(raw.data + i) >> 12));
                       c.inputs.push_back(std::move(symbols));
                       return c;
                     }});
  for (const ans::Config config : {ans::Config{256, 10, 4096}, ans::Config{8192, 14, 8192},
                                   ans::Config{65536, 16, 1}})
    samples.push_back({"ans" + std::to_string(config.alphabet), [config](ByteSpan raw) {
                         StageCase c{make_ans(config), {}};
                         c.inputs.push_back(u16_symbols(raw, config.alphabet));
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
