// Deliberate failures, for tests of the fallback paths (a failing pipeline must
// still store the chunk; later: CUDA allocation failure, no device). Set only by
// tests; each counter is the number of upcoming operations that fail.
#pragma once

#include <atomic>

namespace fz::engine::fault_injection {

// The next N pipeline runs in compress() throw as if a stage had failed.
extern std::atomic<int> pipeline_failures;

// Throws std::runtime_error("injected fault") and decrements `counter` if positive.
void maybe_fail(std::atomic<int>& counter);

}  // namespace fz::engine::fault_injection
