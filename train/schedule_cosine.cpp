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
        span_(read_warmup_decay(options, run)),
        cycles_(options.get<double>("cycles", 0.5)) {
    RELPOS_CHECK(cycles_ > 0, options.where(), "cycles must be > 0, got {}", cycles_);
  }
  double lr_at(int64_t step) const override {
    if (step < span_.warmup) return base_lr() * warmup_factor(step, span_.warmup);
    double p =
        static_cast<double>(step - span_.warmup) / static_cast<double>(span_.total - span_.warmup);
    double c = 0.5 * (1 + std::cos(std::numbers::pi * 2 * cycles_ * p));
    return base_lr() * std::max(0.0, c);
  }

 private:
  WarmupDecay span_;
  double cycles_;
};

}  // namespace

RELPOS_REGISTER_SCHEDULE("cosine", CosineSchedule);

}  // namespace relpos
