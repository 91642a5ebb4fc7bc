// Trainer::State::run_profile (train/trainer_state.h): `relpos train --profile N`.

#include <chrono>
#include <map>
#include <string>

#include "autograd/profiler.h"
#include "core/error.h"
#include "train/profile_report.h"
#include "train/trainer_state.h"

namespace relpos {

// Warm-up updates, N updates timed plainly, then N recorded by the profiler; the tables go to
// RunSummary::profile and nothing is written to the run directory after its start.
RunSummary Trainer::State::run_profile() {
  constexpr int64_t kWarmup = 2;
  const int64_t n = options.profile_steps;
  RELPOS_CHECK(position.step + kWarmup + 2 * n <= total_steps, "train",
               "--profile {} runs {} updates ({} warm-up, {} timed plainly, {} profiled) from "
               "step {}; this run has {} (raise train.steps or train.epochs)",
               n, kWarmup + 2 * n, kWarmup, n, n, position.step, total_steps);
  LogWindow window;
  for (int64_t i = 0; i < kWarmup; ++i) train_step(window);
  const auto plain_start = Clock::now();
  for (int64_t i = 0; i < n; ++i) train_step(window);
  ProfileRun run;
  run.plain_update_s =
      std::chrono::duration<double>(Clock::now() - plain_start).count() / static_cast<double>(n);
  run.updates = n;
  run.warmup = kWarmup;
  run.device = device;
  std::map<const void*, std::string> modules;
  for (const auto& [path, module] : task->model().named_modules()) {
    const std::string name = path.empty() ? "(model)" : path;
    modules[module] = name;
    run.module_order.push_back(name);
  }
  profile::start(device, modules);
  try {
    for (int64_t i = 0; i < n; ++i) train_step(window);
  } catch (...) {
    profile::stop();
    throw;
  }
  profile::mark("between updates");
  const profile::Recording recording = profile::stop();
  RunSummary r;
  r.steps = position.step;
  r.parameters = task->model().num_parameters();
  r.run_dir = dir.string();
  r.primary = root;
  r.profile = profile_report(recording, run);
  return r;
}

}  // namespace relpos
