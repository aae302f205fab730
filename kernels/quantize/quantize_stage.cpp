// QUANTIZE's stage adapter (quantize_stage.hpp).
#include "quantize/quantize_stage.hpp"

#include "common/error.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {
namespace {

// ABS/NOA codes decoded as a fused chain delivers them (quantize.hpp).
class QuantizeSink final : public BlockSink {
 public:
  QuantizeSink(ByteSpan outliers, ByteSpan params, size_t codes_bytes) : decoder_(outliers, params, codes_bytes) {}
  size_t size() const override { return decoder_.decoded_bytes(); }
  void consume(size_t block, const uint8_t* data, uint8_t* dst) override { decoder_.consume(block, data, dst); }
  void finish(uint8_t* dst) override { decoder_.finish(dst); }

 private:
  quantize::BlockwiseDecoder decoder_;
};

// The codes encoded block by block for a fused chain (quantize.hpp).
class QuantizeSource final : public ForwardSource {
 public:
  explicit QuantizeSource(std::unique_ptr<quantize::BlockwiseEncoder> encoder) : encoder_(std::move(encoder)) {}
  size_t size() const override { return encoder_->codes_bytes(); }
  void encode_block(size_t block, uint8_t* dst) override { encoder_->encode_block(block, dst); }
  void finish(std::vector<Bytes>& out) override {
    out.resize(3);
    encoder_->finish(out[1], out[2]);
  }

 private:
  std::unique_ptr<quantize::BlockwiseEncoder> encoder_;
};

}  // namespace

Bytes QuantizeStage::config() const {
  Bytes c;
  c.push_back(static_cast<uint8_t>(config_.width));
  c.push_back(static_cast<uint8_t>(config_.mode));
  append_le<double>(c, config_.bound);
  c.push_back(config_.fill ? 1 : 0);
  append_le<uint64_t>(c, config_.fill.value_or(0));
  return c;
}

void QuantizeStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(3);  // the pipeline hands in pooled buffers; reuse their capacity
  quantize::Streams streams;
  streams.codes = std::move(out.at(0));
  streams.outliers = std::move(out.at(1));
  streams.params = std::move(out.at(2));
  quantize::encode(in.at(0), config_, streams, ctx.exec);
  out[0] = std::move(streams.codes);
  out[1] = std::move(streams.outliers);
  out[2] = std::move(streams.params);
}

// Not for a LOSSLESS plan (no codes): forward() stores the elements then.
std::unique_ptr<ForwardSource> QuantizeStage::forward_source(const std::vector<ByteSpan>& in,
                                                             const StageContext& ctx) const {
  auto encoder = std::make_unique<quantize::BlockwiseEncoder>(in.at(0), config_, ctx.exec);
  if (encoder->codes_bytes() == 0) return nullptr;
  return std::make_unique<QuantizeSource>(std::move(encoder));
}

void QuantizeStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  in.resize(1);
  quantize::decode(out.at(0), out.at(1), out.at(2), in[0], ctx.max_stream_bytes, ctx.exec);
}

std::unique_ptr<BlockSink> QuantizeStage::inverse_sink(const std::vector<ByteSpan>& out, size_t port,
                                                       size_t port_bytes, const StageContext& ctx) const {
  if (port != 0 || !quantize::BlockwiseDecoder::is_blockwise(out.at(2))) return nullptr;
  require_format(port_bytes <= ctx.max_stream_bytes, "quantize: codes larger than the frame allows");
  return std::make_unique<QuantizeSink>(out.at(1), out.at(2), port_bytes);
}

std::optional<size_t> QuantizeStage::inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                                  const StageContext& ctx) const {
  const uint64_t bytes = quantize::decoded_bytes(out.at(2));
  if (bytes > capacity || bytes > ctx.max_stream_bytes) return std::nullopt;  // inverse() reports it
  quantize::decode_into(out.at(0), out.at(1), out.at(2), dst, ctx.exec);
  return static_cast<size_t>(bytes);
}

std::unique_ptr<Stage> make_quantize(const quantize::Config& config) { return std::make_unique<QuantizeStage>(config); }

std::unique_ptr<Stage> parse_quantize(ByteSpan c) {
  require_format(c.size == 19, "quantize stage: config must be 19 bytes");
  quantize::Config config;
  config.width = c.data[0];
  require_format(c.data[1] <= 2 && (config.width == 4 || config.width == 8) && c.data[10] <= 1,
                 "quantize stage: bad width, mode or fill flag");
  config.mode = static_cast<quantize::Mode>(c.data[1]);
  config.bound = load_le<double>(c.data + 2);
  if (c.data[10]) config.fill = load_le<uint64_t>(c.data + 11);
  return make_quantize(config);
}

// An absolute bound of 0.5 (step 1) over integers, which it reproduces
// exactly, in both widths, with and without a fill value.
std::vector<StageSample> quantize_stage_samples() {
  std::vector<StageSample> samples;
  const auto add = [&](const std::string& label, const quantize::Config& config) {
    samples.push_back({label, [config](ByteSpan raw) {
                         StageCase c{make_quantize(config), {}};
                         c.inputs.push_back(exact_floats(raw, config.width));
                         return c;
                       }});
  };
  add("quantize-abs-f32", {4, quantize::Mode::kAbs, 0.5, std::nullopt});
  add("quantize-abs-f32-fill", {4, quantize::Mode::kAbs, 0.5, 0x7F7FFFFFu});
  add("quantize-abs-f64", {8, quantize::Mode::kAbs, 0.5, std::nullopt});
  return samples;
}

}  // namespace fz::stage
