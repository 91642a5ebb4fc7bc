// Schedule registry, make_schedule and the shared warmup factor.
#include "train/schedule.h"

#include <algorithm>

#include "core/error.h"

namespace relpos {

ScheduleRegistry& schedule_registry() {
  static ScheduleRegistry registry("schedule");
  return registry;
}

std::shared_ptr<Schedule> make_schedule(const Options& options, double base_lr, int64_t run_steps) {
  auto type = options.get<std::string>("type", "constant");
  auto schedule = schedule_registry().make(type, options, ScheduleRun{base_lr, run_steps});
  options.check_all_used();
  return schedule;
}

double warmup_factor(int64_t step, int64_t warmup) {
  RELPOS_CHECK(step >= 0, "schedule", "step must be >= 0, got {}", step);
  if (warmup <= 0) return 1.0;
  return std::min(1.0, static_cast<double>(step) / static_cast<double>(warmup));
}

}  // namespace relpos
