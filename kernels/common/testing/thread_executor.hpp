// A std::thread Executor for tests: proves that a stage's bytes do not depend
// on the thread count or on the order in which work items are scheduled.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/executor.hpp"

namespace fz::testing {

// A real thread pool is not needed to prove thread-count independence: a few
// threads pulling item indices from a shared counter give a scheduling order
// that differs from the serial one. Hands items to the threads in whatever
// order they grab them; the first exception of a body is rethrown after all
// threads have finished.
class ThreadExecutor final : public Executor {
 public:
  explicit ThreadExecutor(unsigned threads) : threads_(threads) {}
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    std::atomic<size_t> next{0};
    std::exception_ptr first_error;
    std::mutex error_mutex;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads_; ++t) {
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < count;) {
          try {
            body(i);
          } catch (...) {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!first_error) first_error = std::current_exception();
          }
        }
      });
    }
    for (auto& thread : pool) thread.join();
    if (first_error) std::rethrow_exception(first_error);
  }
  unsigned concurrency() const override { return threads_; }

 private:
  unsigned threads_;
};

}  // namespace fz::testing
