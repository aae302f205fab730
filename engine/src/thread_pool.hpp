// The CPU backend's worker threads: one process-wide pool, shared by every
// engine call, that implements fz::Executor. Calls from several threads at once
// are fine (each parallel_for is its own job); a parallel_for issued from inside
// a worker runs inline, so nesting cannot deadlock.
#pragma once

#include <memory>

#include "common/executor.hpp"

namespace fz::engine {

// An executor that uses at most `threads` threads (the caller included) of the
// shared pool; 0 means all hardware threads. Its loops run under the calling
// thread's CPU-features ceiling (policy.hpp).
std::unique_ptr<Executor> make_pool_executor(unsigned threads);

// The CPUs the calling thread may run on (its affinity mask on Linux, else
// std::thread::hardware_concurrency()), at least 1.
unsigned usable_cpu_count();

// usable_cpu_count() of the first call, kept for the process: what 0 threads
// ("all cores") means.
unsigned default_thread_count();

}  // namespace fz::engine
