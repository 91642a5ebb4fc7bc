// Training progress on stderr: on a terminal, one line redrawn in place with the step, the
// latest record's mean loss, rate and ETA; otherwise (a log file, CI) a plain line every
// `every` updates.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

namespace relpos {

class Progress {
 public:
  // total: updates in the run; start: updates already done (resume); every: plain-line period.
  Progress(int64_t total, int64_t start, int64_t every, bool enabled);
  // After update `step` (1-based count of updates done).
  void update(int64_t step, double lr);
  // The loss of the latest train record of metrics.jsonl (the mean over its updates), shown from
  // then on; the loss is read from the device only at those records.
  void set_loss(double loss) { loss_ = loss; }
  // Ends the in-place line before something else is printed.
  void interrupt();

 private:
  std::string line(int64_t step, double lr) const;

  int64_t total_, start_, every_;
  bool enabled_, tty_;
  bool drawn_ = false;
  double loss_ = std::numeric_limits<double>::quiet_NaN();  // none recorded yet
  std::chrono::steady_clock::time_point began_, last_draw_;
};

}  // namespace relpos
