// MERGE's stage adapter (merge_stage.hpp).
#include "merge/merge_stage.hpp"

#include "common/error.hpp"
#include "merge/merge.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

MergeStage::MergeStage(unsigned parts) : parts_(parts) {
  if (parts < 1 || parts > 255) throw UsageError("merge: 1 to 255 parts");
}

std::vector<std::string> MergeStage::input_ports() const {
  std::vector<std::string> ports;
  for (unsigned i = 0; i < parts_; ++i) ports.push_back("part" + std::to_string(i));
  return ports;
}

void MergeStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext&) const {
  out.resize(1);
  merge::encode(in, out[0]);
}

void MergeStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  in = merge::decode(out.at(0), ctx.max_stream_bytes, parts_);
  require_format(in.size() == parts_, "merge stream holds the wrong number of parts");
}

bool MergeStage::inverse_views(const std::vector<ByteSpan>& out, std::vector<ByteSpan>& in,
                               const StageContext& ctx) const {
  in = merge::split(out.at(0), ctx.max_stream_bytes, parts_);
  require_format(in.size() == parts_, "merge stream holds the wrong number of parts");
  return true;
}

std::unique_ptr<Stage> make_merge(unsigned parts) { return std::make_unique<MergeStage>(parts); }

std::unique_ptr<Stage> parse_merge(ByteSpan config) { return parse_single_byte_config(config, "merge", make_merge); }

// The raw bytes cut into parts of unequal lengths (some empty).
std::vector<StageSample> merge_stage_samples() {
  std::vector<StageSample> samples;
  for (unsigned parts : {1u, 3u, 255u})
    samples.push_back({"merge" + std::to_string(parts), [parts](ByteSpan raw) {
                         StageCase c{make_merge(parts), {}};
                         size_t at = 0;
                         for (unsigned i = 0; i < parts; ++i) {
                           const size_t left = raw.size - at;
                           const size_t take = i + 1 == parts ? left : (i % 2 ? left / 3 : 0);
                           c.inputs.emplace_back(raw.data + at, raw.data + at + take);
                           at += take;
                         }
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
