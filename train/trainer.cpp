// The training loop (train/trainer.h).
#include "train/trainer.h"

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
#include "train/task.h"
#include "train/training_state.h"

namespace relpos {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What one update did, for the log and the decision to validate.
struct Update {
  double loss = 0;  // mean over the update's batches (and the ranks)
  double lr = 0;
  double grad_norm = 0;  // before clipping
  bool epoch_ended = false;
};

// The updates since the last train record of metrics.jsonl.
struct LogWindow {
  double loss = 0, comm_s = 0;  // summed over the window's updates
  int64_t updates = 0, examples = 0;
  Clock::time_point start = Clock::now();
};

// Writes `text` to `path`, checking every step: a full disk stops the run with the path.
void write_text(const fs::path& path, const std::string& text) {
  write_file_atomic("train", path.string(), text);
}

// The metrics.jsonl records up to `step` (a resumed run drops what came after its checkpoint,
// so no event is recorded twice); records without a step are kept.
void truncate_metrics(const fs::path& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const Json record = Json::parse(line, nullptr, false);
    const auto at = record.is_object() ? record.find("step") : record.end();
    const char* damage = !record.is_object()        ? "a line that is not a JSON object"
                         : at == record.end()       ? nullptr
                         : !at->is_number_integer() ? "a record whose step is not a number"
                                                    : nullptr;
    RELPOS_CHECK(damage == nullptr, "train",
                 "'{}' line {}: {}; the log of this run is damaged (move it away to resume)",
                 path.string(), number, damage);
    if (at != record.end() && at->get<int64_t>() > step) continue;
    kept += line + "\n";
  }
  in.close();
  write_text(path, kept);
}

}  // namespace

// The run being trained; the steps of Trainer::run are its methods.
struct Trainer::State {
  RunConfig config;
  TrainerOptions options;
  Device device = Device::cpu();
  bool root = true;  // rank 0: owns the run directory, the log and the checkpoints
  fs::path dir;
  std::shared_ptr<spdlog::logger> log;
  std::ofstream metrics_file;

  std::unique_ptr<Task> task;
  std::string metric;  // selects the best checkpoint
  std::shared_ptr<Optimizer> optimizer;
  std::unique_ptr<GradientReducer> reducer;  // sums gradients over the ranks (data parallel)
  std::shared_ptr<Schedule> schedule;
  int64_t total_steps = 0;

  // With the task's model and state and the optimizer: the training state (training_state.h).
  RunPosition position;
  bool stopped_early = false;
  Clock::time_point started = Clock::now();  // since when wall time is not in `position`

  TrainingState training_state() { return TrainingState(*task, *optimizer, position, config.yaml); }
  void record(const JsonObject& event) {
    if (!root) return;
    metrics_file << event.str() << '\n';
    metrics_file.flush();
    RELPOS_CHECK(metrics_file.good(), "train", "cannot write '{}': {}",
                 (dir / "metrics.jsonl").string(), std::strerror(errno));
  }
  double wall_s() const {
    return position.wall_time_s + std::chrono::duration<double>(Clock::now() - started).count();
  }

  void open_run_dir();
  void build();
  void resume();
  void check_resume(const RunPosition& saved, const std::string& saved_config) const;
  void save(const fs::path& path);

  Update train_step(LogWindow& window);
  bool next_batch();
  double backward_batch(bool last_of_update, LogWindow& window);
  void log_update(const Update& update, LogWindow& window, Progress& progress);
  bool validation_due(const Update& update) const;
  bool validate();
  RunSummary stop_here();
  RunSummary finish();
  Metrics test_best_weights(const Metrics& test_last);
  void write_summary(const RunSummary& r);
};

Trainer::Trainer(RunConfig config, TrainerOptions options) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.config = std::move(config);
  s.options = std::move(options);
  s.device = job_device(s.config.device, "train");
  s.root = comm::rank() == 0;
  s.open_run_dir();
  s.build();
  if (!s.options.resume.empty())
    s.resume();
  else
    s.training_state().start();
  broadcast_module(s.task->model());  // every rank starts from rank 0's parameters
  if (s.root)
    s.metrics_file.open(s.dir / "metrics.jsonl",
                        s.position.step > 0 ? std::ios::app : std::ios::trunc);
  set_detect_anomaly(s.config.debug.detect_anomaly || detect_anomaly());
}

Trainer::~Trainer() = default;

Model& Trainer::model() {
  return s_->task->model();
}

RunSummary Trainer::run() {
  State& s = *s_;
  reset_peak_memory(s.device);
  s.log->info("run '{}': {} parameters, {}, {} updates on {}", s.config.name,
              s.task->model().num_parameters(), s.task->describe(), s.total_steps, s.config.device);
  Progress progress(s.total_steps, s.position.step, s.config.train.log_every,
                    s.options.verbose && s.root);
  LogWindow window;
  bool keep_going = s.position.step < s.total_steps;
  while (keep_going) {
    const Update update = s.train_step(window);
    s.log_update(update, window, progress);
    keep_going = s.position.step < s.total_steps;
    if (keep_going && s.position.step == s.options.stop_at_step) {
      progress.interrupt();
      return s.stop_here();
    }
    if (s.validation_due(update) || !keep_going) {
      progress.interrupt();
      keep_going = s.validate() && keep_going;
    }
  }
  progress.interrupt();
  return s.finish();
}

// The run directory (rank 0) and the logger.
void Trainer::State::open_run_dir() {
  dir = config.train.out;
  if (!root) {
    log = make_rank_logger();
    return;
  }
  std::error_code made;
  fs::create_directories(dir / "checkpoints", made);
  RELPOS_CHECK(!made, "train", "cannot create the run directory '{}': {}", dir.string(),
               made.message());
  // Temporary checkpoints of an interrupted write (checkpoint.h) are never needed again.
  for (const auto& entry : fs::directory_iterator(dir / "checkpoints", made))
    if (entry.path().filename().string().find(".h5.tmp.") != std::string::npos)
      fs::remove(entry.path(), made);
  log = make_run_logger(dir / "log.txt", options.verbose);
  write_text(dir / "config.yaml", config.yaml);
}

// The task (with its model and data), the optimizer, the gradient reducer and the schedule.
void Trainer::State::build() {
  const RunConfig& c = config;
  task = make_task(c, device);
  metric = selection_metric(c, *task);
  Model& model = task->model();
  for (const std::string& warning : model.warnings()) log->warn("warning: {}", warning);
  optimizer = make_optimizer(model.parameters(), c.optimizer);
  reducer = std::make_unique<GradientReducer>(model.parameters());
  const int64_t per_epoch = std::max<int64_t>(1, task->batches_per_epoch() / c.train.accumulate);
  total_steps = c.train.steps > 0 ? c.train.steps : c.train.epochs * per_epoch;
  schedule = make_schedule(c.schedule, optimizer->lr(), total_steps);
}

// The training state from options.resume; metrics.jsonl cut back to the checkpoint's step.
void Trainer::State::resume() {
  training_state().load(read_checkpoint(options.resume), options.resume,
                        [this](const RunPosition& saved, const std::string& saved_config) {
                          check_resume(saved, saved_config);
                        });
  if (root) truncate_metrics(dir / "metrics.jsonl", position.step);
}

// A checkpoint of another configuration, or one past this run's end, is refused.
void Trainer::State::check_resume(const RunPosition& saved, const std::string& saved_config) const {
  if (!saved_config.empty() && saved_config != config.yaml) {
    const std::vector<std::string> changes = trajectory_changes(saved_config, config.yaml);
    RELPOS_CHECK(changes.empty() || options.allow_config_change, "train",
                 "'{}' was trained with another configuration ({}); resuming would change the "
                 "run's course: pass --allow-config-change to continue anyway",
                 options.resume, fmt::join(changes, "; "));
    if (!changes.empty())
      log->warn("note: resuming with a changed configuration: {}", fmt::join(changes, "; "));
  }
  RELPOS_CHECK(saved.step <= total_steps, "train", "'{}' is at step {}, past this run's {} steps",
               options.resume, saved.step, total_steps);
}

// Every rank takes part (the task's state and the random streams are gathered from all of
// them); rank 0 writes.
void Trainer::State::save(const fs::path& path) {
  const Clock::time_point now = Clock::now();
  position.wall_time_s += std::chrono::duration<double>(now - started).count();
  started = now;
  const CheckpointData data = training_state().save();
  if (root) write_checkpoint(path.string(), data);
}

// One update: train.accumulate batches forward and backward, the gradients summed over the ranks
// and clipped, the optimizer stepped at the schedule's lr.
Update Trainer::State::train_step(LogWindow& window) {
  const TrainConfig& t = config.train;
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
  const double max_norm =
      t.clip_grad_norm > 0 ? t.clip_grad_norm : std::numeric_limits<double>::infinity();
  update.grad_norm = clip_grad_norm(optimizer->params(), max_norm);
  RELPOS_CHECK(std::isfinite(update.grad_norm), "train",
               "the gradient norm is {} at step {}; rerun with debug.detect_anomaly: true to "
               "name the op",
               update.grad_norm, position.step + 1);
  update.lr = schedule->lr_at(position.step);
  optimizer->set_lr(update.lr);
  optimizer->step();
  optimizer->zero_grad();
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
    Var loss = batch.loss;
    const GlobalLoss global =
        global_loss(loss.defined() ? loss.value().to(Device::cpu()).item() : 0.0, batch.count);
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
  progress.update(step, update.loss, update.lr);
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

// Ends the session at options.stop_at_step as an interruption would: checkpoints/last.h5 only.
RunSummary Trainer::State::stop_here() {
  save(dir / "checkpoints" / "last.h5");
  log->info("stopped at step {} as asked; continue with --resume {}", position.step,
            (dir / "checkpoints" / "last.h5").string());
  RunSummary partial;
  partial.steps = position.step;
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
  if (has_best.data<double>()[0] == 0 || position.best_step == position.step) return test_last;
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
