// Progress line (train/progress.h).
#include "train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace relpos {
namespace {

std::string duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  if (s >= 3600) return fmt::format("{}h{:02d}m", s / 3600, (s / 60) % 60);
  return fmt::format("{}m{:02d}s", s / 60, s % 60);
}

}  // namespace

Progress::Progress(int64_t total, int64_t start, int64_t every, bool enabled)
    : total_(total),
      start_(start),
      every_(every),
      enabled_(enabled),
      tty_(isatty(fileno(stderr)) != 0),
      began_(std::chrono::steady_clock::now()),
      last_draw_(began_) {}

std::string Progress::line(int64_t step, double lr) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  const double rate = elapsed > 0 ? static_cast<double>(step - start_) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - step) / rate : 0.0;
  const std::string loss = std::isnan(loss_) ? "-" : fmt::format("{:.4f}", loss_);
  return fmt::format("step {}/{} ({:.0f}%)  mean loss {}  lr {:.3g}  {:.2f} it/s  ETA {}", step,
                     total_, 100.0 * static_cast<double>(step) / static_cast<double>(total_), loss,
                     lr, rate, duration(eta));
}

void Progress::update(int64_t step, double lr) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    // Redraw at most 10 times a second, and always at the end.
    if (step != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r\033[K%s", line(step, lr).c_str());
    drawn_ = true;
    if (step == total_) interrupt();
  } else if (step % every_ == 0 || step == total_) {
    std::fprintf(stderr, "%s\n", line(step, lr).c_str());
  }
  std::fflush(stderr);
}

void Progress::interrupt() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

}  // namespace relpos
