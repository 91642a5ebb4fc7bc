// Linear warmup then cosine decay to 0, as HF transformers' get_cosine_schedule_with_warmup:
//   step < warmup: lr·step/warmup;  else with p = (step − warmup)/(total − warmup),
//   lr·max(0, ½(1 + cos(π·2·cycles·p))). cycles = 0.5 (the default) is one half-cosine to 0.
// Options: total_steps (the run's updates unless set), warmup_steps (0), cycles (0.5).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "train/schedule.h"

namespace relpos {
namespace {

class CosineSchedule : public Schedule {
 public:
  CosineSchedule(const Options& options, const ScheduleRun& run)
      : Schedule(run.base_lr),
        total_(options.get_inherited<int64_t>("total_steps", run.steps)),
        warmup_(options.get<int64_t>("warmup_steps", 0)),
        cycles_(options.get<double>("cycles", 0.5)) {
    RELPOS_CHECK(total_ > 0, options.where(),
                 "total_steps is required where the run's length is not known, got {}", total_);
    RELPOS_CHECK(warmup_ >= 0 && total_ > warmup_, options.where(),
                 "need 0 <= warmup_steps < total_steps, got {} and {}", warmup_, total_);
    RELPOS_CHECK(cycles_ > 0, options.where(), "cycles must be > 0, got {}", cycles_);
  }
  double lr_at(int64_t step) const override {
    if (step < warmup_) return base_lr() * warmup_factor(step, warmup_);
    double p = static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_);
    double c = 0.5 * (1 + std::cos(std::numbers::pi * 2 * cycles_ * p));
    return base_lr() * std::max(0.0, c);
  }

 private:
  int64_t total_, warmup_;
  double cycles_;
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("cosine", CosineSchedule);

}  // namespace relpos
