// Device memory for one chunk on one lane (device_context.hpp), as the GPU
// stages ask for it (stage.hpp, DeviceWork), and the status words its
// decoders set. Only compiled with CUDA.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/device_context.hpp"
#include "stage_names.hpp"

namespace fz::engine::cuda {

// The most a lane's arena grows to (Lane::arena): chunks that need more take
// the rest from the pool, where its cost is small beside theirs.
constexpr size_t kArenaMaxBytes = size_t{64} << 20;

// Device memory for one chunk: from the lane's arena while it lasts, then from
// the pool; all of it given back (stream-ordered) when the chunk is done.
class ChunkWork final : public DeviceWork {
 public:
  ChunkWork(DeviceContext& context, Lane& lane) : context_(context), lane_(lane) {
    if (lane.arena_wanted > lane.arena_capacity) {
      context.release(lane.arena, lane.stream);
      lane.arena = nullptr;
      lane.arena_capacity = 0;
      lane.arena = static_cast<uint8_t*>(context.allocate(lane.arena_wanted, lane.stream));
      lane.arena_capacity = lane.arena_wanted;
    }
  }
  ~ChunkWork() override {
    for (void* p : allocations_) context_.release(p, lane_.stream);
    lane_.arena_wanted = std::min(std::max(lane_.arena_wanted, requested_), kArenaMaxBytes);
  }
  uint8_t* allocate(size_t bytes) override {
    DeviceContext::take_injected_allocation_failure();  // the arena counts as an allocation too
    const size_t aligned = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;  // as the pool aligns
    requested_ += aligned;
    if (lane_.arena && arena_used_ + aligned <= lane_.arena_capacity) {
      uint8_t* p = lane_.arena + arena_used_;
      arena_used_ += aligned;
      return p;
    }
    void* p = context_.allocate(bytes, lane_.stream);
    allocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return lane_.stream; }
  void check(int cuda_error, const char* what) override { cuda::check(static_cast<cudaError_t>(cuda_error), what); }
  uint32_t* status_word() override {
    uint32_t* word = zeroed_word();
    status_words_.push_back(word);
    return word;
  }
  void read_back(const uint8_t* device, size_t bytes, uint8_t* host) override {
    if (!bytes) return;
    uint8_t* pinned = lane_.scalars.reserve(bytes);
    check(cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, lane_.stream), "read back");
    check(cudaStreamSynchronize(lane_.stream), "read back");
    std::memcpy(host, pinned, bytes);
  }
  const std::vector<uint32_t*>& status_words() const { return status_words_; }

  // A zeroed device word. Status words and the like sit side by side in
  // blocks of kBlockWords, each cleared by one memset, so that one copy can
  // read them all back (WordsOnHost).
  static constexpr size_t kBlockWords = 16;
  uint32_t* zeroed_word() {
    if (word_blocks_.empty() || words_in_last_block_ == kBlockWords) {
      auto* block = reinterpret_cast<uint32_t*>(allocate(kBlockWords * sizeof(uint32_t)));
      check(cudaMemsetAsync(block, 0, kBlockWords * sizeof(uint32_t), lane_.stream), "status words");
      word_blocks_.push_back(block);
      words_in_last_block_ = 0;
    }
    return word_blocks_.back() + words_in_last_block_++;
  }
  const std::vector<uint32_t*>& word_blocks() const { return word_blocks_; }
  size_t words_in_last_block() const { return words_in_last_block_; }

 private:
  DeviceContext& context_;
  Lane& lane_;
  std::vector<void*> allocations_;  // from the pool
  size_t arena_used_ = 0;
  size_t requested_ = 0;
  std::vector<uint32_t*> status_words_;
  std::vector<uint32_t*> word_blocks_;
  size_t words_in_last_block_ = 0;
};

}  // namespace fz::engine::cuda
