// LORENZO's stage adapter (lorenzo_stage.hpp).
#include "lorenzo/lorenzo_stage.hpp"

#include "common/error.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

LorenzoStage::LorenzoStage(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims)
    : config_(config), enforced_bound_(enforced_bound), dims_(std::move(dims)) {
  if (dims_.empty() || dims_.size() > 3) throw UsageError("lorenzo: 1 to 3 axes");
}

Bytes LorenzoStage::config() const {
  Bytes c;
  c.push_back(static_cast<uint8_t>(config_.width));
  append_le<uint32_t>(c, config_.radius);
  append_le<double>(c, config_.eb);
  append_le<double>(c, enforced_bound_);
  c.push_back(config_.has_fill ? 1 : 0);
  append_le<uint64_t>(c, config_.fill_bits);
  c.push_back(static_cast<uint8_t>(dims_.size()));
  for (size_t d : dims_) append_le<uint64_t>(c, d);
  return c;
}

uint64_t LorenzoStage::checked_elements(size_t codes_bytes, size_t max_stream_bytes) const {
  uint64_t elements = 1;
  for (size_t d : dims_) require_format(!__builtin_mul_overflow(elements, d, &elements), "lorenzo dims overflow");
  require_format(elements <= max_stream_bytes / config_.width, "lorenzo chunk larger than the frame allows");
  require_format(codes_bytes == 2 * elements, "lorenzo codes do not match the chunk size");
  return elements;
}

void LorenzoStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(2);  // the pipeline hands in pooled buffers; reuse their capacity
  lorenzo::Streams streams;
  streams.codes = std::move(out.at(0));
  streams.outliers = std::move(out.at(1));
  // Outliers stored as they are: once they alone reach the frame's limit the
  // chunk is stored raw anyway, and all-outlier chunks (noise under a tight
  // bound) would otherwise build a stream several times the chunk.
  const size_t outlier_limit = (ctx.stored_outputs & 2u) ? ctx.frame_limit : SIZE_MAX;
  lorenzo::encode(in.at(0), dims_, config_, enforced_bound_, streams, ctx.exec, outlier_limit);
  out[0] = std::move(streams.codes);
  out[1] = std::move(streams.outliers);
}

void LorenzoStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  checked_elements(out.at(0).size, ctx.max_stream_bytes);
  in.resize(1);
  lorenzo::decode(out.at(0), out.at(1), dims_, config_, in[0], ctx.exec);
}

std::optional<size_t> LorenzoStage::inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                                 const StageContext& ctx) const {
  uint64_t elements = 1;
  for (size_t d : dims_)
    if (__builtin_mul_overflow(elements, d, &elements)) return std::nullopt;  // inverse() reports it
  if (elements > capacity / config_.width || elements > ctx.max_stream_bytes / config_.width) return std::nullopt;
  require_format(out.at(0).size == 2 * elements, "lorenzo codes do not match the chunk size");
  lorenzo::decode_into(out.at(0), out.at(1), dims_, config_, dst, ctx.exec);
  return static_cast<size_t>(elements * config_.width);
}

std::unique_ptr<Stage> make_lorenzo(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims) {
  return std::make_unique<LorenzoStage>(config, enforced_bound, std::move(dims));
}

std::unique_ptr<Stage> parse_lorenzo(ByteSpan c) {
  require_format(c.size >= 31, "lorenzo stage: config too short");
  lorenzo::Config config;
  config.width = c.data[0];
  config.radius = load_le<uint32_t>(c.data + 1);
  config.eb = load_le<double>(c.data + 5);
  const double enforced = load_le<double>(c.data + 13);
  require_format(c.data[21] <= 1, "lorenzo stage: bad fill flag");
  config.has_fill = c.data[21] == 1;
  config.fill_bits = load_le<uint64_t>(c.data + 22);
  const unsigned rank = c.data[30];
  require_format(rank >= 1 && rank <= 3 && c.size == 31 + 8 * size_t(rank), "lorenzo stage: bad rank or config size");
  std::vector<size_t> dims;
  for (unsigned i = 0; i < rank; ++i) dims.push_back(static_cast<size_t>(load_le<uint64_t>(c.data + 31 + 8 * i)));
  require_format((config.width == 4 || config.width == 8) && config.radius >= 1 && config.radius <= 32768,
                 "lorenzo stage: bad width or radius");
  return make_lorenzo(config, enforced, std::move(dims));
}

// Integers under a working bound of 0.5 (step 1), which the predictor
// reproduces exactly, in 1, 2 and 3 axes (the input cut to the shape's
// elements), both widths, and a small radius that makes outliers.
std::vector<StageSample> lorenzo_stage_samples() {
  struct Shape {
    const char* label;
    unsigned width;
    uint32_t radius;
    std::vector<size_t> inner;  // the axes after the slowest, whose extent follows the input
  };
  const std::vector<Shape> shapes = {{"lorenzo1d-f32", 4, 32768, {}},
                                     {"lorenzo2d-f32", 4, 32768, {97}},
                                     {"lorenzo3d-f32-r4", 4, 4, {13, 17}},
                                     {"lorenzo3d-f64", 8, 512, {7, 11}}};
  std::vector<StageSample> samples;
  for (const Shape& shape : shapes)
    samples.push_back({shape.label, [shape](ByteSpan raw) {
                         Bytes values = exact_floats(raw, shape.width);
                         size_t plane = 1;
                         for (size_t d : shape.inner) plane *= d;
                         std::vector<size_t> dims{values.size() / shape.width / plane};
                         dims.insert(dims.end(), shape.inner.begin(), shape.inner.end());
                         values.resize(dims[0] * plane * shape.width);
                         lorenzo::Config config;
                         config.width = shape.width;
                         config.eb = 0.5;
                         config.radius = shape.radius;
                         StageCase c{make_lorenzo(config, 0.5, dims), {}};
                         c.inputs.push_back(std::move(values));
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
