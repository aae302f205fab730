// The parts of `h5fz repack` that talk to the user while it runs: the
// progress line and the interruption guard (Ctrl-C, a kill or a closed
// terminal stop the run between chunks).
#pragma once

#include <signal.h>

#include <cstdint>
#include <string>

#include "cli.hpp"

namespace h5fz {

// Ctrl-C, a kill or a closed terminal set g_interrupt_signal (checked between
// chunks, so the partial output is removed); a second signal ends the
// process at once.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction previous_[3];
};

// "1:02:03" or "2:03"; "?" when unknown.
std::string clock_text(double seconds);

// One line on stderr, redrawn at most 5 times a second: bytes done of the
// total, the rate, the time left and the dataset at work.
class Progress {
 public:
  Progress(bool enabled, uint64_t total);
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void advance(uint64_t bytes, const std::string& what);
  void finish();

 private:
  bool enabled_;
  uint64_t total_, done_ = 0;
  Stopwatch clock_;
  double last_draw_ = -1;
  bool drawn_ = false;
};

}  // namespace h5fz
