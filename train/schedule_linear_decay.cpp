// Linear warmup then linear decay to 0 at total_steps, as HF transformers'
// get_linear_schedule_with_warmup:
//   step < warmup: lr·step/warmup;  else lr·max(0, (total − step) / (total − warmup)).
// Options: total_steps (the run's updates unless set), warmup_steps (0).
#include <algorithm>

#include "train/schedule.h"

namespace relpos {
namespace {

class LinearDecaySchedule : public Schedule {
 public:
  LinearDecaySchedule(const Options& options, const ScheduleRun& run)
      : Schedule(run.base_lr), span_(read_warmup_decay(options, run)) {}
  double lr_at(int64_t step) const override {
    if (step < span_.warmup) return base_lr() * warmup_factor(step, span_.warmup);
    double left =
        static_cast<double>(span_.total - step) / static_cast<double>(span_.total - span_.warmup);
    return base_lr() * std::max(0.0, left);
  }

 private:
  WarmupDecay span_;
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("linear_decay", LinearDecaySchedule);

}  // namespace relpos
