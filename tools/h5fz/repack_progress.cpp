#include "repack_progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "repack_copy.hpp"

namespace h5fz {

namespace {

void note_signal(int signal_number) { g_interrupt_signal = signal_number; }

}  // namespace

InterruptGuard::InterruptGuard() {
  struct sigaction action {};
  action.sa_handler = note_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
}

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long total = static_cast<long>(seconds + 0.5);
  char text[32];
  if (total >= 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  }
  return text;
}

Progress::Progress(bool enabled, uint64_t total) : enabled_(enabled), total_(std::max<uint64_t>(total, 1)) {}

void Progress::advance(uint64_t bytes, const std::string& what) {
  done_ += bytes;
  if (!enabled_) return;
  const double now = clock_.seconds();
  if (now - last_draw_ < 0.2 && done_ < total_) return;
  last_draw_ = now;
  const double rate = now > 0 ? static_cast<double>(done_) / now : 0;
  const double left = rate > 0 ? static_cast<double>(total_ - std::min(done_, total_)) / rate : -1;
  std::string name = what.size() > 40 ? "..." + what.substr(what.size() - 37) : what;
  std::fprintf(stderr, "\r%3.0f%%  %s / %s  %6.0f MB/s  %s left  %-40s", 100.0 * done_ / total_,
               human_bytes(done_).c_str(), human_bytes(total_).c_str(), rate / 1e6, clock_text(left).c_str(),
               name.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (drawn_) std::fprintf(stderr, "\r%*s\r", 110, "");
  drawn_ = false;
}

}  // namespace h5fz
