// Device memory for one chunk on one lane (device_context.hpp), as the GPU
// stages ask for it (stage.hpp, DeviceWork), and the status words its
// decoders set. Only compiled with CUDA.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cuda/device_context.hpp"
#include "stage_names.hpp"

namespace fz::engine::cuda {

// The most a lane's arena grows to (Lane::arena): chunks that need more take
// the rest from the pool, where its cost is small beside theirs.
constexpr size_t kArenaMaxBytes = size_t{64} << 20;

// Device memory for one chunk: from the lane's arena while it lasts, then from
// the pool; all of it given back (stream-ordered) when the chunk is done.
// Independent stages of the chunk may run side by side on lanes of their own
// (side_by_side), each with a ChunkWork of its own kept until this one ends.
class ChunkWork final : public DeviceWork {
 public:
  ChunkWork(DeviceContext& context, Lane& lane);  // (chunk_work.cpp, as the rest of its lifetime)
  ~ChunkWork() override;
  ChunkWork(const ChunkWork&) = delete;
  ChunkWork& operator=(const ChunkWork&) = delete;

  // Runs body(k, work_k) for every k < count at the same time, each on a lane
  // of its own (leased for as long as this chunk lasts, with its own device
  // memory, pinned read-back buffer and status words) and a host thread of
  // its own, since stages read values back: the three code groups' ANS
  // stages of cuszhi-cr, whose small groups are chains of dependent steps
  // that leave most of the GPU idle (docs/PERFORMANCE.md). Every branch
  // starts after what this chunk's lane enqueued so far, and what the lane
  // enqueues afterwards waits for every branch. The first exception a body
  // throws is rethrown once all are done. (chunk_work.cpp)
  void side_by_side(size_t count, const std::function<void(size_t, DeviceWork&)>& body);
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
  // The offered place (offer_rebuilt) when it holds `bytes`, once.
  uint8_t* allocate_rebuilt(size_t bytes) override {
    uint8_t* offered = offered_;
    const bool fits = offered && bytes <= offered_bytes_;
    offered_ = nullptr;
    offered_bytes_ = 0;
    return fits ? offered : allocate(bytes);
  }
  // Pool memory goes back at once, stream-ordered (the pool hands it to this
  // chunk's later allocations, or another lane's once its kernels are done);
  // the arena's stays until the chunk ends. Pointers this work did not
  // allocate (a frame's streams, a branch's buffers) are left alone.
  void release(const void* data) override {
    const auto it = std::find(allocations_.begin(), allocations_.end(), data);
    if (it == allocations_.end()) return;
    context_.release(*it, lane_.stream);
    allocations_.erase(it);
  }
  // Where the next allocate_rebuilt() may put its stream: `bytes` at `data`
  // (256-byte aligned, not overlapping anything the inverse reads), or
  // nothing with nullptr.
  void offer_rebuilt(uint8_t* data, size_t bytes) {
    offered_ = data;
    offered_bytes_ = data ? bytes : 0;
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
  // This chunk's status words and word blocks, its branches' included.
  std::vector<uint32_t*> status_words() const;

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
  std::vector<uint32_t*> word_blocks() const;

 private:
  struct Branch;

  DeviceContext& context_;
  Lane& lane_;
  std::vector<void*> allocations_;  // from the pool
  size_t arena_used_ = 0;
  size_t requested_ = 0;
  uint8_t* offered_ = nullptr;
  size_t offered_bytes_ = 0;
  std::vector<uint32_t*> status_words_;
  std::vector<uint32_t*> word_blocks_;
  size_t words_in_last_block_ = 0;
  std::vector<std::unique_ptr<Branch>> branches_;
};

}  // namespace fz::engine::cuda
