#include "fault_injection.hpp"

#include <stdexcept>

namespace fz::engine::fault_injection {

std::atomic<int> pipeline_failures{0};
std::atomic<int> device_allocation_failures{0};
std::atomic<int64_t> available_memory{-1};

bool take(std::atomic<int>& counter) {
  int pending = counter.load();
  while (pending > 0) {
    if (counter.compare_exchange_weak(pending, pending - 1)) return true;
  }
  return false;
}

void maybe_fail(std::atomic<int>& counter) {
  if (take(counter)) throw std::runtime_error("injected fault");
}

}  // namespace fz::engine::fault_injection
