// Deliberate failures, for tests of the fallback paths (a failing pipeline must
// still store the chunk; later: CUDA allocation failure, no device). Set only by
// tests; each counter is the number of upcoming operations that fail.
#pragma once

#include <atomic>
#include <cstdint>

namespace fz::engine::fault_injection {

// The next N pipeline runs in compress() throw as if a stage had failed.
extern std::atomic<int> pipeline_failures;
// The next N device allocations fail as if the GPU were out of memory.
extern std::atomic<int> device_allocation_failures;
// When >= 0, what available_memory_bytes() reports (memory_budget.hpp).
extern std::atomic<int64_t> available_memory;

// True (and one fewer pending) when `counter` is positive.
bool take(std::atomic<int>& counter);
// Throws std::runtime_error("injected fault") when take(counter).
void maybe_fail(std::atomic<int>& counter);

}  // namespace fz::engine::fault_injection
