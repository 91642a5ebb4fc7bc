// Schedule: the learning rate at each optimizer step, as a product of factors times the base lr
// (the optimizer's lr), in the spirit of the LRA/tensor2tensor "constant * linear_warmup * ..."
// strings. Each variant (constant, linear_decay, cosine, lra) registers itself by its `type`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/options.h"
#include "layers/registry.h"

namespace relpos {

class Schedule {
 public:
  explicit Schedule(double base_lr) : base_lr_(base_lr) {}
  virtual ~Schedule() = default;
  // The lr to use for the update at `step` (0-based, the number of updates done before it).
  virtual double lr_at(int64_t step) const = 0;
  double base_lr() const { return base_lr_; }

 private:
  double base_lr_;
};

// What a schedule is built around: the optimizer's lr and the run's length in updates (0: not
// known), which schedules that decay over the run take as their total_steps unless set.
// `starts_run`: the schedule is built to train (the trainer), not only to check a configuration
// as it is read (at load; eval reads a checkpoint's too): the checks of the run's course (a
// total_steps below the run's updates, an lr of 0 throughout) are the trainer's.
struct ScheduleRun {
  double base_lr = 0;
  int64_t steps = 0;
  bool starts_run = true;
};

using ScheduleRegistry = Registry<Schedule, const Options&, const ScheduleRun&>;
ScheduleRegistry& schedule_registry();

// Builds the schedule named by options' `type` ({type: constant} when empty) around `base_lr`,
// then refuses unread options.
std::shared_ptr<Schedule> make_schedule(const Options& options, double base_lr,
                                        int64_t run_steps = 0, bool starts_run = true);

// The span of a schedule that warms up and then decays to 0: options' total_steps (the run's
// updates unless set) and warmup_steps (0). Refuses a total that is not known or not positive, one
// set below the run's updates when it starts (the schedule would end before the run), and a
// warmup that is negative or not below the total, naming the keys.
struct WarmupDecay {
  int64_t total = 0;
  int64_t warmup = 0;
};
WarmupDecay read_warmup_decay(const Options& options, const ScheduleRun& run);

// min(1, step / warmup), 1 when warmup is 0: the shared linear warmup factor.
double warmup_factor(int64_t step, int64_t warmup);

}  // namespace relpos

// In a variant's .cpp: RELPOS_REGISTER_SCHEDULE("name", Class);
// Class(const Options&, const ScheduleRun&).
#define RELPOS_REGISTER_SCHEDULE(name, Type)                                                       \
  static const bool RELPOS_REGISTRY_CONCAT(relpos_schedule_registered_, __LINE__) =                \
      ::relpos::schedule_registry().add(name, [](const ::relpos::Options& options,                 \
                                                 const ::relpos::ScheduleRun& run) {               \
        return std::static_pointer_cast<::relpos::Schedule>(std::make_shared<Type>(options, run)); \
      })
