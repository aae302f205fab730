// FILLMASK: takes the fill value's elements out before lossy stages and puts
// them back exactly after. Inputs: in. Outputs: values (fill elements replaced
// by their nearest preceding data value), mask (one bit per element).
// Config (little-endian): u8 width | u64 fill bits.
#include "common/error.hpp"
#include "fillmask/fillmask.hpp"
#include "stage.hpp"

namespace fz::engine {
namespace {

class FillMaskStage final : public Stage {
 public:
  FillMaskStage(unsigned width, uint64_t fill) : width_(width), fill_(fill) {
    if (width != 1 && width != 2 && width != 4 && width != 8) throw UsageError("fillmask: width 1, 2, 4 or 8");
    if (width < 8 && (fill >> (8 * width)) != 0) throw UsageError("fillmask: fill bits wider than the element");
  }
  StageType type() const override { return StageType::FillMask; }
  std::string name() const override { return "fillmask"; }
  std::vector<std::string> output_ports() const override { return {"values", "mask"}; }
  Bytes config() const override {
    Bytes c{static_cast<uint8_t>(width_)};
    append_le<uint64_t>(c, fill_);
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(2);
    fillmask::Streams streams{std::move(out[0]), std::move(out[1])};
    fillmask::encode(in.at(0), width_, fill_, streams, ctx.exec);
    out[0] = std::move(streams.values);
    out[1] = std::move(streams.mask);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in.resize(1);
    fillmask::decode(out.at(0), out.at(1), width_, fill_, in[0], ctx.max_stream_bytes, ctx.exec);
  }

 private:
  unsigned width_;
  uint64_t fill_;
};

}  // namespace

std::unique_ptr<Stage> make_fillmask(unsigned width, uint64_t fill) {
  return std::make_unique<FillMaskStage>(width, fill);
}

std::unique_ptr<Stage> parse_fillmask(ByteSpan c) {
  require_format(c.size == 9, "fillmask stage: config must be 9 bytes");
  try {
    return make_fillmask(c.data[0], load_le<uint64_t>(c.data + 1));
  } catch (const UsageError& e) {
    throw FormatError(std::string("invalid fillmask stage config: ") + e.what());
  }
}

}  // namespace fz::engine
