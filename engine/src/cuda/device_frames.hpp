// Frames from streams in device memory: their sizes and checksums read back
// in few copies, the streams downloaded back to back, and the status words the
// GPU decoders set. Only compiled with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/executor.hpp"
#include "cuda/chunk_work.hpp"
#include "cuda/crc32c_cuda.hpp"
#include "cuda/device_context.hpp"
#include "execution.hpp"
#include "frame.hpp"
#include "pipeline.hpp"

namespace fz::engine::cuda {

// The stored streams' sizes, those only the device knows read back in one copy.
std::vector<uint64_t> stored_sizes(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   Lane& lane);

// Checks the stored streams' lengths against the room their stages gave
// them (DeviceBuffer::capacity, where said) before anything is copied. A
// stage may report a length beyond its room only where that length alone
// makes the frame no smaller than the chunk (Lorenzo's outliers, whose room
// stops at the chunk's size: lorenzo_stage_cuda.cpp), so the raw frame is
// stored and the stream never read. Returns whether one did; throws
// BackendGaveUp (the next backend takes the chunk) when one did and the frame
// (`frame_bytes`: header and streams) would be smaller than the chunk.
bool outgrew_room(const std::vector<uint8_t>& ids, const std::vector<DeviceBuffer>& buffers,
                  const std::vector<uint64_t>& sizes, uint64_t frame_bytes, uint64_t chunk_bytes);

// The stored streams, downloaded back to back; the Bytes are cut from them.
std::vector<Bytes> download_stored(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers,
                                   Lane& lane);

// The frame of a chunk whose stored streams are on the device: their sizes
// and payload CRC32C (computed there) come back in one small read, the
// streams in one download through the staging buffer, and the frame is the
// host-built header followed by a parallel copy of the streams (no pass of
// the host over the payload for its checksum). The frame goes into `target`
// when it fits there and is smaller than the chunk (FrameTarget), else into
// FrameOut::frame.
FrameOut frame_from_device(const Pipeline& pipeline, const std::vector<DeviceBuffer>& buffers, FrameInfo info,
                           ChunkWork& work, Lane& lane, const Executor& exec, FrameTarget target);

// Payloads of this size or more are checksummed on the GPU, both ways; smaller
// ones on the host, where it costs less than the GPU's launches (the fixed
// cost per chunk counts most for them): the host's CRC32C runs at 4-8 GB/s,
// 64 KiB in 8-16 us, about what the GPU's launches and read-back cost.
constexpr size_t kDeviceCrcMinBytes = size_t{64} << 10;

// The checksum of the concatenated device spans (`total` bytes), enqueued:
// a word of the chunk's word blocks, so it comes back with the status words
// (WordsOnHost) or on its own.
uint32_t* enqueue_crc32c(const std::vector<DeviceSpan>& spans, size_t total, ChunkWork& work,
                         Lane& lane);

// The checksum of the concatenated device spans computed on a lane of its
// own, beside what the caller's lane does next (the payload's copy into the
// frame, the stages' decode): it needs nothing else of the chunk, and it runs
// on the SMs the other work's memory waits leave idle, instead of after it
// and one round trip before it (issue 31: about 50 us of fzgpu's 0.8 ms
// decode of 512 MiB). It starts after the work enqueued on `after` so far,
// which may still be making the spans. value() waits for it alone; leaving
// scope waits too, so the spans outlive every read of them.
class ChecksumBeside {
 public:
  ChecksumBeside(DeviceContext& context, Lane& after, const std::vector<DeviceSpan>& spans, size_t total);
  ~ChecksumBeside();
  ChecksumBeside(const ChecksumBeside&) = delete;
  ChecksumBeside& operator=(const ChecksumBeside&) = delete;
  uint32_t value();

 private:
  LaneLease lane_;
  ChunkWork work_;
  const uint32_t* host_ = nullptr;
  bool waited_ = false;
};

// The decoders' status words (and `extra`, a checksum: both from
// ChunkWork::zeroed_word) read back with whatever the caller enqueues next,
// in one synchronisation; valid once the stream is synchronised. Words in one
// block come back in one copy.
class WordsOnHost {
 public:
  WordsOnHost(ChunkWork& work, Lane& lane, const uint32_t* extra) {
    constexpr size_t kWords = ChunkWork::kBlockWords;
    // Whole blocks (each zeroed whole when made), the branches' too.
    const std::vector<uint32_t*> blocks = work.word_blocks();
    auto* pinned = reinterpret_cast<uint32_t*>(lane.scalars.reserve(std::max<size_t>(blocks.size(), 1) * kWords * 4));
    for (size_t k = 0; k < blocks.size(); ++k)
      check(cudaMemcpyAsync(pinned + k * kWords, blocks[k], kWords * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            lane.stream),
            "status download");
    words_ = pinned;
    // Where a word lands: its block's place, then its place in the block.
    auto slot = [&](const uint32_t* word) {
      for (size_t k = 0; k < blocks.size(); ++k)
        if (std::less_equal<const uint32_t*>()(blocks[k], word) && std::less<const uint32_t*>()(word, blocks[k] + kWords))
          return k * kWords + static_cast<size_t>(word - blocks[k]);
      throw std::logic_error("a word read back that ChunkWork::zeroed_word did not make");
    };
    for (const uint32_t* w : work.status_words()) status_at_.push_back(slot(w));
    if (extra) extra_at_ = slot(extra);
  }
  // A GPU decoder found its stream malformed.
  bool any_status_set() const {
    for (size_t at : status_at_)
      if (words_[at] != 0) return true;
    return false;
  }
  uint32_t extra() const { return words_[extra_at_]; }

 private:
  const uint32_t* words_ = nullptr;
  std::vector<size_t> status_at_;
  size_t extra_at_ = 0;
};

}  // namespace fz::engine::cuda
