// Trainer::State's steps of one update (train/trainer_state.h): the batches forward and backward,
// the update, its log record, and validation with the checkpoints and patience.

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
#include "autograd/profiler.h"
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
#include "train/task.h"
#include "train/trainer_state.h"
#include "train/training_state.h"

namespace relpos {

// One update: train.accumulate batches forward and backward, the gradients summed over the ranks
// and clipped, the optimizer stepped at the schedule's lr.
Update Trainer::State::train_step(LogWindow& window) {
  const TrainConfig& t = config.train;
  profile::mark("between updates");
  fit_threads_to_free_cores();  // fewer threads while other processes hold cores
  const auto step_start = Clock::now();
  Update update;
  double loss_sum = 0;
  for (int64_t a = 0; a < t.accumulate; ++a) {
    const bool last_of_epoch = next_batch();
    update.epoch_ended = update.epoch_ended || last_of_epoch;
    loss_sum += backward_batch(a + 1 == t.accumulate, window);
  }
  reducer->finish();  // every rank now holds the gradients of the global batch
  window.comm_s += reducer->exposed_seconds();
  profile::mark("gradient all-reduce");
  const double max_norm =
      t.clip_grad_norm > 0 ? t.clip_grad_norm : std::numeric_limits<double>::infinity();
  update.grad_norm = clip_grad_norm(optimizer->params(), max_norm);
  profile::mark("gradient norm and clipping");
  RELPOS_CHECK(std::isfinite(update.grad_norm), "train",
               "the gradient norm is {} at step {}; rerun with debug.detect_anomaly: true to "
               "name the op",
               update.grad_norm, position.step + 1);
  update.lr = schedule->lr_at(position.step);
  optimizer->set_lr(update.lr);
  optimizer->step();
  optimizer->zero_grad();
  profile::mark("optimizer");
  ++position.step;
  position.train_time_s += std::chrono::duration<double>(Clock::now() - step_start).count();
  update.loss = loss_sum / static_cast<double>(t.accumulate);
  return update;
}

// Moves the position to the next training batch (into the next epoch after the last); whether it
// is its epoch's last.
bool Trainer::State::next_batch() {
  RunPosition& p = position;
  if (p.batch_in_epoch == task->batches_per_epoch()) {
    ++p.epoch;
    p.batch_in_epoch = 0;
    task->seek(p.epoch, 0);
  }
  ++p.batch_in_epoch;
  return p.batch_in_epoch == task->batches_per_epoch();
}

// The next batch's loss (mean over the global batch) and its gradients, scaled for the ranks'
// shares and the accumulation.
double Trainer::State::backward_batch(bool last_of_update, LogWindow& window) {
  const int64_t accumulate = config.train.accumulate;
  try {
    // The last backward before an update reports each finished gradient, and its sum over
    // the ranks starts while backward goes on (data parallel; nothing in a job of one).
    const auto armed = last_of_update ? reducer->arm() : nullptr;
    const TrainLoss batch = task->next_loss();
    profile::mark("between forward ops");
    Var loss = batch.loss;
    const GlobalLoss global =
        global_loss(loss.defined() ? loss.value().to(Device::cpu()).item() : 0.0, batch.count);
    profile::mark("loss read back");
    const double value = global.mean;
    window.examples += global.count;
    if (!std::isfinite(value))
      fail<StepError>("train",
                      "the loss is {} at step {}; rerun with debug.detect_anomaly: true (or "
                      "RELPOS_DETECT_ANOMALY=1) to name the op that produced it",
                      value, position.step + 1);
    if (loss.defined()) {
      if (global.share != 1) loss = loss * global.share;
      if (accumulate > 1) loss = loss * (1.0 / static_cast<double>(accumulate));
      loss.backward();
      profile::mark("backward engine");
    }
    return value;
  } catch (const StepError&) {
    throw;
  } catch (const Error& e) {
    fail<StepError>("train", "step {} (epoch {}): {}", position.step + 1, position.epoch, e.what());
  }
}

// The progress bar, and every train.log_every updates (and at the end) a train record.
void Trainer::State::log_update(const Update& update, LogWindow& window, Progress& progress) {
  const int64_t step = position.step;
  window.loss += update.loss;
  ++window.updates;
  // The console shows what the train record will hold: the mean loss since the last record.
  progress.update(step, window.loss / static_cast<double>(window.updates), update.lr);
  if (step % config.train.log_every != 0 && step != total_steps) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - window.start).count();
  const auto updates = static_cast<double>(window.updates);
  JsonObject event;
  event.add("event", "train")
      .add("step", step)
      .add("epoch", position.epoch)
      .add("loss", window.loss / updates)
      .add("lr", update.lr)
      .add("grad_norm", update.grad_norm)
      .add(task->unit() + "_per_s", static_cast<double>(window.examples) / seconds)
      .add("step_s", seconds / updates);
  // Data parallel: the seconds per update rank 0 waited for the gradient all-reduce after
  // backward ended (the part communication did not overlap).
  if (comm::distributed()) event.add("comm_s", window.comm_s / updates);
  record(event.add("elapsed_s", wall_s()));
  window = LogWindow();
}

// Every train.eval_every updates, or at each epoch's end when it is 0.
bool Trainer::State::validation_due(const Update& update) const {
  const int64_t every = config.train.eval_every;
  return every > 0 ? position.step % every == 0 : update.epoch_ended;
}

// Validation, checkpoints, patience; returns false when the run should stop.
bool Trainer::State::validate() {
  RunPosition& p = position;
  Metrics e;
  try {
    e = task->evaluate("val", config.eval.max_batches);
  } catch (const Error& error) {
    throw Error(fmt::format("[train] validation at step {}: {}", p.step, error.what()));
  }
  RELPOS_CHECK(std::isfinite(e.get("loss")), "train",
               "validation at step {}: the val loss is {}; the model diverged (rerun with "
               "debug.detect_anomaly: true to name the op)",
               p.step, e.get("loss"));
  p.last_val = e;
  const double value = e.get(metric);
  const bool improved = std::isnan(p.best_metric) || metric_improves(metric, value, p.best_metric);
  if (improved) {
    p.best_metric = value;
    p.best_step = p.step;
    p.best_val = e;
    p.evals_without_improvement = 0;
  } else {
    ++p.evals_without_improvement;
  }
  record(metrics_json(e)
             .add("event", "eval")
             .add("split", "val")
             .add("step", p.step)
             .add("best", improved));
  log->info("step {}: val {}{}", p.step, describe_metrics(e), improved ? " (best)" : "");
  if (improved) save(dir / "checkpoints" / "best.h5");
  save(dir / "checkpoints" / "last.h5");
  const int64_t patience = config.train.patience;
  const bool stop = patience > 0 && p.evals_without_improvement >= patience;
  if (stop) {
    stopped_early = true;
    log->info("early stop: {} validations without a better {}", p.evals_without_improvement,
              metric);
  }
  return !stop;
}

}  // namespace relpos
