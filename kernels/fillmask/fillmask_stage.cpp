// FILLMASK's stage adapter (fillmask_stage.hpp).
#include "fillmask/fillmask_stage.hpp"

#include "common/error.hpp"
#include "fillmask/fillmask.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

FillMaskStage::FillMaskStage(unsigned width, uint64_t fill) : width_(width), fill_(fill) {
  if (width != 1 && width != 2 && width != 4 && width != 8) throw UsageError("fillmask: width 1, 2, 4 or 8");
  if (width < 8 && (fill >> (8 * width)) != 0) throw UsageError("fillmask: fill bits wider than the element");
}

Bytes FillMaskStage::config() const {
  Bytes c{static_cast<uint8_t>(width_)};
  append_le<uint64_t>(c, fill_);
  return c;
}

void FillMaskStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(2);
  fillmask::Streams streams{std::move(out[0]), std::move(out[1])};
  fillmask::encode(in.at(0), width_, fill_, streams, ctx.exec);
  out[0] = std::move(streams.values);
  out[1] = std::move(streams.mask);
}

void FillMaskStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  in.resize(1);
  fillmask::decode(out.at(0), out.at(1), width_, fill_, in[0], ctx.max_stream_bytes, ctx.exec);
}

void FillMaskStage::inverse_in_place(const std::vector<ByteSpan>& out, uint8_t* data, size_t size,
                                     const StageContext& ctx) const {
  fillmask::decode_in_place(data, size, out.at(1), width_, fill_, ctx.max_stream_bytes, ctx.exec);
}

std::unique_ptr<Stage> make_fillmask(unsigned width, uint64_t fill) {
  return std::make_unique<FillMaskStage>(width, fill);
}

std::unique_ptr<Stage> parse_fillmask(ByteSpan c) {
  require_format(c.size == 9, "fillmask stage: config must be 9 bytes");
  const unsigned width = c.data[0];
  const uint64_t fill = load_le<uint64_t>(c.data + 1);
  return config_error_as_format_error("fillmask", [&] { return make_fillmask(width, fill); });
}

// Whole elements, the fill being the first one's value (so the mask is not
// empty) or 0 for an empty input.
std::vector<StageSample> fillmask_stage_samples() {
  std::vector<StageSample> samples;
  for (unsigned width : {1u, 2u, 4u, 8u})
    samples.push_back({"fillmask" + std::to_string(width), [width](ByteSpan raw) {
                         Bytes elements = whole_words(raw, width);
                         uint64_t fill = 0;
                         for (unsigned i = 0; i < width && i < elements.size(); ++i)
                           fill |= uint64_t{elements[i]} << (8 * i);
                         StageCase c{make_fillmask(width, fill), {}};
                         c.inputs.push_back(std::move(elements));
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
