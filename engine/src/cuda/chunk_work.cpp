// ChunkWork's lifetime and its branches (chunk_work.hpp): independent stages
// of one chunk on lanes of their own.
#include "cuda/chunk_work.hpp"

#include <exception>

#include "thread_pool.hpp"

namespace fz::engine::cuda {

struct ChunkWork::Branch {
  explicit Branch(DeviceContext& context) : lease(context.lease()), work(context, *lease) {}
  LaneLease lease;
  ChunkWork work;
};

namespace {

// An event for ordering streams only (no timing: cheaper to record and wait on).
cudaEvent_t ordering_event() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate (side by side)");
  return event;
}

// `own` followed by `part` of each branch's work.
template <typename Branches, typename Part>
std::vector<uint32_t*> with_branches(std::vector<uint32_t*> own, const Branches& branches, Part&& part) {
  for (const auto& branch : branches) {
    const std::vector<uint32_t*> more = part(branch->work);
    own.insert(own.end(), more.begin(), more.end());
  }
  return own;
}

}  // namespace

ChunkWork::ChunkWork(DeviceContext& context, Lane& lane) : context_(context), lane_(lane) {
  if (lane.arena_wanted > lane.arena_capacity) {
    context.release(lane.arena, lane.stream);
    lane.arena = nullptr;
    lane.arena_capacity = 0;
    lane.arena = static_cast<uint8_t*>(context.allocate(lane.arena_wanted, lane.stream));
    lane.arena_capacity = lane.arena_wanted;
  }
}

ChunkWork::~ChunkWork() {
  // Every branch was joined into this lane when it finished (side_by_side),
  // so what this lane gives back below is no longer read there. The other
  // way round, this lane's later work may have read the branches' buffers:
  // their streams wait for it before their memory goes back and before their
  // lanes serve another call. (Best effort: a failure here leaves the
  // branches' streams unordered, which only a sticky error, after which the
  // device is not used again, can cause.)
  if (!branches_.empty()) {
    cudaEvent_t done = nullptr;
    if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess) {
      if (cudaEventRecord(done, lane_.stream) == cudaSuccess)
        for (const auto& branch : branches_) (void)cudaStreamWaitEvent(branch->lease->stream, done, 0);
      (void)cudaEventDestroy(done);
    } else {
      (void)cudaGetLastError();
    }
  }
  for (void* p : allocations_) context_.release(p, lane_.stream);
  lane_.arena_wanted = std::min(std::max(lane_.arena_wanted, requested_), kArenaMaxBytes);
  branches_.clear();  // their memory goes back on their own streams
}

void ChunkWork::side_by_side(size_t count, const std::function<void(size_t, DeviceWork&)>& body) {
  while (branches_.size() < count) branches_.push_back(std::make_unique<Branch>(context_));
  const cudaEvent_t start = ordering_event();
  std::vector<cudaEvent_t> finished(count, nullptr);
  std::exception_ptr error;
  try {
    check(cudaEventRecord(start, lane_.stream), "cudaEventRecord (side by side)");
    for (size_t k = 0; k < count; ++k) finished[k] = ordering_event();
    // One host thread a branch (they mostly wait on the GPU), the caller's
    // among them; CUDA calls on a pool thread need the lane's device current.
    make_pool_executor(static_cast<unsigned>(count))->parallel_tasks(count, [&](size_t k) {
      const CurrentDeviceGuard guard(lane_.device);
      Branch& branch = *branches_[k];
      check(cudaStreamWaitEvent(branch.lease->stream, start, 0), "cudaStreamWaitEvent (side by side)");
      try {
        body(k, branch.work);
      } catch (...) {
        (void)cudaEventRecord(finished[k], branch.lease->stream);
        throw;
      }
      check(cudaEventRecord(finished[k], branch.lease->stream), "cudaEventRecord (side by side)");
    });
  } catch (...) {
    error = std::current_exception();
  }
  // Joined whatever happened: this lane's later work (and its memory's
  // release) comes after every branch's.
  for (cudaEvent_t event : finished)
    if (event) (void)cudaStreamWaitEvent(lane_.stream, event, 0), (void)cudaEventDestroy(event);
  (void)cudaEventDestroy(start);
  if (error) std::rethrow_exception(error);
}

std::vector<uint32_t*> ChunkWork::status_words() const {
  return with_branches(status_words_, branches_, [](const ChunkWork& work) { return work.status_words(); });
}

std::vector<uint32_t*> ChunkWork::word_blocks() const {
  return with_branches(word_blocks_, branches_, [](const ChunkWork& work) { return work.word_blocks(); });
}

}  // namespace fz::engine::cuda
