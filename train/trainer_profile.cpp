// Trainer::State::run_profile (train/trainer_state.h): `relpos train --profile N`.

#include <chrono>
#include <string>

#include "core/error.h"
#include "train/profile_report.h"
#include "train/trainer_state.h"

namespace relpos {

// Warm-up updates, N updates timed plainly, then N recorded by the profiler; the tables go to
// RunSummary::profile and nothing is written to the run directory after its start.
RunSummary Trainer::State::run_profile() {
  constexpr int64_t kWarmup = 2;
  const int64_t n = options.profile_steps;
  const int64_t left = total_steps - position.step;  // n may be huge: no n * 2 before this
  RELPOS_CHECK(n <= (left - kWarmup) / 2, "train",
               "--profile {} needs {} warm-up updates and twice {} more (timed plainly, then "
               "profiled); this run has {} left from step {} (raise train.steps or "
               "train.epochs)",
               n, kWarmup, n, left, position.step);
  LogWindow window(device, position, root);
  for (int64_t i = 0; i < kWarmup; ++i) train_step(window);
  const auto plain_start = Clock::now();
  for (int64_t i = 0; i < n; ++i) train_step(window);
  ProfileRun run;
  run.plain_update_s =
      std::chrono::duration<double>(Clock::now() - plain_start).count() / static_cast<double>(n);
  run.updates = n;
  run.warmup = kWarmup;
  run.device = device;
  const std::string tables = profile_updates(task->model(), run, [&] { train_step(window); });
  check_window(window);  // a profile of a diverged run is no profile
  RunSummary r;
  r.steps = position.step;
  r.parameters = task->model().num_parameters();
  r.run_dir = dir.string();
  r.primary = root;
  r.profile = tables;
  return r;
}

}  // namespace relpos
