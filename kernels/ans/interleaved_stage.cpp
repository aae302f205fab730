// ANS, interleaved: the stage adapter (interleaved_stage.hpp), stage type 15.
#include "ans/interleaved_stage.hpp"

#include "ans/interleaved_format.hpp"
#include "common/error.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

AnsInterleavedStage::AnsInterleavedStage(const ans::InterleavedConfig& config) : config_(config) {
  ans::interleaved_format::check_config(config);
}

Bytes AnsInterleavedStage::config() const {
  Bytes c;
  append_le<uint16_t>(c, static_cast<uint16_t>(config_.alphabet));
  c.push_back(config_.prob_bits);
  return c;
}

void AnsInterleavedStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out,
                                  const StageContext& ctx) const {
  out.resize(1);
  ans::encode_interleaved(in.at(0), config_, out[0], ctx.exec);
}

void AnsInterleavedStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in,
                                  const StageContext& ctx) const {
  in.resize(1);
  ans::decode_interleaved(out.at(0), config_, in[0], ctx.max_stream_bytes, ctx.exec);
}

std::unique_ptr<Stage> make_ansi(const ans::InterleavedConfig& config) {
  return std::make_unique<AnsInterleavedStage>(config);
}

std::unique_ptr<Stage> parse_ansi(ByteSpan config) {
  require_format(config.size == 3, "ansi stage: config must be 3 bytes");
  ans::InterleavedConfig c;
  c.alphabet = load_le<uint16_t>(config.data);
  c.prob_bits = config.data[2];
  return config_error_as_format_error("ansi", [&] { return make_ansi(c); });
}

// The top 4 bits of each u16 (runs and a skewed histogram: the coded
// method, C and W chosen on real fields) at the smallest M; the spline's
// alphabet at the preset's config; the largest alphabet (mostly distinct
// symbols: the stored method on small inputs).
std::vector<StageSample> ansi_stage_samples() {
  std::vector<StageSample> samples;
  samples.push_back({"ansi16-top-bits", [](ByteSpan raw) {
                       StageCase c{make_ansi(ans::InterleavedConfig{16, 8}), {}};
                       Bytes symbols;
                       for (size_t i = 0; i + 2 <= raw.size; i += 2)
                         append_le<uint16_t>(symbols, static_cast<uint16_t>(load_le<uint16_t>(raw.data + i) >> 12));
                       c.inputs.push_back(std::move(symbols));
                       return c;
                     }});
  for (const ans::InterleavedConfig config : {ans::InterleavedConfig{8192, 14}, ans::InterleavedConfig{65535, 16}})
    samples.push_back({"ansi" + std::to_string(config.alphabet), [config](ByteSpan raw) {
                         StageCase c{make_ansi(config), {}};
                         c.inputs.push_back(u16_symbols(raw, config.alphabet));
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
