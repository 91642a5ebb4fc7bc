// Trainer::State's end of a run (train/trainer_state.h): an interruption at options.stop_at_step,
// or the test with the last and the best weights and summary.json.

#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/allocator.h"
#include "core/comm/comm.h"
#include "core/cpu_threads.h"
#include "core/error.h"
#include "core/file_write.h"
#include "train/checkpoint.h"
#include "train/clip.h"
#include "train/distributed.h"
#include "train/gradient_reducer.h"
#include "train/json.h"
#include "train/optimizer.h"
#include "train/progress.h"
#include "train/run_log.h"
#include "train/schedule.h"
#include "train/stop_signals.h"
#include "train/task.h"
#include "train/trainer_state.h"
#include "train/training_state.h"

namespace relpos {

// Ends the session at options.stop_at_step, or where `signal` (0: none) asked, as an
// interruption would: checkpoints/last.h5 only.
RunSummary Trainer::State::stop_here(int signal) {
  save(dir / "checkpoints" / "last.h5");
  // (The command prints how to continue; the log keeps the record, in other words.)
  log->info("session ended at step {} ({}); saved {}", position.step,
            signal != 0 ? signal_name(signal) : "--stop-at-step",
            (dir / "checkpoints" / "last.h5").string());
  RunSummary partial;
  partial.steps = position.step;
  partial.stop_signal = signal;
  partial.run_dir = dir.string();
  partial.primary = root;
  return partial;
}

// The test with the last and with the best weights, the test records and summary.json.
RunSummary Trainer::State::finish() {
  const RunPosition& p = position;
  RunSummary r;
  r.finished = true;
  r.steps = p.step;
  r.epochs = static_cast<double>(p.step * config.train.accumulate) /
             static_cast<double>(std::max<int64_t>(1, task->batches_per_epoch()));
  r.stopped_early = stopped_early;
  r.best_step = p.best_step;
  r.best_val = p.best_val;
  r.last_val = p.last_val;
  r.metric = metric;
  r.test_last = task->evaluate("test", 0);
  r.test_best = test_best_weights(r.test_last);
  r.wall_time_s = wall_s();
  r.train_time_s = p.train_time_s;
  r.peak_memory_bytes = memory_stats(device).peak_bytes;
  r.parameters = task->model().num_parameters();
  r.run_dir = dir.string();
  r.primary = root;
  record(
      metrics_json(r.test_last).add("event", "test").add("weights", "last").add("step", r.steps));
  record(metrics_json(r.test_best)
             .add("event", "test")
             .add("weights", "best")
             .add("step", r.best_step));
  write_summary(r);
  log->info("done: test {} (last), {} (best, step {}), {:.1f} s, peak {:.1f} MB -> {}",
            describe_metrics(r.test_last), describe_metrics(r.test_best), r.best_step,
            r.wall_time_s, static_cast<double>(r.peak_memory_bytes) / 1e6, r.run_dir);
  return r;
}

// The test metrics of the best weights. Rank 0 reads the best weights it wrote and hands them to
// the others; when the best is the last update, they are the weights just tested.
Metrics Trainer::State::test_best_weights(const Metrics& test_last) {
  Model& model = task->model();
  const fs::path best = dir / "checkpoints" / "best.h5";
  Tensor has_best = full({1}, root && fs::exists(best) ? 1.0 : 0.0, DType::f64);
  comm::broadcast(has_best, 0);
  if (position.best_step == position.step) return test_last;
  RELPOS_CHECK(has_best.data<double>()[0] != 0, "train",
               "'{}' was removed while the run trained: the weights of the best validation (step "
               "{}) cannot be tested (--resume {} chooses the best anew)",
               best.string(), position.best_step, (dir / "checkpoints" / "last.h5").string());
  if (root) restore_module(model, read_checkpoint(best.string()));
  broadcast_module(model);
  return task->evaluate("test", 0);
}

void Trainer::State::write_summary(const RunSummary& r) {
  const RunConfig& c = config;
  const std::string summary = JsonObject()
                                  .add("name", c.name)
                                  .add("device", c.device)
                                  .add("steps", r.steps)
                                  .add("epochs", r.epochs)
                                  .add("stopped_early", r.stopped_early)
                                  .add("best_step", r.best_step)
                                  .add("metric", metric)
                                  .add("val_best", metrics_json(r.best_val))
                                  .add("val_last", metrics_json(r.last_val))
                                  .add("test_last", metrics_json(r.test_last))
                                  .add("test_best", metrics_json(r.test_best))
                                  .add("wall_time_s", r.wall_time_s)
                                  .add("train_time_s", r.train_time_s)
                                  .add("peak_memory_bytes", r.peak_memory_bytes)
                                  .add("parameters", r.parameters)
                                  .str();
  if (root) write_text(dir / "summary.json", summary + "\n");
}

}  // namespace relpos
