// Schedule registry, make_schedule and the shared warmup factor.
#include "train/schedule.h"

#include <algorithm>

#include "core/error.h"

namespace relpos {

ScheduleRegistry& schedule_registry() {
  static ScheduleRegistry registry("schedule");
  return registry;
}

std::shared_ptr<Schedule> make_schedule(const Options& options, double base_lr, int64_t run_steps,
                                        bool starts_run) {
  auto type = options.get<std::string>("type", "constant");
  auto schedule =
      schedule_registry().make(type, options, ScheduleRun{base_lr, run_steps, starts_run});
  options.check_all_used();
  return schedule;
}

WarmupDecay read_warmup_decay(const Options& options, const ScheduleRun& run) {
  const bool own_total = options.has("total_steps");
  WarmupDecay span{options.get_inherited<int64_t>("total_steps", run.steps),
                   options.get<int64_t>("warmup_steps", 0)};
  RELPOS_CHECK(own_total || span.total > 0, options.where(),
               "total_steps is required where the run's length is not known");
  RELPOS_CHECK(span.total > 0, options.where(), "total_steps must be > 0, got {}", span.total);
  RELPOS_CHECK(span.warmup >= 0, options.where(), "warmup_steps must be >= 0, got {}", span.warmup);
  RELPOS_CHECK(span.warmup < span.total, options.where(),
               "warmup_steps ({}) must be below total_steps ({}{}): the decay would never start",
               span.warmup, span.total,
               own_total ? "" : ", the run's updates: train.steps or train.epochs");
  // Past its total a decay holds lr 0 (linear_decay) or climbs again (cosine).
  RELPOS_CHECK(!own_total || !run.starts_run || span.total >= run.steps, options.where(),
               "total_steps ({}) is below the run's {} updates: the schedule would end before the "
               "run; leave total_steps out to span the run",
               span.total, run.steps);
  return span;
}

double warmup_factor(int64_t step, int64_t warmup) {
  RELPOS_CHECK(step >= 0, "schedule", "step must be >= 0, got {}", step);
  if (warmup <= 0) return 1.0;
  return std::min(1.0, static_cast<double>(step) / static_cast<double>(warmup));
}

}  // namespace relpos
