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
#include "core/deferred_checks.h"
#include "core/error.h"
#include "core/file_write.h"
#include "core/transfers.h"
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
// and clipped, the optimizer stepped at the schedule's lr. Nothing is read back from the device:
// the loss and the gradient norm join the window on the device (check_window reads them).
Update Trainer::State::train_step(LogWindow& window) {
  const TrainConfig& t = config.train;
  profile::mark("between updates");
  fit_threads_to_free_cores();  // fewer threads while other processes hold cores
  const auto step_start = Clock::now();
  const int64_t reads_before = host_reads() + device_to_host_copies();
  const DeferDeviceChecks deferred;  // the CUDA id checks run with the window's read
  Update update;
  for (int64_t a = 0; a < t.accumulate; ++a) {
    const bool last_of_epoch = next_batch();
    update.epoch_ended = update.epoch_ended || last_of_epoch;
    backward_batch(a + 1 == t.accumulate, window);
  }
  reducer->finish();  // every rank now holds the gradients of the global batch
  window.comm_s += reducer->exposed_seconds();
  profile::mark("gradient all-reduce");
  const double max_norm =
      t.clip_grad_norm > 0 ? t.clip_grad_norm : std::numeric_limits<double>::infinity();
  window.on_device.set_grad_norm(clip_grad_norm(optimizer->params(), max_norm), position.step + 1);
  profile::mark("gradient norm and clipping");
  update.lr = schedule->lr_at(position.step);
  optimizer->set_lr(update.lr);
  optimizer->step();
  optimizer->zero_grad();
  profile::mark("optimizer");
  ++position.step;
  ++window.updates;
  window.host_reads += host_reads() + device_to_host_copies() - reads_before;
  position.train_time_s += std::chrono::duration<double>(Clock::now() - step_start).count();
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

// The next batch's gradients, scaled for the ranks' shares and the accumulation; its loss (mean
// over the global batch) joins the window on the device.
void Trainer::State::backward_batch(bool last_of_update, LogWindow& window) {
  const auto accumulate = static_cast<double>(config.train.accumulate);
  try {
    // The last backward before an update reports each finished gradient, and its sum over
    // the ranks starts while backward goes on (data parallel; nothing in a job of one).
    const auto armed = last_of_update ? reducer->arm() : nullptr;
    const TrainLoss batch = task->next_loss();
    profile::mark("between forward ops");
    const BatchShare global = global_share(batch.count);
    window.examples += global.count;
    if (!batch.loss.defined()) return;
    // The update's loss: the mean over its batches of each global batch's mean.
    window.on_device.add_loss(batch.loss.value(), global.share / accumulate, position.step + 1);
    Var loss = batch.loss;
    if (global.share != 1) loss = loss * global.share;
    if (accumulate > 1) loss = loss * (1.0 / accumulate);
    loss.backward();
    profile::mark("backward engine");
  } catch (const StepError&) {
    throw;
  } catch (const Error& e) {
    fail<StepError>("train", "step {} (epoch {}): {}", position.step + 1, position.epoch, e.what());
  }
}

// The window as the host sees it, stopping the run at the updates' first failed device check
// (an id out of range on a GPU), or at their first non-finite loss or gradient norm (named by
// its step, as if each step had been checked).
DeviceWindow::Reading Trainer::State::check_window(const LogWindow& window) const {
  try {
    run_deferred_device_checks();
  } catch (const Error& e) {
    fail<StepError>("train", "an update up to step {}: {}", position.step, e.what());
  }
  const DeviceWindow::Reading r = window.on_device.read();
  profile::mark("loss and finiteness read back");
  if (r.bad_loss_step > 0 && (r.bad_norm_step == 0 || r.bad_loss_step <= r.bad_norm_step))
    fail<StepError>("train",
                    "the loss is {} at step {}; rerun with debug.detect_anomaly: true (or "
                    "RELPOS_DETECT_ANOMALY=1) to name the op that produced it",
                    r.bad_loss, r.bad_loss_step);
  RELPOS_CHECK(r.bad_norm_step == 0, "train",
               "the gradient norm is {} at step {}; rerun with debug.detect_anomaly: true to "
               "name the op",
               r.bad_norm, r.bad_norm_step);
  return r;
}

// The progress bar, and every train.log_every updates (and at the end) a train record; the
// window is read there, or where `read_due` (something is about to be validated or saved).
void Trainer::State::log_update(const Update& update, LogWindow& window, Progress& progress,
                                bool read_due) {
  const int64_t step = position.step;
  const bool record_due = step % config.train.log_every == 0 || step == total_steps;
  if (record_due || read_due) {
    const DeviceWindow::Reading r = check_window(window);
    // Saved with a checkpoint that follows this read, for a resumed run's next record.
    position.record_updates = record_due ? 0 : window.carried_updates + window.updates;
    position.record_loss_sum = record_due ? 0 : r.loss_sum;
    if (record_due) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window.start).count();
      const auto updates = static_cast<double>(window.updates);
      const double loss = r.loss_sum / static_cast<double>(window.carried_updates + window.updates);
      JsonObject event;
      event.add("event", "train")
          .add("step", step)
          .add("epoch", position.epoch)
          .add("loss", loss)
          .add("lr", update.lr)
          .add("grad_norm", r.grad_norm)
          .add(task->unit() + "_per_s", static_cast<double>(window.examples) / seconds)
          .add("step_s", seconds / updates)
          .add("host_reads", window.host_reads);
      // Data parallel: the seconds per update rank 0 waited for the gradient all-reduce after
      // backward ended (the part communication did not overlap).
      if (comm::distributed()) event.add("comm_s", window.comm_s / updates);
      record(event.add("elapsed_s", wall_s()));
      progress.set_loss(loss);
      window.restart();
    }
  }
  progress.update(step, update.lr);
}

// Every train.save_every updates.
bool Trainer::State::step_checkpoint_due() const {
  const int64_t every = config.train.save_every;
  return every > 0 && position.step % every == 0;
}

// Every train.eval_every updates, or at each epoch's end when it is 0.
bool Trainer::State::validation_due(const Update& update) const {
  const int64_t every = config.train.eval_every;
  return every > 0 ? position.step % every == 0 : update.epoch_ended;
}

// train.patience validations in a row without a better one.
bool Trainer::State::patience_spent() const {
  const int64_t patience = config.train.patience;
  return patience > 0 && position.evals_without_improvement >= patience;
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
  const bool stop = patience_spent();
  if (stop) {
    stopped_early = true;
    log->info("early stop: {} validations without a better {}", p.evals_without_improvement,
              metric);
  }
  return !stop;
}

}  // namespace relpos
