// How a CPU kernel runs independent work items. Kernels split their work into
// items whose results do not depend on how the items are scheduled, so output
// bytes are the same with one thread or many (docs/FORMAT.md section 0, rule 4).
#pragma once

#include <cstddef>
#include <functional>

namespace fz {

class Executor {
 public:
  virtual ~Executor() = default;
  // Calls body(i) once for every i in [0, count), possibly concurrently, and
  // returns when all calls have returned. If a body throws, the first exception
  // is rethrown after the others have finished.
  virtual void parallel_for(size_t count, const std::function<void(size_t)>& body) const = 0;
  // The same for a few heavy items (each a millisecond of work or so, e.g. a
  // whole pipeline on a sample block): where parallel_for would keep a
  // handful of items on the calling thread because waking threads costs more
  // than small items gain, this gives each item a thread of its own.
  virtual void parallel_tasks(size_t count, const std::function<void(size_t)>& body) const {
    parallel_for(count, body);
  }
  virtual unsigned concurrency() const = 0;
};

// Runs every item on the calling thread, in order.
const Executor& serial_executor();

}  // namespace fz
