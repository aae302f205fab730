#include "thread_pool.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/cpu_features.hpp"

namespace fz::engine {
namespace {

thread_local bool tls_inside_worker = false;

// Items are about 16 KiB of work (one block), a few microseconds each; waking a
// parked thread costs tens of microseconds on a busy machine. With 4 items per
// thread, a 240 kB chunk read through h5py was still slower on two threads than
// on one (docs/PERFORMANCE.md), so each extra thread needs 16 items (256 KiB).
constexpr size_t kMinItemsPerThread = 16;

struct Job {
  size_t count = 0;
  const std::function<void(size_t)>* body = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  unsigned helpers_wanted = 0;  // pool threads that may join, beyond the caller
  unsigned helpers_joined = 0;  // guarded by the pool mutex
  std::mutex error_mutex;
  std::exception_ptr error;

  // Runs items until none are left; returns when this thread has nothing more to take.
  void work() {
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      try {
        (*body)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
      finished.fetch_add(1, std::memory_order_acq_rel);
    }
  }
};

class Pool {
 public:
  static Pool& instance() {
    // Leaked on purpose: worker threads must outlive static destruction order
    // problems when the plugin is unloaded at process exit.
    static Pool* pool = new Pool();
    return *pool;
  }

  void run(size_t count, const std::function<void(size_t)>& body, unsigned threads,
           size_t min_items_per_thread = kMinItemsPerThread) {
    if (count == 0) return;
    threads = static_cast<unsigned>(std::min<size_t>(threads, count / min_items_per_thread));
    if (threads <= 1 || count == 1 || tls_inside_worker) {
      for (size_t i = 0; i < count; ++i) body(i);
      return;
    }
    ensure_workers(threads - 1);
    Job job;
    job.count = count;
    job.body = &body;
    job.helpers_wanted = static_cast<unsigned>(std::min<size_t>(threads - 1, count - 1));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(&job);
    }
    wake_.notify_all();
    job.work();
    {
      // Unpublish before waiting so no new worker joins a finished job.
      std::unique_lock<std::mutex> lock(mutex_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      done_.wait(lock, [&] { return job.finished.load(std::memory_order_acquire) == count && active_on(&job) == 0; });
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  Pool() = default;

  void ensure_workers(unsigned wanted) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (workers_.size() < wanted) {
      workers_.emplace_back([this] { worker_loop(); });
      workers_.back().detach();
      active_.push_back(nullptr);
    }
  }

  size_t active_on(const Job* job) const {
    return static_cast<size_t>(std::count(active_.begin(), active_.end(), job));
  }

  void worker_loop() {
    tls_inside_worker = true;
    size_t slot;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot = next_slot_++;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Job* job = nullptr;
      wake_.wait(lock, [&] {
        for (Job* j : jobs_)
          if (j->helpers_joined < j->helpers_wanted && j->next.load(std::memory_order_relaxed) < j->count) {
            job = j;
            return true;
          }
        return false;
      });
      ++job->helpers_joined;
      active_[slot] = job;
      lock.unlock();
      job->work();
      lock.lock();
      active_[slot] = nullptr;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Job*> jobs_;
  std::vector<std::thread> workers_;
  std::vector<Job*> active_;  // which job each worker is running (by slot)
  size_t next_slot_ = 0;
};

class PoolExecutor final : public Executor {
 public:
  // Made on the calling thread, so it takes that thread's CPU-features
  // ceiling (policy.hpp, CpuFeaturesScope) to the workers of its loops.
  explicit PoolExecutor(unsigned threads) : threads_(threads), optional_isa_(optional_isa_allowed_here()) {}
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    run(count, body, kMinItemsPerThread);
  }
  void parallel_tasks(size_t count, const std::function<void(size_t)>& body) const override { run(count, body, 1); }
  unsigned concurrency() const override { return threads_; }

 private:
  void run(size_t count, const std::function<void(size_t)>& body, size_t min_items_per_thread) const {
    if (optional_isa_) {
      Pool::instance().run(count, body, threads_, min_items_per_thread);
      return;
    }
    const std::function<void(size_t)> held = [&body](size_t i) {
      bool& allowed = optional_isa_allowed_here();
      const bool saved = allowed;
      allowed = false;
      try {
        body(i);
      } catch (...) {
        allowed = saved;
        throw;
      }
      allowed = saved;
    };
    Pool::instance().run(count, held, threads_, min_items_per_thread);
  }

  unsigned threads_;
  bool optional_isa_;
};

}  // namespace

unsigned usable_cpu_count() {
#if defined(__linux__)
  // The CPUs this thread may run on: an MPI launcher binds each rank to one
  // core or a few (Open MPI does by default), and a pool of every hardware
  // thread on one core runs slower than one thread (docs/PERFORMANCE.md,
  // "Parallel HDF5").
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<unsigned>(count);
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned default_thread_count() {
  // Read once per process, not once per chunk (reading /sys per call cost
  // 20% of small-chunk reads).
  static const unsigned usable = usable_cpu_count();
  return usable;
}

std::unique_ptr<Executor> make_pool_executor(unsigned threads) {
  return std::make_unique<PoolExecutor>(threads ? threads : default_thread_count());
}

}  // namespace fz::engine
