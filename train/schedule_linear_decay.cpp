// Linear warmup then linear decay to 0 at total_steps, as HF transformers'
// get_linear_schedule_with_warmup:
//   step < warmup: lr·step/warmup;  else lr·max(0, (total − step) / (total − warmup)).
// Options: total_steps (the run's updates unless set), warmup_steps (0).
#include <algorithm>

#include "core/error.h"
#include "train/schedule.h"

namespace relpos {
namespace {

class LinearDecaySchedule : public Schedule {
 public:
  LinearDecaySchedule(const Options& options, const ScheduleRun& run)
      : Schedule(run.base_lr),
        total_(options.get_inherited<int64_t>("total_steps", run.steps)),
        warmup_(options.get<int64_t>("warmup_steps", 0)) {
    RELPOS_CHECK(total_ > 0, options.where(),
                 "total_steps is required where the run's length is not known, got {}", total_);
    RELPOS_CHECK(warmup_ >= 0 && total_ > warmup_, options.where(),
                 "need 0 <= warmup_steps < total_steps, got {} and {}", warmup_, total_);
  }
  double lr_at(int64_t step) const override {
    if (step < warmup_) return base_lr() * warmup_factor(step, warmup_);
    double left = static_cast<double>(total_ - step) / static_cast<double>(total_ - warmup_);
    return base_lr() * std::max(0.0, left);
  }

 private:
  int64_t total_, warmup_;
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("linear_decay", LinearDecaySchedule);

}  // namespace relpos
