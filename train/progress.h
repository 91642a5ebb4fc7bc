// Training progress on stderr: on a terminal, one line redrawn in place with the step, loss,
// rate and ETA; otherwise (a log file, CI) a plain line every `every` updates.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace relpos {

class Progress {
 public:
  // total: updates in the run; start: updates already done (resume); every: plain-line period.
  Progress(int64_t total, int64_t start, int64_t every, bool enabled);
  // After update `step` (1-based count of updates done); loss: the mean since the last train
  // record of metrics.jsonl, the value that record will hold at a log step.
  void update(int64_t step, double loss, double lr);
  // Ends the in-place line before something else is printed.
  void interrupt();

 private:
  std::string line(int64_t step, double loss, double lr) const;

  int64_t total_, start_, every_;
  bool enabled_, tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point began_, last_draw_;
};

}  // namespace relpos
