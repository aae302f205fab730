// SPLINE's stage adapter (spline_stage.hpp).
#include "spline/spline_stage.hpp"

#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "spline/spline_rules.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

SplineStage::SplineStage(const spline::Config& config, double enforced_bound, std::vector<size_t> dims,
                         bool fill_input)
    : config_(config), enforced_bound_(enforced_bound), dims_(std::move(dims)), fill_input_(fill_input) {
  if (dims_.empty() || dims_.size() > 3) throw UsageError("spline: 1 to 3 axes");
  if (config_.width != 4 && config_.width != 8) throw UsageError("spline: width must be 4 or 8");
  if (const char* problem = spline::rules::config_problem(config_)) throw UsageError(problem);
  if (!(std::isfinite(enforced_bound_) && enforced_bound_ > 0)) throw UsageError("spline: bound must be positive");
  if (config_.coarse_levels && !config_.compact_config)
    throw UsageError("spline: coarse levels need the compact config (v2), which says so");
}

std::unique_ptr<SplineStage> SplineStage::decoder_only(const spline::CodeFormat& format, double enforced_bound,
                                                       std::vector<size_t> dims, bool fill_input) {
  spline::Config config;  // the encoder's settings stay at defaults the constructor accepts; forward refuses
  config.width = format.width;
  config.code_bytes = format.code_bytes;
  config.radius = 1;
  config.code_form = format.code_form;
  config.coarse_levels = format.coarse_levels;
  config.compact_config = true;
  auto stage = std::make_unique<SplineStage>(config, enforced_bound, std::move(dims), fill_input);
  stage->decoder_only_ = true;
  return stage;
}

void SplineStage::require_encoder() const {
  if (decoder_only_)
    throw UsageError("spline: a stage parsed from a v2 config only decodes (v2 leaves the radius, alpha, beta and tuning out)");
}

namespace {

constexpr uint8_t kConfigV2 = 0x82;
constexpr uint8_t kV2CoarseLevels = 1, kV2FillInput = 2;

// Unsigned LEB128: 7 bits per byte, low groups first, high bit = more follows.
void append_leb128(Bytes& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// The canonical LEB128 at c[at] (no redundant high zero group, at most 64
// bits); advances `at`. FormatError when malformed or cut short.
uint64_t read_leb128(ByteSpan c, size_t& at) {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    require_format(at < c.size, "spline stage: config v2 ends inside a dim");
    const uint8_t byte = c.data[at++];
    require_format(shift < 63 || byte <= 1, "spline stage: config v2 dim overflows 64 bits");
    v |= uint64_t(byte & 0x7F) << shift;
    if (!(byte & 0x80)) {
      require_format(byte != 0 || shift == 0, "spline stage: config v2 dim not minimally encoded");
      return v;
    }
  }
}

}  // namespace

Bytes SplineStage::config() const {
  Bytes c;
  if (config_.compact_config) {
    c.push_back(kConfigV2);
    c.push_back(static_cast<uint8_t>(config_.width));
    c.push_back(static_cast<uint8_t>(config_.code_bytes));
    c.push_back(static_cast<uint8_t>(config_.code_form));
    c.push_back(static_cast<uint8_t>(dims_.size()));
    for (size_t d : dims_) append_leb128(c, d);
    c.push_back(static_cast<uint8_t>((config_.coarse_levels ? kV2CoarseLevels : 0) | (fill_input_ ? kV2FillInput : 0)));
    // The bound is the decoder's to ignore, but the filter's frame check
    // compares it with the dataset's cd_values (filter/frame_check.cpp).
    append_le<double>(c, enforced_bound_);
    return c;
  }
  c.push_back(static_cast<uint8_t>(config_.width));
  c.push_back(static_cast<uint8_t>(config_.code_bytes));
  append_le<uint32_t>(c, config_.radius);
  append_le<double>(c, enforced_bound_);
  append_le<double>(c, config_.alpha);
  append_le<double>(c, config_.beta);
  c.push_back(static_cast<uint8_t>(config_.tuning));
  c.push_back(static_cast<uint8_t>(config_.code_form));
  c.push_back(static_cast<uint8_t>(dims_.size()));
  for (size_t d : dims_) append_le<uint64_t>(c, d);
  if (fill_input_) c.push_back(1);  // absent otherwise: configs without a fill input keep their bytes
  return c;
}

size_t SplineStage::fill_mask_bytes() const {
  uint64_t elements = 1;
  for (size_t d : dims_) require_format(!__builtin_mul_overflow(elements, d, &elements), "spline dims overflow");
  return static_cast<size_t>(elements / 8 + (elements % 8 != 0 ? 1 : 0));
}

void SplineStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  require_encoder();
  out.resize(kSidePort + 1);  // the pipeline hands in pooled buffers; reuse their capacity
  spline::Streams streams;
  for (unsigned g = 0; g < spline::kCodeGroups; ++g) streams.codes[g] = std::move(out[g]);
  streams.side = std::move(out[kSidePort]);
  const ByteSpan fill = fill_input_ ? in.at(kFillInput) : ByteSpan{};
  if (fill_input_ && fill.size != fill_mask_bytes()) throw UsageError("spline: the fill mask must have one bit per element");
  spline::encode(in.at(0), fill, dims_, config_, enforced_bound_, streams, ctx.exec);
  for (unsigned g = 0; g < spline::kCodeGroups; ++g) out[g] = std::move(streams.codes[g]);
  out[kSidePort] = std::move(streams.side);
  if (fill_input_) {
    out.resize(kFillPort + 1);
    out[kFillPort].assign(fill.data, fill.data + fill.size);
  }
}

// The streams' checks before decoding (either way): the elements within the
// frame's limit, the stream count, the codes' total size and the fill mask's.
// Returns the chunk's elements; fills `codes`.
uint64_t SplineStage::checked_streams(const std::vector<ByteSpan>& out, const StageContext& ctx,
                                      ByteSpan (&codes)[spline::kCodeGroups]) const {
  uint64_t elements = 1;
  for (size_t d : dims_) require_format(!__builtin_mul_overflow(elements, d, &elements), "spline dims overflow");
  require_format(elements <= ctx.max_stream_bytes / config_.width, "spline chunk larger than the frame allows");
  require_format(out.size() == kSidePort + 1 + (fill_input_ ? 1 : 0), "spline: wrong number of streams");
  uint64_t code_bytes = 0;
  for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
    codes[g] = out[g];
    code_bytes += out[g].size;
  }
  require_format(code_bytes == elements * config_.code_bytes, "spline codes do not match the chunk size");
  if (fill_input_)  // the fill mask stage that reads it checks it too; a mask of another size is no mask of this chunk
    require_format(out[kFillPort].size == fill_mask_bytes(), "spline: the fill mask does not match the chunk size");
  return elements;
}

void SplineStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  ByteSpan codes[spline::kCodeGroups];
  checked_streams(out, ctx, codes);
  in.resize(fill_input_ ? 2 : 1);
  spline::decode(codes, out[kSidePort], dims_, code_format(), in[0], ctx.exec);
  if (fill_input_) in[kFillInput].assign(out[kFillPort].data, out[kFillPort].data + out[kFillPort].size);
}

// Straight into the caller's chunk (HDF5's buffer): decoding into a stream of
// its own and copying it over held the chunk twice (issue 28: the spline
// presets decoded with 1.5-2x the chunk beyond HDF5's buffers).
std::optional<size_t> SplineStage::inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                                const StageContext& ctx) const {
  if (fill_input_) return std::nullopt;  // two inputs: never the chunk's one producer
  ByteSpan codes[spline::kCodeGroups];
  const uint64_t elements = checked_streams(out, ctx, codes);
  if (elements > capacity / config_.width) return std::nullopt;  // inverse() reports it
  return spline::decode_into(codes, out[kSidePort], dims_, code_format(), dst, capacity, ctx.exec);
}

// With a fill input: the values into the caller's memory (the fill mask
// stage then puts the fill elements back there, in place), the mask handed
// back as it came.
std::optional<size_t> SplineStage::inverse_first_into(const std::vector<ByteSpan>& out, uint8_t* dst,
                                                      size_t capacity, std::vector<Bytes>& rest,
                                                      const StageContext& ctx) const {
  if (!fill_input_) return std::nullopt;
  ByteSpan codes[spline::kCodeGroups];
  const uint64_t elements = checked_streams(out, ctx, codes);
  if (elements > capacity / config_.width) return std::nullopt;  // inverse() reports it
  const size_t bytes = spline::decode_into(codes, out[kSidePort], dims_, code_format(), dst, capacity, ctx.exec);
  rest.resize(1);
  rest[0].assign(out[kFillPort].data, out[kFillPort].data + out[kFillPort].size);
  return bytes;
}

std::unique_ptr<Stage> make_spline(const spline::Config& config, double enforced_bound, std::vector<size_t> dims,
                                   bool fill_input) {
  return std::make_unique<SplineStage>(config, enforced_bound, std::move(dims), fill_input);
}

namespace {

// Config v2 (spline_stage.hpp): a stage that only decodes.
std::unique_ptr<Stage> parse_spline_v2(ByteSpan c) {
  require_format(c.size >= 6, "spline stage: config v2 too short");
  spline::CodeFormat format;
  format.width = c.data[1];
  format.code_bytes = c.data[2];
  require_format(c.data[3] <= 2, "spline stage: unknown code form");
  format.code_form = static_cast<spline::CodeForm>(c.data[3]);
  const unsigned rank = c.data[4];
  require_format(rank >= 1 && rank <= 3, "spline stage: bad rank");
  size_t at = 5;
  std::vector<size_t> dims;
  for (unsigned i = 0; i < rank; ++i) dims.push_back(static_cast<size_t>(read_leb128(c, at)));
  require_format(at + 9 == c.size, at + 9 < c.size ? "spline stage: bytes after config v2's bound"
                                                   : "spline stage: config v2 ends before its flags and bound");
  const uint8_t flags = c.data[at];
  require_format((flags & ~(kV2CoarseLevels | kV2FillInput)) == 0, "spline stage: unknown config v2 flags");
  format.coarse_levels = (flags & kV2CoarseLevels) != 0;
  return config_error_as_format_error("spline", [&]() -> std::unique_ptr<Stage> {
    return SplineStage::decoder_only(format, load_le<double>(c.data + at + 1), std::move(dims),
                                     (flags & kV2FillInput) != 0);
  });
}

}  // namespace

std::unique_ptr<Stage> parse_spline(ByteSpan c) {
  if (c.size > 0 && c.data[0] == kConfigV2) return parse_spline_v2(c);
  require_format(c.size >= 33, "spline stage: config too short");
  spline::Config config;
  config.width = c.data[0];
  config.code_bytes = c.data[1];
  config.radius = load_le<uint32_t>(c.data + 2);
  const double enforced = load_le<double>(c.data + 6);
  config.alpha = load_le<double>(c.data + 14);
  config.beta = load_le<double>(c.data + 22);
  require_format(c.data[30] <= 1, "spline stage: unknown tuning");
  config.tuning = static_cast<spline::Tuning>(c.data[30]);
  require_format(c.data[31] <= 2, "spline stage: unknown code form");
  config.code_form = static_cast<spline::CodeForm>(c.data[31]);
  const unsigned rank = c.data[32];
  const size_t dims_end = 33 + 8 * size_t(rank);
  require_format(rank >= 1 && rank <= 3 && (c.size == dims_end || c.size == dims_end + 1),
                 "spline stage: bad rank or config size");
  const bool fill_input = c.size == dims_end + 1;
  require_format(!fill_input || c.data[dims_end] == 1, "spline stage: unknown input flag");
  std::vector<size_t> dims;
  for (unsigned i = 0; i < rank; ++i) dims.push_back(static_cast<size_t>(load_le<uint64_t>(c.data + 33 + 8 * i)));
  return config_error_as_format_error(
      "spline", [&] { return make_spline(config, enforced, std::move(dims), fill_input); });
}

namespace {

// A linear ramp of integers over `dims` (coefficients from the raw bytes),
// plus +1000 on every 53rd element when `spikes`. The spline's predictors
// are exact on a ramp, so under a bound of 0.5 with alpha = beta = 1 (every
// level's step 1) every element comes back exactly: the ramp's with q = 0,
// and the spikes, and their neighbours, whose predictions they move by at
// least 1000/16, as outliers when the radius is 1.
// `flat`: every coefficient but the constant 0, so that a fill element's x'
// (its prediction, spline.hpp) is its value at the borders too.
template <typename T>
Bytes ramp(ByteSpan raw, const std::vector<size_t>& dims, bool spikes, bool flat) {
  auto coefficient = [&](size_t k) {
    if (flat && k > 0) return 0;
    return raw.size > k ? static_cast<int>(raw.data[k] % 7) - 3 : 1;
  };
  size_t n = 1;
  for (size_t d : dims) n *= d;
  Bytes out(n * sizeof(T));
  std::vector<size_t> at(dims.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    double v = coefficient(0) * 100;
    for (size_t a = 0; a < dims.size(); ++a) v += coefficient(a + 1) * static_cast<double>(at[a]);
    if (spikes && i % 53 == 7) v += 1000;
    const T t = static_cast<T>(v);
    std::memcpy(out.data() + i * sizeof(T), &t, sizeof(T));
    for (size_t a = dims.size(); a-- > 0;) {
      if (++at[a] < dims[a]) break;
      at[a] = 0;
    }
  }
  return out;
}

}  // namespace

// Ramps in 1, 2 and 3 axes (the slowest extent follows the input's length),
// both widths, 1- and 2-byte codes, every code form, both tunings, spikes
// as outliers, a fill mask, and coarse levels (config v2).
std::vector<StageSample> spline_stage_samples() {
  struct Shape {
    const char* label;
    unsigned width;
    unsigned code_bytes;
    uint32_t radius;
    spline::Tuning tuning;
    spline::CodeForm form;
    bool spikes;
    std::vector<size_t> inner;
    bool fill = false;  // every 5th element and every element after a raw byte's multiple of 7 a fill element
    bool coarse = false;  // coarse levels, config v2
  };
  using spline::CodeForm;
  using spline::Tuning;
  const std::vector<Shape> shapes = {
      {"spline1d-f32-c1-signed", 4, 1, 128, Tuning::kOff, CodeForm::kSigned, false, {}},
      {"spline2d-f32", 4, 2, 512, Tuning::kRatioFirst, CodeForm::kOffset, false, {97}},
      {"spline3d-f32-spikes", 4, 2, 1, Tuning::kRatioFirst, CodeForm::kOffset, true, {13, 17}},
      {"spline3d-f64-signed", 8, 2, 32768, Tuning::kOff, CodeForm::kSigned, false, {7, 11}},
      {"spline3d-f32-zigzag", 4, 2, 32768, Tuning::kRatioFirst, CodeForm::kZigzag, false, {9, 10}},
      {"spline1d-f64-c1-zigzag", 8, 1, 100, Tuning::kOff, CodeForm::kZigzag, false, {}},
      // Fill elements are coded q = 0 with x' = their prediction, exact on a flat ramp: the inverse gives the input.
      {"spline2d-f32-fill", 4, 2, 512, Tuning::kRatioFirst, CodeForm::kOffset, false, {67}, true},
      // Coarse levels (config v2): the anchors coded from the root, spikes among them as outliers.
      {"spline3d-f32-coarse-spikes", 4, 2, 1, Tuning::kRatioFirst, CodeForm::kOffset, true, {13, 17}, false, true},
      {"spline1d-f64-coarse-fill", 8, 2, 512, Tuning::kOff, CodeForm::kZigzag, false, {}, true, true}};
  std::vector<StageSample> samples;
  for (const Shape& shape : shapes)
    samples.push_back({shape.label, [shape](ByteSpan raw) {
                         size_t plane = 1;
                         for (size_t d : shape.inner) plane *= d;
                         std::vector<size_t> dims{raw.size / shape.width / plane};
                         dims.insert(dims.end(), shape.inner.begin(), shape.inner.end());
                         if (dims[0] == 0) dims = {raw.size / shape.width};  // too short for the shape: 1-D
                         spline::Config config;
                         config.width = shape.width;
                         config.code_bytes = shape.code_bytes;
                         config.radius = shape.radius;
                         config.tuning = shape.tuning;
                         config.code_form = shape.form;
                         config.alpha = 1;
                         config.beta = 1;
                         config.coarse_levels = config.compact_config = shape.coarse;
                         StageCase c{make_spline(config, 0.5, dims, shape.fill), {}};
                         c.inputs.push_back(shape.width == 4 ? ramp<float>(raw, dims, shape.spikes, shape.fill)
                                                             : ramp<double>(raw, dims, shape.spikes, shape.fill));
                         if (shape.fill) {
                           size_t n = 1;
                           for (size_t d : dims) n *= d;
                           Bytes mask((n + 7) / 8, 0);
                           for (size_t i = 0; i < n; ++i)
                             if (i % 5 == 0 || (i < raw.size && raw.data[i] % 7 == 0))
                               mask[i / 8] = static_cast<uint8_t>(mask[i / 8] | (1u << (i % 8)));
                           c.inputs.push_back(std::move(mask));
                         }
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
