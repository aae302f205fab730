// The CUDA backend for chunks and frames already in device memory (the
// device-resident API of fz.hpp): the encoders of the compress flow
// (execution.hpp) — on the device, or through the host where a stage has no
// GPU version — the raw frame written on the device, and the decoder.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "common/error.hpp"
#include "cuda/chunk_work.hpp"
#include "cuda/device_frames.hpp"
#include "cuda/device_pipeline.hpp"
#include "device_forward.hpp"
#include "presets/presets.hpp"

namespace fz::engine {
namespace {

void require_capacity(size_t frame_bytes, const FrameTarget& target) {
  if (!fits(target, frame_bytes))
    throw Error("the frame needs " + std::to_string(frame_bytes) + " bytes of device memory, " +
                std::to_string(target.capacity) + " given (max_frame_bytes() always suffices)");
}

// The frame's header (its payload already in place on the device, or on its
// way there on the lane) completed with the payload's checksum and uploaded
// in front of it.
size_t finish_device_frame(Bytes header, FrameInfo info, size_t payload, uint32_t payload_crc, FrameTarget target,
                           cuda::Lane& lane) {
  set_payload_crc(header, info, payload_crc);
  uint8_t* pinned = lane.scalars.reserve(header.size());
  std::memcpy(pinned, header.data(), header.size());
  cuda::check(cudaMemcpyAsync(target.data, pinned, header.size(), cudaMemcpyHostToDevice, lane.stream),
              "frame header");
  cuda::check(cudaStreamSynchronize(lane.stream), "frame header");
  return header.size() + payload;
}

// The payload's spans copied back to back to `dst` on the lane, and their
// checksum: computed where they are, beside the copies (both only read
// them), unless `dst` overlaps a span, when it is computed after the copies
// over `dst` (the same bytes).
uint32_t copy_payload(const std::vector<cuda::DeviceSpan>& spans, size_t total, uint8_t* dst,
                      cuda::DeviceContext& context, cuda::Lane& lane) {
  const auto overlaps = [&](const cuda::DeviceSpan& span) {
    const auto* begin = static_cast<const uint8_t*>(span.data);
    return span.size != 0 && total != 0 && std::less<const uint8_t*>()(begin, dst + total) &&
           std::less<const uint8_t*>()(dst, begin + span.size);
  };
  std::optional<cuda::ChecksumBeside> beside;
  if (std::none_of(spans.begin(), spans.end(), overlaps)) beside.emplace(context, lane, spans, total);
  size_t at = 0;
  for (const cuda::DeviceSpan& span : spans) {
    if (span.size)
      cuda::check(cudaMemcpyAsync(dst + at, span.data, span.size, cudaMemcpyDeviceToDevice, lane.stream),
                  "frame payload");
    at += span.size;
  }
  if (!beside) beside.emplace(context, lane, std::vector<cuda::DeviceSpan>{{dst, total}}, total);
  return beside->value();
}

cuda::DeviceContext& usable_context(int device) {
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  if (context.broken()) throw Error("the GPU is unusable after an earlier CUDA error");
  return context;
}

class ResidentEncoder final : public ChunkEncoder {
 public:
  ResidentEncoder(const uint8_t* chunk, size_t bytes, int device)
      : chunk_(chunk),
        bytes_(bytes),
        context_(usable_context(device)),
        guard_(device),
        lane_(context_.lease()),
        work_(context_, *lane_) {}

  FiniteRange facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options) override {
    return cuda::device_chunk_facts(chunk_, bytes_, dtype, dims, options, work_, *lane_, &prefix_);
  }

  bool runs(const Pipeline& pipeline) const override { return runs_on_device(pipeline); }

  FrameOut encode(const Pipeline& pipeline, const FrameInfo& description, FrameTarget target) override {
    FrameInfo info = description;
    const std::vector<DeviceBuffer> buffers = cuda::run_forward(
        pipeline, {const_cast<uint8_t*>(chunk_), bytes_}, work_, cuda::side_by_side_for(work_, bytes_), &prefix_);
    const std::vector<uint64_t> sizes = cuda::stored_sizes(pipeline, buffers, *lane_);
    uint64_t payload = 0;
    for (uint64_t s : sizes) payload += s;
    // The header's length does not depend on the checksum, which is set once known.
    Bytes header = write_frame_header(info, sizes, 0);
    FrameOut out;
    const std::vector<uint8_t> ids = pipeline.stored_buffers();
    if (cuda::outgrew_room(ids, buffers, sizes, header.size() + payload, bytes_) ||
        header.size() + payload >= bytes_) {  // the raw frame instead (execution.hpp)
      out.not_smaller = true;
      return out;
    }
    require_capacity(header.size() + payload, target);
    std::vector<cuda::DeviceSpan> spans;
    for (size_t k = 0; k < ids.size(); ++k) spans.push_back({buffers[ids[k]].data, static_cast<size_t>(sizes[k])});
    const size_t at = header.size();
    const uint32_t crc = copy_payload(spans, payload, target.data + at, context_, *lane_);
    out.written = finish_device_frame(std::move(header), info, payload, crc, target, *lane_);
    return out;
  }

 private:
  const uint8_t* chunk_;
  size_t bytes_;
  cuda::DeviceContext& context_;
  cuda::CurrentDeviceGuard guard_;
  cuda::LaneLease lane_;
  cuda::ChunkWork work_;
  cuda::DevicePrefix prefix_;  // what facts() ran of the spline pipeline (device_chunk_facts)
};

// A stage without a GPU version: the chunk through the host and the CPU.
class ThroughHostEncoder final : public ChunkEncoder {
 public:
  ThroughHostEncoder(const uint8_t* chunk, size_t bytes, int device, const Policy& policy)
      : device_(device), host_(bytes), policy_(cpu_only(policy)) {
    copy_device_to_host(chunk, bytes, host_.data(), device);
    cpu_ = make_cpu_encoder(ByteSpan(host_.data(), host_.size()), policy_);
  }
  FiniteRange facts(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options) override {
    return cpu_->facts(dtype, dims, options);
  }
  bool runs(const Pipeline& pipeline) const override { return cpu_->runs(pipeline); }
  FrameOut encode(const Pipeline& pipeline, const FrameInfo& info, FrameTarget target) override {
    FrameOut out = cpu_->encode(pipeline, info, {});
    if (out.not_smaller || out.frame.size() >= host_.size()) {
      out.not_smaller = true;
      return out;
    }
    require_capacity(out.frame.size(), target);
    copy_host_to_device(out.frame.data(), out.frame.size(), target.data, device_);
    out.written = out.frame.size();
    out.frame = Bytes();
    return out;
  }

 private:
  int device_;
  Bytes host_;
  Policy policy_;
  std::unique_ptr<ChunkEncoder> cpu_;
};

// The stages' inverse of a resident frame's streams into `out`; nothing when
// a stream is malformed (the host path then reports it).
std::optional<size_t> decode_resident(const Pipeline& pipeline, const FrameInfo& info, const uint8_t* payload,
                                      uint8_t* out, size_t capacity, size_t max_stream_bytes, cuda::ChunkWork& work,
                                      cuda::Lane& lane) {
  const uint8_t* frame = payload - info.header_bytes;
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (ids.size() != info.stored_sizes.size()) return std::nullopt;  // the host path reports it
  std::vector<DeviceBuffer> view(256);
  size_t at = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    view[ids[k]] = {const_cast<uint8_t*>(payload) + at, static_cast<size_t>(info.stored_sizes[k]), nullptr, nullptr};
    at += info.stored_sizes[k];
  }
  // The chunk is decoded straight into `out` where it can be: no copy of
  // the whole chunk afterwards, and no chunk-sized buffer beside it (issue 31
  // item 5). Not when `out` overlaps the frame, which the inverses still read,
  // or is not aligned as the pool aligns what the stages expect.
  const bool out_overlaps_frame = out < frame + info.frame_bytes && frame < out + capacity;
  const bool out_aligned = reinterpret_cast<uintptr_t>(out) % 256 == 0;
  const DeviceBuffer destination =
      out_overlaps_frame || !out_aligned ? DeviceBuffer{} : DeviceBuffer{out, capacity, nullptr, nullptr};
  try {
    const DeviceBuffer chunk = cuda::run_inverse(pipeline, view, work, max_stream_bytes,
                                                cuda::side_by_side_for(work, info.original_bytes), destination);
    if (chunk.size != info.original_bytes || chunk.size > capacity) return std::nullopt;
    // As in inverse_on_device: statuses and the chunk in one synchronisation;
    // on a set status `out` holds garbage that the host path overwrites.
    const cuda::WordsOnHost words(work, lane, nullptr);
    if (chunk.size && chunk.data != out)
      cuda::check(cudaMemcpyAsync(out, chunk.data, chunk.size, cudaMemcpyDeviceToDevice, lane.stream), "chunk");
    cuda::check(cudaStreamSynchronize(lane.stream), "GPU pipeline inverse");
    if (words.any_status_set()) return std::nullopt;
    return chunk.size;
  } catch (const FormatError&) {
    return std::nullopt;  // the host decoder reports it
  }
}

}  // namespace

std::optional<int> device_of_pointer(const void* pointer) {
  if (!pointer) return std::nullopt;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    return std::nullopt;
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) return std::nullopt;
  return attributes.device;
}

std::unique_ptr<ChunkEncoder> make_resident_encoder(const uint8_t* chunk, size_t bytes, int device, const Policy&) {
  return std::make_unique<ResidentEncoder>(chunk, bytes, device);
}

std::unique_ptr<ChunkEncoder> make_through_host_encoder(const uint8_t* chunk, size_t bytes, int device,
                                                        const Policy& policy) {
  return std::make_unique<ThroughHostEncoder>(chunk, bytes, device, policy);
}

FrameOut store_raw_on_device(const uint8_t* chunk, const FrameInfo& description, FrameTarget target, int device) {
  FrameInfo info = description;
  cuda::DeviceContext& context = usable_context(device);
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  const size_t bytes = static_cast<size_t>(info.original_bytes);
  Bytes header = write_frame_header(info, {bytes}, 0);
  require_capacity(header.size() + bytes, target);
  const size_t at = header.size();
  FrameOut out;
  const uint32_t crc = copy_payload({{chunk, bytes}}, bytes, target.data + at, context, *lane);
  out.written = finish_device_frame(std::move(header), info, bytes, crc, target, *lane);
  return out;
}

Bytes read_device_frame_header(const uint8_t* frame, size_t frame_bytes, int device) {
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  // Headers are short (tens of bytes per stage): one read usually gets it all.
  constexpr size_t kFirstRead = 1024;
  Bytes header(std::min(frame_bytes, kFirstRead));
  cuda::ChunkWork work(context, *lane);
  work.read_back(frame, header.size(), header.data());
  const size_t header_bytes = frame_header_bytes(header.data(), header.size());
  if (header_bytes > header.size() && header_bytes <= frame_bytes) {
    header.resize(header_bytes);
    work.read_back(frame, header_bytes, header.data());
  }
  return header;
}

std::optional<size_t> decompress_device_resident(const Pipeline& pipeline, const FrameInfo& info,
                                                 const uint8_t* frame, uint8_t* out, size_t capacity,
                                                 size_t max_stream_bytes, int device) {
  if (!info.raw && !inverse_runs_on_device(pipeline)) return std::nullopt;
  cuda::DeviceContext& context = cuda::DeviceContext::of(device);
  if (context.broken()) throw Error("the GPU is unusable after an earlier CUDA error");
  cuda::CurrentDeviceGuard guard(device);
  cuda::LaneLease lane = context.lease();
  cuda::ChunkWork work(context, *lane);
  const uint8_t* payload = frame + info.header_bytes;
  const size_t payload_bytes = info.frame_bytes - info.header_bytes;
  // The payload's checksum runs beside the decode, which reads the streams
  // as they are (its kernels and the host's parsing refuse malformed streams
  // by themselves, whatever the checksum): the result stands only when the
  // checksum matches, else this throws and `out` holds whatever the decode
  // wrote, as after any failed call.
  cuda::ChecksumBeside checksum(context, *lane, {{payload, payload_bytes}}, payload_bytes);
  const auto require_checksum = [&] {
    if (checksum.value() != info.payload_crc) throw FormatError("FZM frame payload checksum mismatch (corrupted)");
  };
  if (info.original_bytes > capacity) {
    require_checksum();
    throw FormatError("frame decodes to " + std::to_string(info.original_bytes) + " bytes, more than the " +
                      std::to_string(capacity) + " allowed");
  }
  if (info.raw) {
    require_checksum();
    if (payload_bytes)
      cuda::check(cudaMemcpyAsync(out, payload, payload_bytes, cudaMemcpyDeviceToDevice, lane->stream), "raw frame");
    cuda::check(cudaStreamSynchronize(lane->stream), "raw frame");
    return payload_bytes;
  }
  const std::optional<size_t> decoded = decode_resident(pipeline, info, payload, out, capacity, max_stream_bytes,
                                                        work, *lane);
  require_checksum();
  return decoded;
}

}  // namespace fz::engine
