// Which optional x86-64 instruction sets the kernels may use. The build
// targets baseline x86-64 (SSE2) so that one plugin binary runs everywhere;
// the hottest loops also have AVX2 versions, chosen at run time. Every such
// version computes exactly what the baseline one does (same operations,
// wider registers), so frames and values never depend on the CPU.
//
// A caller may hold a thread to the baseline paths (fz::Options::cpu_features,
// for comparisons): the engine sets the thread's ceiling for the length of a
// call and its thread pool carries it to the workers of that call's loops.
// Tests switch the paths process-wide with set_optional_isa_for_testing.
#pragma once

#include <atomic>

namespace fz {

namespace detail {
inline std::atomic<int>& avx2_state() {  // -1 unknown, 0 no, 1 yes
  static std::atomic<int> state{-1};
  return state;
}
}  // namespace detail

// This thread's ceiling: true lets it use what the CPU has, false holds it to
// baseline x86-64.
inline bool& optional_isa_allowed_here() {
  thread_local bool allowed = true;
  return allowed;
}

inline bool cpu_has_avx2() {
  if (!optional_isa_allowed_here()) return false;
  int state = detail::avx2_state().load(std::memory_order_relaxed);
  if (state < 0) {
#if defined(__x86_64__) && defined(__GNUC__)
    state = __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    state = 0;
#endif
    detail::avx2_state().store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

// Tests: force the optional paths off (false) or back to what the CPU has (true).
inline void set_optional_isa_for_testing(bool allowed) {
  detail::avx2_state().store(-1, std::memory_order_relaxed);
  if (!allowed) detail::avx2_state().store(0, std::memory_order_relaxed);
}

}  // namespace fz
