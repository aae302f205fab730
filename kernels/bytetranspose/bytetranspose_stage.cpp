// BYTET's stage adapter (bytetranspose_stage.hpp).
#include "bytetranspose/bytetranspose_stage.hpp"

#include "bytetranspose/bytetranspose.hpp"
#include "common/error.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

ByteTransposeStage::ByteTransposeStage(uint32_t element_size) : size_(element_size) {
  if (size_ < 1 || size_ > (1u << 24)) throw UsageError("bytetranspose: element size must be 1 .. 2^24");
}

Bytes ByteTransposeStage::config() const {
  Bytes c;
  append_le<uint32_t>(c, size_);
  return c;
}

void ByteTransposeStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out,
                                 const StageContext& ctx) const {
  out.resize(1);
  bytetranspose::encode(in.at(0), size_, out[0], ctx.exec);
}

void ByteTransposeStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in,
                                 const StageContext& ctx) const {
  in.resize(1);
  require_format(out.at(0).size <= ctx.max_stream_bytes, "stream larger than the frame allows");
  bytetranspose::decode(out.at(0), size_, in[0], ctx.exec);
}

std::unique_ptr<Stage> make_bytetranspose(uint32_t element_size) {
  return std::make_unique<ByteTransposeStage>(element_size);
}

std::unique_ptr<Stage> parse_bytetranspose(ByteSpan config) {
  if (config.size != 4) throw FormatError("bytetranspose stage: config must be 4 bytes");
  const uint32_t element_size = load_le<uint32_t>(config.data);
  return config_error_as_format_error("bytetranspose", [&] { return make_bytetranspose(element_size); });
}

std::vector<StageSample> bytetranspose_stage_samples() {
  std::vector<StageSample> samples;
  for (uint32_t element_size : {1u, 3u, 12u, 70000u})
    samples.push_back({"bytetranspose" + std::to_string(element_size), [element_size](ByteSpan raw) {
                         StageCase c{make_bytetranspose(element_size), {}};
                         c.inputs.emplace_back(raw.data, raw.data + raw.size);
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
