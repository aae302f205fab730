// The floating-point environment every kernel computes in (docs/FORMAT.md
// section 0, rule 5): round to nearest, no flush-to-zero or denormals-are-zero,
// exceptions masked, whatever the host application left in the thread's
// control register. A guard per work item sets it and restores the caller's
// state, exception flags included, on the way out.
//
// On x86-64 all float and double arithmetic is SSE, so MXCSR is the whole
// environment: reading it is cheap and it is written only when it differs
// (fegetenv/fesetenv also save the x87 state and cost 3-4% of a decode when
// run once per 16 KiB block). Elsewhere the portable <cfenv> calls do it.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FZ_FLOAT_STATE_MXCSR 1
#else
#include <cfenv>
#endif

namespace fz {

class FloatStateGuard {
 public:
  FloatStateGuard() {
#ifdef FZ_FLOAT_STATE_MXCSR
    saved_ = _mm_getcsr();
    constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040, kRounding = 0x6000,
                       kExceptionMasks = 0x1F80;
    const unsigned wanted = (saved_ & ~(kFlushToZero | kDenormalsAreZero | kRounding)) | kExceptionMasks;
    if (wanted != saved_) _mm_setcsr(wanted);
#else
    std::fegetenv(&saved_);
    std::fesetenv(FE_DFL_ENV);
#endif
  }
  ~FloatStateGuard() {
#ifdef FZ_FLOAT_STATE_MXCSR
    if (_mm_getcsr() != saved_) _mm_setcsr(saved_);  // also drops flags our work raised
#else
    std::fesetenv(&saved_);
#endif
  }
  FloatStateGuard(const FloatStateGuard&) = delete;
  FloatStateGuard& operator=(const FloatStateGuard&) = delete;

 private:
#ifdef FZ_FLOAT_STATE_MXCSR
  unsigned saved_ = 0;
#else
  std::fenv_t saved_;
#endif
};

}  // namespace fz
