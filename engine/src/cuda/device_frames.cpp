#include "cuda/device_frames.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>

#include "crc32c.hpp"
#include "execution.hpp"
#include "cuda/transfers.hpp"

namespace fz::engine::cuda {
namespace {

// Enqueues the download of the stored streams (`total` bytes), back to back,
// into the lane's staging buffer, which it returns; valid once the stream is
// synchronised.
const uint8_t* enqueue_stored_download(const std::vector<uint8_t>& ids, const std::vector<DeviceBuffer>& buffers,
                                       const std::vector<uint64_t>& sizes, size_t total, Lane& lane) {
  if (total > lane.staging.capacity()) check(cudaStreamSynchronize(lane.stream), "upload");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(total, 1));
  size_t at = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (sizes[k])
      check(cudaMemcpyAsync(staging + at, buffers[ids[k]].data, sizes[k], cudaMemcpyDeviceToHost, lane.stream),
                  "stream download");
    at += sizes[k];
  }
  return staging;
}

// Streams whose allocations come to no more than this go down whole with
// their sizes, in one synchronisation instead of two (sizes, then streams):
// the extra bytes cost less than a round trip (8 us; 128 KiB take 3 us).
constexpr size_t kOneTripMaxBytes = size_t{128} << 10;

// Whether a frame of `length` bytes goes into the target.
bool goes_to_target(const FrameTarget& target, size_t length, const FrameInfo& info) {
  return target.data != nullptr && length <= target.capacity && length < info.original_bytes;
}

// The frame of a small chunk in one trip (in the target when it goes there),
// or nothing when a stored stream's allocation is unknown or the streams are
// too large for it.
std::optional<FrameOut> small_frame_from_device(const std::vector<uint8_t>& ids,
                                                const std::vector<DeviceBuffer>& buffers, FrameInfo& info,
                                                Lane& lane, FrameTarget target) {
  size_t bound = 0;
  for (uint8_t id : ids) {
    const DeviceBuffer& b = buffers[id];
    if (b.device_size && !b.capacity) return std::nullopt;
    bound += b.device_size ? b.capacity : b.size;
  }
  if (bound > kOneTripMaxBytes) return std::nullopt;
  if (bound > lane.staging.capacity()) check(cudaStreamSynchronize(lane.stream), "download");
  uint8_t* staging = lane.staging.reserve(std::max<size_t>(bound, 1));
  auto* device_sizes = reinterpret_cast<uint64_t*>(lane.scalars.reserve(8 * std::max<size_t>(ids.size(), 1)));
  std::vector<size_t> at(ids.size());
  size_t offset = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceBuffer& b = buffers[ids[k]];
    const size_t whole = b.device_size ? b.capacity : b.size;
    at[k] = offset;
    if (b.device_size)
      check(cudaMemcpyAsync(device_sizes + k, b.device_size, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  lane.stream),
                  "size download");
    if (whole)
      check(cudaMemcpyAsync(staging + offset, b.data, whole, cudaMemcpyDeviceToHost, lane.stream),
                  "stream download");
    offset += whole;
  }
  check(cudaStreamSynchronize(lane.stream), "stream download");
  std::vector<uint64_t> sizes(ids.size());
  uint32_t crc = 0;
  size_t total = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceBuffer& b = buffers[ids[k]];
    sizes[k] = b.device_size ? device_sizes[k] : b.size;
    total += sizes[k];
  }
  if (outgrew_room(ids, buffers, sizes, write_frame_header(info, sizes, 0).size() + total, info.original_bytes)) {
    FrameOut out;
    out.not_smaller = true;
    return out;
  }
  for (size_t k = 0; k < ids.size(); ++k) crc = engine::crc32c(staging + at[k], sizes[k], crc);
  const Bytes header = write_frame_header(info, sizes, crc);
  FrameOut out;
  uint8_t* frame = target.data;
  if (goes_to_target(target, header.size() + total, info)) {
    out.written = header.size() + total;
  } else {
    out.frame.resize(header.size() + total);
    frame = out.frame.data();
  }
  std::memcpy(frame, header.data(), header.size());
  frame += header.size();
  for (size_t k = 0; k < ids.size(); ++k) {
    std::memcpy(frame, staging + at[k], sizes[k]);
    frame += sizes[k];
  }
  return out;
}

}  // namespace

// The stored streams' sizes, those only the device knows read back in one copy.
std::vector<uint64_t> stored_sizes(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   Lane& lane) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  std::vector<uint64_t> sizes(ids.size());
  auto* pinned = reinterpret_cast<uint64_t*>(lane.scalars.reserve(8 * std::max<size_t>(ids.size(), 1)));
  bool any_on_device = false;
  for (size_t k = 0; k < ids.size(); ++k)
    if (buffers[ids[k]].device_size) {
      check(cudaMemcpyAsync(pinned + k, buffers[ids[k]].device_size, sizeof(uint64_t), cudaMemcpyDeviceToHost,
                                  lane.stream),
                  "size download");
      any_on_device = true;
    }
  if (any_on_device) check(cudaStreamSynchronize(lane.stream), "GPU pipeline");
  for (size_t k = 0; k < ids.size(); ++k) sizes[k] = buffers[ids[k]].device_size ? pinned[k] : buffers[ids[k]].size;
  return sizes;
}

bool outgrew_room(const std::vector<uint8_t>& ids, const std::vector<DeviceBuffer>& buffers,
                  const std::vector<uint64_t>& sizes, uint64_t frame_bytes, uint64_t chunk_bytes) {
  bool outgrew = false;
  for (size_t k = 0; k < ids.size(); ++k) {
    const DeviceBuffer& b = buffers[ids[k]];
    outgrew |= b.device_size && b.capacity && sizes[k] > b.capacity;
  }
  if (outgrew && frame_bytes < chunk_bytes)
    throw BackendGaveUp("a GPU stage's stream outgrew its room in a frame smaller than the chunk");
  return outgrew;
}

// The stored streams, downloaded back to back; the Bytes are cut from them.
std::vector<Bytes> download_stored(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   Lane& lane) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  const std::vector<uint64_t> sizes = stored_sizes(pipeline, buffers, lane);
  size_t total = 0;
  for (uint64_t s : sizes) total += s;
  // No frame here to give way to the raw one (a frame of 0 bytes is always
  // the smaller): a stream beyond its room throws BackendGaveUp.
  (void)outgrew_room(ids, buffers, sizes, 0, 1);
  const uint8_t* out = enqueue_stored_download(ids, buffers, sizes, total, lane);
  check(cudaStreamSynchronize(lane.stream), "stream download");
  size_t at = 0;
  std::vector<Bytes> stored;
  for (size_t k = 0; k < ids.size(); ++k) {
    stored.emplace_back(out + at, out + at + sizes[k]);
    at += sizes[k];
  }
  return stored;
}

// The checksum of the concatenated device spans (`total` bytes), enqueued:
// a word of the chunk's word blocks, so it comes back with the status words
// (WordsOnHost) or on its own.
uint32_t* enqueue_crc32c(const std::vector<DeviceSpan>& spans, size_t total, ChunkWork& work,
                         Lane& lane) {
  uint32_t* crc = work.zeroed_word();
  void* scratch = work.allocate(std::max<size_t>(crc32c_scratch_bytes(total, spans.size()), 1));
  work.check(crc32c_spans(spans.data(), spans.size(), crc, scratch, lane.stream), "CRC32C (GPU)");
  work.release(scratch);
  return crc;
}

ChecksumBeside::ChecksumBeside(DeviceContext& context, Lane& after, const std::vector<DeviceSpan>& spans,
                               size_t total)
    : lane_(context.lease()), work_(context, *lane_) {
  cudaEvent_t ready = nullptr;
  check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate (checksum)");
  const cudaError_t recorded = cudaEventRecord(ready, after.stream);
  const cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(lane_->stream, ready, 0) : recorded;
  (void)cudaEventDestroy(ready);  // (destroyed once the wait is enqueued: the wait still holds)
  check(waited, "cudaStreamWaitEvent (checksum)");
  const uint32_t* crc = enqueue_crc32c(spans, total, work_, *lane_);
  auto* host = reinterpret_cast<uint32_t*>(lane_->scalars.reserve(sizeof(uint32_t)));
  check(cudaMemcpyAsync(host, crc, sizeof(uint32_t), cudaMemcpyDeviceToHost, lane_->stream), "checksum download");
  host_ = host;
}

ChecksumBeside::~ChecksumBeside() {
  if (!waited_ && cudaStreamSynchronize(lane_->stream) != cudaSuccess) (void)cudaGetLastError();
}

uint32_t ChecksumBeside::value() {
  if (!waited_) {
    check(cudaStreamSynchronize(lane_->stream), "checksum (GPU)");
    waited_ = true;
  }
  return *host_;
}

FrameOut frame_from_device(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers, FrameInfo info,
                                   ChunkWork& work, Lane& lane, const Executor& exec, FrameTarget target) {
  const std::vector<uint8_t> ids = pipeline.stored_buffers();
  if (std::optional<FrameOut> frame = small_frame_from_device(ids, buffers, info, lane, target))
    return std::move(*frame);
  const std::vector<uint64_t> sizes = stored_sizes(pipeline, buffers, lane);
  std::vector<DeviceSpan> spans;
  size_t total = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    spans.push_back({buffers[ids[k]].data, static_cast<size_t>(sizes[k])});
    total += sizes[k];
  }
  // A frame no smaller than the chunk gives way to the raw one: not brought
  // back at all (noise under a tight bound makes Lorenzo's outliers several
  // times the chunk, which took that much host memory only to be dropped).
  const uint64_t frame_bytes = write_frame_header(info, sizes, 0).size() + total;
  if (outgrew_room(ids, buffers, sizes, frame_bytes, info.original_bytes) || frame_bytes >= info.original_bytes) {
    FrameOut out;
    out.not_smaller = true;
    return out;
  }
  const bool crc_on_device = total >= kDeviceCrcMinBytes;
  const uint32_t* crc = crc_on_device ? enqueue_crc32c(spans, total, work, lane) : nullptr;
  const uint8_t* staging = enqueue_stored_download(ids, buffers, sizes, total, lane);
  const WordsOnHost words(work, lane, crc);
  // The frame's memory is made (zeroed, its pages faulted in) while the GPU
  // finishes, unless it goes to the target: the header's length does not
  // depend on the checksum, which is set once known.
  Bytes header = write_frame_header(info, sizes, 0);
  const size_t header_bytes = header.size();
  const bool to_target = goes_to_target(target, header_bytes + total, info);
  FrameOut out;
  if (!to_target) out.frame.resize(header_bytes + total);
  check(cudaStreamSynchronize(lane.stream), "stream download");
  set_payload_crc(header, info, crc_on_device ? words.extra() : engine::crc32c(staging, total));
  // Nothing below throws: the target (maybe the chunk itself) is written only now.
  uint8_t* frame = to_target ? target.data : out.frame.data();
  std::memcpy(frame, header.data(), header_bytes);
  parallel_copy(frame + header_bytes, staging, total, exec);
  if (to_target) out.written = header_bytes + total;
  return out;
}

}  // namespace fz::engine::cuda
